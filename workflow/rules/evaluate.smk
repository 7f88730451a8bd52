# One job draws every direction's samples (a file depends only on its direction: the same
# bytes as one job per direction, without a Snakemake start-up per direction).
rule sample:
    input:
        dataset=DATASET,
        check=ancient(CHECK),
    output:
        [samples_file(d) for d in config["directions"]],
    log:
        f"{LOGS}/sample.log",
    benchmark:
        f"{LOGS}/benchmarks/sample.tsv"
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    params:
        n=config["sample_size"],
        seeds=config["seeds"],
        directions=config["directions"],
    shell:
        "backretrieval sample --dataset {input.dataset:q} --directions {params.directions:q} --sample-size {params.n:q}"
        " --seeds {params.seeds:q} --out {output:q} > {log:q} 2>&1"


# One metrics job per direction (every seed); with seed groups (`seed_group_size`) the same
# rule per (direction, group of seeds) instead: metrics_part, joined by metrics_gather.
rule metrics:
    input:
        dataset=DATASET,
        samples=samples_file("{direction}"),
        images=image_emb(),
        text=direction_text_inputs,
    output:
        csv=metrics_file("{direction}"),
        ranks=ranks_file("{direction}"),
    log:
        f"{LOGS}/metrics/{{direction}}.log",
    benchmark:
        f"{LOGS}/benchmarks/metrics/{{direction}}.tsv"
    wildcard_constraints:
        direction="|".join(config["directions"]),
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=2000,
    params:
        name=config["dataset"]["name"],
        backbone=config["image_backbone"],
        encoders=list(config["encoders"]),
        field=config["text_field"],
        k=config["recall_k"],
        corr=["--corr-max-pairs", config["corr_max_pairs"]] if config.get("corr_max_pairs") else [],
        seeds=[],
    shell:
        "OMP_NUM_THREADS={threads:q} OPENBLAS_NUM_THREADS={threads:q} MKL_NUM_THREADS={threads:q} "
        "backretrieval metrics --dataset {input.dataset:q} --dataset-name {params.name:q} --direction {wildcards.direction:q}"
        " --samples {input.samples:q} --image-emb {input.images:q} --image-backbone {params.backbone:q}"
        " --encoders {params.encoders:q} --text-emb {input.text:q} --text-field {params.field:q} --recall-k {params.k:q}"
        " {params.corr:q} {params.seeds:q} --out {output.csv:q} > {log:q} 2>&1"


if SEED_GROUP_SIZE is not None:

    use rule metrics as metrics_part with:
        output:
            csv=metrics_part_file("{direction}", "{group}"),
            ranks=str(layout.ranks_path(metrics_part_file("{direction}", "{group}"))),
        log:
            f"{LOGS}/metrics/{{direction}}/{{group}}.log",
        benchmark:
            f"{LOGS}/benchmarks/metrics/{{direction}}/{{group}}.tsv"
        wildcard_constraints:
            direction="|".join(config["directions"]),
            group=r"\d+",
        params:
            seeds=lambda wc: ["--seeds", *SEED_GROUPS[int(wc.group)]],

    rule metrics_gather:
        input:
            csv=metrics_parts,
            ranks=metrics_part_ranks,
        output:
            csv=metrics_file("{direction}"),
            ranks=ranks_file("{direction}"),
        log:
            f"{LOGS}/metrics_gather/{{direction}}.log",
        benchmark:
            f"{LOGS}/benchmarks/metrics_gather/{{direction}}.tsv"
        wildcard_constraints:
            direction="|".join(config["directions"]),
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        threads: 1
        shell:
            "backretrieval metrics-gather --metrics {input.csv:q} --out {output.csv:q} > {log:q} 2>&1"

    # the joined parts, not the whole-direction job, make a direction's metrics
    ruleorder: metrics_gather > metrics
