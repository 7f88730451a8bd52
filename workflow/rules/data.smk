rule prepare_dataset:
    input:
        unpack(lambda wc: {"source": byo_folder(config["dataset"])} if byo_folder(config["dataset"]) else {}),
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
        rerun_trigger=rerun_on(config["dataset"]),
        languages=config["languages"],
        content=byo_content(config["dataset"]),
        spec=lambda wc, input: dataset_spec(config["dataset"], config["dataset"]["name"]),
        source=source_flag,
    shell:
        "backretrieval prepare --spec {params.spec:q} --languages {params.languages:q} {params.source:q}"
        " --out-dir {output:q} > {log:q} 2>&1"


rule prepare_corpus:
    input:
        unpack(
            lambda wc: (
                {"source": byo_folder(corpus_section(wc.corpus))} if byo_folder(corpus_section(wc.corpus)) else {}
            )
        ),
    output:
        directory("data/prepared/{corpus}"),
    log:
        f"{LOGS}/prepare_corpus/{{corpus}}.log",
    benchmark:
        f"{LOGS}/benchmarks/prepare_corpus/{{corpus}}.tsv"
    wildcard_constraints:
        corpus="|".join(config.get("corpora") or {}) or "(?!x)x",
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    params:
        rerun_trigger=lambda wc: rerun_on(corpus_section(wc.corpus)),
        languages=lambda wc: corpus_languages(wc.corpus),
        content=lambda wc: byo_content(corpus_section(wc.corpus)),
        spec=lambda wc, input: dataset_spec(corpus_section(wc.corpus), wc.corpus),
        source=source_flag,
    shell:
        "backretrieval prepare --spec {params.spec:q} --languages {params.languages:q} {params.source:q}"
        " --out-dir {output:q} > {log:q} 2>&1"


# The relations between the config and its data (item counts per direction, images or features
# for every item, case/human-study sizes): checked once the dataset exists, before any model
# runs. Consumers take the record as ancient(): a re-check (e.g. after a changed sample_size)
# does not by itself rerun the embeddings.
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
        requirements=as_json(fit_requirements(config)),
    shell:
        "backretrieval check-dataset --dataset {input:q} --requirements {params.requirements:q} --out {output:q}"
        " > {log:q} 2>&1"
