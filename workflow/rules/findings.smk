# The findings (docs/FINDINGS.md): one rule per analysis over the cached artifacts of the
# current config, writing <reports_dir>/findings/<analysis>.{csv,md,json} and figures. Every
# rule passes its inputs, outputs and settings to the CLI explicitly and logs.

# =============================================================================================
# findings-b: image quality (question 2), sample size (question 3), hubness (question 4)
# =============================================================================================
from backretrieval.steps.findings import settings_b as _settings_b

FB = _settings_b(config)
FINDINGS_DIR = f"{REPORTS}/findings"
FB_ART = f"artifacts/{RUN}/findings"
FB_SYNTHETIC = config["dataset"]["source"] == "synthetic"


def _fb_text_flags(encoders, langs, path_of):
    return " ".join(f"{e}:{lang}={path_of(e, lang)}" for e in encoders for lang in langs)


def _fb_langs(directions):
    return sorted({lang for d in directions for lang in d.split("-")})


def _fb_figures(name):
    return [f"{FINDINGS_DIR}/figures/{name}.{ext}" for ext in ("png", "svg", "pdf")]


def _fb_outputs(name):
    return [f"{FINDINGS_DIR}/{name}.{ext}" for ext in ("csv", "md", "json")] + [
        f"{FINDINGS_DIR}/{name}.samples.csv"
    ] + _fb_figures(name)


FB_IQ = FB["image_quality"]
FB_IQ_BACKBONES = dict(FB_IQ["backbones"])


rule findings_embed_backbone:
    """Image features of another backbone on the config's dataset (question 2)."""
    input:
        DATASET_DIR,
    output:
        f"{FB_ART}/image/{{backbone}}.npz",
    params:
        spec=lambda wc: json.dumps(FB_IQ_BACKBONES[wc.backbone], sort_keys=True),
        cache=config["cache_dir"],
    wildcard_constraints:
        backbone="|".join(FB_IQ_BACKBONES) or "(?!x)x",
    threads: HEAVY_THREADS
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/findings/embed_backbone/{{backbone}}.log",
    shell:
        "backretrieval findings-embed-images --dataset {input} --model {wildcards.backbone} "
        "--spec '{params.spec}' --cache-dir {params.cache} --out {output} > {log} 2>&1"


rule findings_image_quality:
    input:
        dataset=DATASET_DIR,
        samples=[samples_file(d) for d in config["directions"]],
        text=[text_emb(e, lang) for e in config["encoders"] for lang in _fb_langs(config["directions"])],
        base=image_emb(),
        extra=[f"{FB_ART}/image/{b}.npz" for b in FB_IQ_BACKBONES],
    output:
        _fb_outputs("image_quality"),
    params:
        text=_fb_text_flags(config["encoders"], _fb_langs(config["directions"]), text_emb),
        images=" ".join([f"{config['image_backbone']}={image_emb()}"] + [f"{b}={FB_ART}/image/{b}.npz" for b in FB_IQ_BACKBONES]),
        base=config["image_backbone"],
        noise=" ".join(str(x) for x in FB_IQ["noise"]),
        project=" ".join(str(x) for x in FB_IQ["project"]),
        shuffle="--shuffle" if FB_IQ["shuffle"] else "",
        max_seeds=f"--max-seeds {FB_IQ['max_seeds']}" if FB_IQ["max_seeds"] else "",
        seed=FB_IQ["seed"],
        k=config["k"],
        out=FINDINGS_DIR,
    threads: 1
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/findings/image_quality.log",
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads} "
        "backretrieval findings-image-quality --dataset {input.dataset} --samples {input.samples} "
        "--text {params.text} --image {params.images} --base {params.base} --noise {params.noise} "
        "--project {params.project} {params.shuffle} {params.max_seeds} --seed {params.seed} --k {params.k} "
        "--config-name {RUN} --out-dir {params.out} > {log} 2>&1"


