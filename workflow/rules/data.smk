rule prepare_dataset:
    output:
        directory(DATASET_DIR),
    params:
        config=CONFIG,
        slice=slice_hash("dataset", "languages"),
    log:
        f"{LOGS}/prepare_dataset.log",
    shell:
        "backretrieval prepare --config {params.config} > {log} 2>&1"
