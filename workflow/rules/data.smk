# The dataset and the configured text-only corpora, prepared by one command (`prepare`).
# Reads: dataset, languages (corpora.<name> for a corpus); the content of the local data it is
# made from (a bring-your-own folder, a mirror: plan.source_content).
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
        rerun_trigger=rerun_on(config["dataset"]),
        languages=config["languages"],
        content=plan.source_content(config["dataset"]),
        spec=lambda wc, input: plan.dataset_spec(config["dataset"], config["dataset"]["name"]),
        source=source_flag,
    shell:
        "backretrieval step prepare --spec {params.spec:q} --languages {params.languages:q} {params.source:q}"
        " --out-dir {output:q} > {log:q} 2>&1"


# a corpus's own `languages` (a word-vector family may train on more languages than the run's)
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
        # the section with its languages resolved: two configurations that share a corpus (one
        # naming the default languages, one not) record the same params, so neither reruns it
        rerun_trigger=lambda wc: rerun_on({**config["corpora"][wc.corpus], "languages": corpus_languages(wc)}),
        languages=corpus_languages,
        content=lambda wc: plan.source_content(config["corpora"][wc.corpus]),
        spec=lambda wc, input: plan.dataset_spec(config["corpora"][wc.corpus], wc.corpus),


# The relations between the config and its data, checked once the dataset is prepared. No job
# reads the record (a re-check, e.g. of a changed sample_size, reruns nothing after it); the
# default target does, and its priority starts it first of the jobs that become ready with it
# (a model job that claims every core waits for it). On a dataset prepared already, the
# workflow makes the same check when it starts (common.smk), before any job.
# Reads (steps.settings.fit_requirements): languages, directions, sample_size, image_backbone,
# backbones.<it>, the case study's languages, splits and N, the human study's languages and sizes.
rule check_dataset:
    input:
        DATASET,
    output:
        CHECK,
    log:
        f"{LOGS}/check_dataset.log",
    benchmark:
        f"{LOGS}/benchmarks/check_dataset.tsv"
    priority: 100
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    params:
        code=CODE["prepare"],
        requirements=as_json(fit_requirements(config)),
    shell:
        "backretrieval step check-dataset --dataset {input:q} --requirements {params.requirements:q} --out {output:q}"
        " > {log:q} 2>&1"
