# Text embeddings: one job per encoder, every language. Reads: encoders.<encoder>, text_field,
# languages, skip_unavailable, model_threads (cache_dir: a side store, passed absolute).
rule embed_text:
    input:
        unpack(embed_inputs),
    output:
        plan.text_embs("{encoder}"),
    log:
        f"{LOGS}/embed_text/{{encoder}}.log",
    benchmark:
        f"{LOGS}/benchmarks/embed_text/{{encoder}}.tsv"
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    threads: plan.embed_threads
    resources:
        mem_mb=4000,
    params:
        code=CODE["embed"],
        rerun_trigger=lambda wc: rerun_on(config["encoders"][wc.encoder]),
        field=config["text_field"],
        languages=config["languages"],
        skip=["--skip-unavailable"] if config.get("skip_unavailable", False) else [],
        threads=MODEL_THREADS,
        spec=lambda wc, input: plan.encoder_spec(wc.encoder),
        cache=plan.cache,
    shell:
        "backretrieval step embed-text --dataset {input.dataset:q} --encoder {wildcards.encoder:q}"
        " --spec {params.spec:q} --text-field {params.field:q} --languages {params.languages:q} --out {output:q}"
        " {params.skip:q} --cache-dir {params.cache:q} --threads {params.threads:q} > {log:q} 2>&1"


# Image features of the configured backbone. Reads: image_backbone, backbones.<it>.
rule embed_images:
    input:
        unpack(dataset_inputs),
    output:
        plan.image_emb(),
    log:
        f"{LOGS}/embed_images.log",
    benchmark:
        f"{LOGS}/benchmarks/embed_images.tsv"
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    threads: plan.image_threads
    resources:
        mem_mb=4000,
    params:
        code=CODE["embed"],
        backbone=config["image_backbone"],
        spec=as_json(config["backbones"][config["image_backbone"]]),
        threads=plan.image_threads,
        cache=plan.cache,
    shell:
        "backretrieval step embed-images --dataset {input.dataset:q} --image-backbone {params.backbone:q}"
        " --spec {params.spec:q} --out {output:q} --cache-dir {params.cache:q} --threads {params.threads:q} > {log:q} 2>&1"