FB_SS = FB["sample_size"]
FB_SS_LANGS = _fb_langs(FB_SS["directions"])
if FB_SYNTHETIC:
    _syn = FB_SS["synthetic"]
    FB_SS_DATASET = f"data/prepared/synthetic-findings-{_syn['n_items']}-{'-'.join(_syn['languages'])}-s{_syn['seed']}"
    FB_SS_IMAGE = f"{FB_ART}/sample_size/image/{config['image_backbone']}.npz"

    def fb_ss_text(encoder, lang):
        return f"{FB_ART}/sample_size/text/{encoder}/{lang}.{config['text_field']}.npz"

    rule findings_synthetic_dataset:
        """The SYNTHETIC dataset scaled for question 3 (its first items equal the default's)."""
        output:
            directory(FB_SS_DATASET),
        params:
            n=_syn["n_items"],
            langs=" ".join(_syn["languages"]),
            seed=_syn["seed"],
            size=_syn["image_size"],
        conda:
            CONDA_ENV
        log:
            f"{LOGS}/findings/synthetic_dataset.log",
        shell:
            "backretrieval findings-synthetic --out {output} --n-items {params.n} --languages {params.langs} "
            "--seed {params.seed} --image-size {params.size} > {log} 2>&1"

    rule findings_sample_size_embed_text:
        input:
            FB_SS_DATASET,
        output:
            fb_ss_text("{encoder}", "{lang}"),
        params:
            spec=lambda wc: json.dumps(FB_SS["encoders"][wc.encoder], sort_keys=True),
            field=config["text_field"],
            cache=config["cache_dir"],
        wildcard_constraints:
            encoder="|".join(FB_SS["encoders"]),
            lang="|".join(FB_SS_LANGS),
        threads: HEAVY_THREADS
        conda:
            CONDA_ENV
        log:
            f"{LOGS}/findings/sample_size_embed/{{encoder}}.{{lang}}.log",
        shell:
            "backretrieval findings-embed-text --dataset {input} --model {wildcards.encoder} --spec '{params.spec}' "
            "--lang {wildcards.lang} --field {params.field} --cache-dir {params.cache} --out {output} > {log} 2>&1"

    rule findings_sample_size_embed_images:
        input:
            FB_SS_DATASET,
        output:
            FB_SS_IMAGE,
        params:
            model=config["image_backbone"],
            spec=json.dumps(config["backbones"][config["image_backbone"]], sort_keys=True),
            cache=config["cache_dir"],
        threads: HEAVY_THREADS
        conda:
            CONDA_ENV
        log:
            f"{LOGS}/findings/sample_size_embed_images.log",
        shell:
            "backretrieval findings-embed-images --dataset {input} --model {params.model} --spec '{params.spec}' "
            "--cache-dir {params.cache} --out {output} > {log} 2>&1"

else:
    FB_SS_DATASET = DATASET_DIR
    FB_SS_IMAGE = image_emb()
    fb_ss_text = text_emb


rule findings_sample_size:
    input:
        dataset=FB_SS_DATASET,
        text=[fb_ss_text(e, lang) for e in FB_SS["encoders"] for lang in FB_SS_LANGS],
        image=FB_SS_IMAGE,
    output:
        _fb_outputs("sample_size"),
    params:
        text=_fb_text_flags(FB_SS["encoders"], FB_SS_LANGS, fb_ss_text),
        directions=" ".join(FB_SS["directions"]),
        n_grid=" ".join(str(n) for n in FB_SS["n_grid"]),
        seeds=" ".join(str(s) for s in FB_SS["seeds"]),
        baseline=f"--baseline {FB_SS['baseline']}" if FB_SS["baseline"] else "",
        crit=f"--min-agreement {FB_SS['min_agreement']} --min-share {FB_SS['min_share']}",
        k=config["k"],
        out=FINDINGS_DIR,
    threads: 1
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/findings/sample_size.log",
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads} "
        "backretrieval findings-sample-size --dataset {input.dataset} --text {params.text} --image {input.image} "
        "--directions {params.directions} --n-grid {params.n_grid} --seeds {params.seeds} {params.baseline} "
        "{params.crit} --k {params.k} --config-name {RUN} --out-dir {params.out} > {log} 2>&1"


FB_HUB = FB["hubness"]


rule findings_hubness:
    input:
        dataset=DATASET_DIR,
        samples=[samples_file(d) for d in config["directions"]],
        text=[text_emb(e, lang) for e in config["encoders"] for lang in _fb_langs(config["directions"])],
        image=image_emb(),
    output:
        _fb_outputs("hubness"),
    params:
        text=_fb_text_flags(config["encoders"], _fb_langs(config["directions"]), text_emb),
        retrievals=" ".join(FB_HUB["retrievals"]),
        hub_fraction=FB_HUB["hub_fraction"],
        hub_noise=FB_HUB["hub_noise"],
        max_seeds=f"--max-seeds {FB_HUB['max_seeds']}" if FB_HUB["max_seeds"] else "",
        seed=FB_HUB["seed"],
        k=config["k"],
        out=FINDINGS_DIR,
    threads: 1
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/findings/hubness.log",
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads} "
        "backretrieval findings-hubness --dataset {input.dataset} --samples {input.samples} --text {params.text} "
        "--image {input.image} --retrievals {params.retrievals} --hub-fraction {params.hub_fraction} "
        "--hub-noise {params.hub_noise} {params.max_seeds} --seed {params.seed} --k {params.k} "
        "--config-name {RUN} --out-dir {params.out} > {log} 2>&1"


FINDINGS_B_OUTPUTS = _fb_outputs("image_quality") + _fb_outputs("sample_size") + _fb_outputs("hubness")

# =============================================================================================
# end of findings-b
# =============================================================================================


rule findings:
    """Every findings analysis of the current config (the lead merges findings-a's outputs)."""
    input:
        FINDINGS_B_OUTPUTS,
