# One job draws every direction's samples (a file depends only on its direction).
# Reads: sample_size, seeds, directions.
rule sample:
    input:
        dataset=DATASET,
    output:
        plan.samples_files(),
    log:
        f"{LOGS}/sample.log",
    benchmark:
        f"{LOGS}/benchmarks/sample.tsv"
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    params:
        code=CODE["sample"],
        sample_size=config["sample_size"],
        seeds=config["seeds"],
        directions=config["directions"],
    shell:
        "backretrieval step sample --dataset {input.dataset:q} --directions {params.directions:q} --sample-size {params.sample_size:q}"
        " --seeds {params.seeds:q} --out {output:q} > {log:q} 2>&1"


# One metrics job per direction (every seed); with seed groups (`seed_group_size`) one per
# (direction, group of seeds) instead: metrics_part, joined byte-identically by metrics_gather.
# Reads: dataset.name, image_backbone, encoders (their names), text_field, recall_k, corr_max_pairs;
# its torch/BLAS threads are the job's own (a fixed 1: the same bytes on any core count).
rule metrics:
    input:
        unpack(plan.metrics_inputs),
    output:
        **plan.metrics_outputs("{direction}"),
    log:
        f"{LOGS}/metrics/{{direction}}.log",
    benchmark:
        f"{LOGS}/benchmarks/metrics/{{direction}}.tsv"
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    resources:
        mem_mb=2000,
    params:
        code=CODE["metrics"],
        name=config["dataset"]["name"],
        backbone=config["image_backbone"],
        encoders=list(config["encoders"]),
        field=config["text_field"],
        recall_k=config["recall_k"],
        corr=["--corr-max-pairs", config["corr_max_pairs"]] if config.get("corr_max_pairs") else [],
        seeds=[],
    shell:
        "OMP_NUM_THREADS={threads:q} OPENBLAS_NUM_THREADS={threads:q} MKL_NUM_THREADS={threads:q}"
        " backretrieval step metrics --dataset {input.dataset:q} --dataset-name {params.name:q}"
        " --direction {wildcards.direction:q} --samples {input.samples:q} --image-emb {input.images:q}"
        " --image-backbone {params.backbone:q} --encoders {params.encoders:q} --text-emb {input.text:q}"
        " --text-field {params.field:q} --recall-k {params.recall_k:q} {params.corr:q} {params.seeds:q}"
        " --out {output.csv:q} > {log:q} 2>&1"


if plan.seed_group_size is not None:

    use rule metrics as metrics_part with:
        output:
            **plan.metrics_part_outputs("{direction}", "{group}"),
        log:
            f"{LOGS}/metrics/{{direction}}/{{group}}.log",
        benchmark:
            f"{LOGS}/benchmarks/metrics/{{direction}}/{{group}}.tsv"
        wildcard_constraints:
            group=r"\d+",
        params:
            seeds=lambda wc: ["--seeds", *plan.seed_groups[int(wc.group)]],

    rule metrics_gather:
        input:
            unpack(plan.metrics_parts),
        output:
            **plan.metrics_outputs("{direction}"),
        log:
            f"{LOGS}/metrics_gather/{{direction}}.log",
        benchmark:
            f"{LOGS}/benchmarks/metrics_gather/{{direction}}.tsv"
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        params:
            code=CODE["metrics"],
        shell:
            "backretrieval step metrics-gather --metrics {input.csv:q} --out {output.csv:q} > {log:q} 2>&1"

    # the joined parts, not the whole-direction job, make a direction's metrics
    ruleorder: metrics_gather > metrics
