rule prepare_dataset:
    output:
        directory(DATASET_DIR),
    params:
        config=CONFIG,
        slice=slice_hash("dataset", "languages"),
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/prepare_dataset.log",
    shell:
        "backretrieval prepare --config {params.config} > {log} 2>&1"


rule prepare_corpus:
    output:
        directory("data/prepared/{corpus}"),
    params:
        config=CONFIG,
        slice=slice_hash("corpora"),
    wildcard_constraints:
        corpus="|".join(config.get("corpora") or {}) or "(?!x)x",
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/prepare_corpus/{{corpus}}.log",
    shell:
        "backretrieval prepare --config {params.config} --corpus {wildcards.corpus} > {log} 2>&1"
