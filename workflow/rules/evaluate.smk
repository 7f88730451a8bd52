rule sample:
    input:
        DATASET_DIR,
    output:
        samples_file("{direction}"),
    params:
        config=CONFIG,
        slice=slice_hash("sample_size", "seeds"),
    wildcard_constraints:
        direction="|".join(config["directions"]),
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/sample/{{direction}}.log",
    shell:
        "backretrieval sample --config {params.config} --direction {wildcards.direction} > {log} 2>&1"


rule metrics:
    input:
        samples=samples_file("{direction}"),
        image=image_emb(),
        text=direction_text_inputs,
    output:
        csv=metrics_file("{direction}"),
        ranks=ranks_file("{direction}"),
    params:
        config=CONFIG,
        slice=slice_hash("k", "corr_max_pairs", "full_bkr_ranks", "encoders"),
    wildcard_constraints:
        direction="|".join(config["directions"]),
    threads: 1
    resources:
        mem_mb=2000,
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/metrics/{{direction}}.log",
    benchmark:
        f"{LOGS}/benchmarks/metrics/{{direction}}.tsv"
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads} "
        "backretrieval metrics --config {params.config} --direction {wildcards.direction} > {log} 2>&1"
