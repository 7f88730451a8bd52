rule embed_text:
    input:
        DATASET_DIR,
        encoder_extra_inputs,
    output:
        text_embs("{encoder}"),
    params:
        config=CONFIG,
        spec=lambda wc: json.dumps(config["encoders"][wc.encoder], sort_keys=True),
        field=config["text_field"],
    wildcard_constraints:
        encoder="|".join(config["encoders"]),
    threads: embed_threads
    resources:
        mem_mb=4000,
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/embed_text/{{encoder}}.log",
    benchmark:
        f"{LOGS}/benchmarks/embed_text/{{encoder}}.tsv"
    shell:
        "backretrieval embed-text --config {params.config} --encoder {wildcards.encoder} > {log} 2>&1"


rule embed_images:
    input:
        DATASET_DIR,
    output:
        image_emb(),
    params:
        config=CONFIG,
        spec=json.dumps(config["backbones"][config["image_backbone"]], sort_keys=True),
    threads: HEAVY_THREADS
    resources:
        mem_mb=4000,
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/embed_images.log",
    benchmark:
        f"{LOGS}/benchmarks/embed_images.tsv"
    shell:
        "backretrieval embed-images --config {params.config} > {log} 2>&1"
