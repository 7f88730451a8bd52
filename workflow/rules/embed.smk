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
        **plan.embed_text_params(),
    shell:
        COMMANDS["embed-text"]


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
        **plan.embed_images_params(),
    shell:
        COMMANDS["embed-images"]
