rule embed_text:
    input:
        dataset=DATASET,
        check=ancient(CHECK),
        extra=encoder_extra_inputs,
    output:
        text_embs("{encoder}"),
    log:
        f"{LOGS}/embed_text/{{encoder}}.log",
    benchmark:
        f"{LOGS}/benchmarks/embed_text/{{encoder}}.tsv"
    wildcard_constraints:
        encoder="|".join(config["encoders"]),
    priority: embed_priority
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    threads: embed_threads
    resources:
        mem_mb=4000,
    params:
        rerun_trigger=lambda wc: rerun_on(config["encoders"][wc.encoder]),
        field=config["text_field"],
        languages=config["languages"],
        skip=["--skip-unavailable"] if config.get("skip_unavailable", False) else [],
        threads=MODEL_THREADS,
        spec=lambda wc, input: encoder_spec(wc.encoder),
        cache=lambda wc, input: absolute(config["cache_dir"]),
    shell:
        "backretrieval embed-text --dataset {input.dataset:q} --encoder {wildcards.encoder:q} --spec {params.spec:q}"
        " --text-field {params.field:q} --languages {params.languages:q} --out {output:q} {params.skip:q}"
        " --cache-dir {params.cache:q} --threads {params.threads:q} > {log:q} 2>&1"


rule embed_images:
    input:
        dataset=DATASET,
        check=ancient(CHECK),
    output:
        image_emb(),
    log:
        f"{LOGS}/embed_images.log",
    benchmark:
        f"{LOGS}/benchmarks/embed_images.tsv"
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    threads: IMAGE_THREADS
    resources:
        mem_mb=4000,
    params:
        backbone=config["image_backbone"],
        spec=as_json(config["backbones"][config["image_backbone"]]),
        threads=IMAGE_THREADS,
        cache=lambda wc, input: absolute(config["cache_dir"]),
    shell:
        "backretrieval embed-images --dataset {input.dataset:q} --image-backbone {params.backbone:q} --spec {params.spec:q}"
        " --out {output:q} --cache-dir {params.cache:q} --threads {params.threads:q} > {log:q} 2>&1"
