# The dataset and the configured text-only corpora, prepared by one command (`prepare`).
rule prepare_dataset:
    input:
        unpack(plan.dataset_source),
    output:
        directory(DATASET),
    log:
        f"{LOGS}/prepare_dataset.log",
    benchmark:
        f"{LOGS}/benchmarks/prepare_dataset.tsv"
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    params:
        code=CODE["prepare"],
        **plan.dataset_params(),
    shell:
        "backretrieval prepare --spec {params.spec:q} --languages {params.languages:q} {params.source:q}"
        " --out-dir {output:q} > {log:q} 2>&1"


use rule prepare_dataset as prepare_corpus with:
    input:
        unpack(plan.corpus_source),
    output:
        directory("data/prepared/{corpus}"),
    log:
        f"{LOGS}/prepare_corpus/{{corpus}}.log",
    benchmark:
        f"{LOGS}/benchmarks/prepare_corpus/{{corpus}}.tsv"
    wildcard_constraints:
        corpus="|".join(config.get("corpora") or {}) or "(?!x)x",
    params:
        **plan.corpus_params(),


# The relations between the config and its data, checked once the dataset exists, before any
# model runs (the consumers take the record as ancient(): common.smk's dataset_inputs).
rule check_dataset:
    input:
        DATASET,
    output:
        CHECK,
    log:
        f"{LOGS}/check_dataset.log",
    benchmark:
        f"{LOGS}/benchmarks/check_dataset.tsv"
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    params:
        code=CODE["prepare"],
        requirements=plan.requirements,
    shell:
        "backretrieval check-dataset --dataset {input:q} --requirements {params.requirements:q} --out {output:q}"
        " > {log:q} 2>&1"
