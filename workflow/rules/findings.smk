# Findings (docs/FINDINGS.md): every analysis of the current config over the main
# pipeline's artifacts -> <reports_dir>/findings/<analysis>.{csv,md,json} (+ figures/), then
# docs/FINDINGS.md, reports/findings_summary/* and the README's verdict block from every
# configuration's committed findings records. Target: `snakemake findings` (--configfile for a
# named config). As every rule: declared files passed to the file-based CLI, settings as params
# (steps.settings.findings_settings: defaults + the config's optional `findings:` section),
# shadow, log. The output folder is passed as --out-dir, derived from the declared outputs.
# Intermediate artifacts (other backbones' features, the scaled SYNTHETIC set's embeddings) go
# to artifacts/<run>.findings/ (beside, not inside, artifacts/<run>: DVC versions the findings
# as their own stage, see scripts/dvc_stages.py). Paths: steps.layout; helpers: common.smk.
from backretrieval.steps.settings import ANALYSES as FINDINGS_ANALYSES
from backretrieval.steps.settings import english_only_encoders, findings_settings

FS = findings_settings(config)
FINDINGS = str(layout.findings_root(config))
FINDINGS_ART = str(layout.findings_artifacts_root(config))
FINDINGS_SUMMARY = str(layout.FINDINGS_SUMMARY)
FINDINGS_DOC = str(layout.FINDINGS_DOC)
FINDINGS_JSON = [str(layout.findings_record_path(config, a)) for a in FINDINGS_ANALYSES]
FINDINGS_SYNTHETIC = config["dataset"]["source"] == "synthetic"
WORDVEC_ENCODERS = sorted(e for e, s in config["encoders"].items() if s.get("type") == "wordvec")
RANDOM_ENCODERS = sorted(e for e, s in config["encoders"].items() if s.get("type") == "random")
ENGLISH_ONLY_ENCODERS = english_only_encoders(config)
DIRECTION_LANGS = sorted({lang for d in config["directions"] for lang in d.split("-")})
METRICS_FILES = [metrics_file(d) for d in config["directions"]]


IQ = FS["image_quality"]
IQ_BACKBONES = dict(IQ["backbones"])


SS = FS["sample_size"]
SS_LANGS = sorted({lang for d in SS["directions"] for lang in d.split("-")})


if FINDINGS_SYNTHETIC:
    # the SYNTHETIC generator scaled up (its first items equal the default's), prepared as any dataset
    _syn = SS["synthetic"]
    SS_DATASET = str(layout.findings_sample_size_dataset(config, _syn))
    SS_DATASET_NAME = Path(SS_DATASET).name
    SS_IMAGE = str(layout.findings_sample_size_image_path(config))

else:
    SS_DATASET = DATASET
    SS_IMAGE = image_emb()


HUB = FS["hubness"]


# BLI writes its tables and figure only when the config has word-vector encoders
BLI_OUTPUTS = (
    [
        *findings_tables("bli"),
        findings_file("bli_test_dictionary.csv"),
        *findings_figure("bli"),
    ]
    if WORDVEC_ENCODERS
    else []
)


# ---- 1. the unit of inference ----------------------------------------------------------------
rule findings_inference:
    input:
        unpack(findings_run_inputs),
    output:
        json=findings_record("inference"),
        tables=findings_tables("inference"),
        replicates=findings_file("inference_replicates.csv"),
        figure=findings_figure("inference_ci"),
    log:
        f"{LOGS}/findings/inference.log",
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    threads: 1
    params:
        k=config["recall_k"],
        run_name=RUN,
        out_dir=findings_dir,
        s=FS["inference"],
        n_seeds=lambda wc: ["--n-seeds", FS["inference"]["n_seeds"]] if FS["inference"]["n_seeds"] else [],
        random=RANDOM_ENCODERS,
        english=lambda wc: ["--english-only", *ENGLISH_ONLY_ENCODERS] if ENGLISH_ONLY_ENCODERS else [],
        family=WORDVEC_ENCODERS,
    shell:
        "OMP_NUM_THREADS={threads:q} OPENBLAS_NUM_THREADS={threads:q} MKL_NUM_THREADS={threads:q} "
        "backretrieval findings-inference --dataset {input.dataset:q} --metrics {input.metrics:q}"
        " --samples {input.samples:q} --image-emb {input.image:q} --text-emb {input.text:q} --recall-k {params.k:q}"
        " --run-name {params.run_name:q} --out-dir {params.out_dir:q} --B {params.s[B]:q}"
        " --bootstrap-seed {params.s[bootstrap_seed]:q} {params.n_seeds:q}"
        " --random-encoders {params.random:q} {params.english:q} --family {params.family:q}"
        " > {log:q} 2>&1"


# ---- 2. image quality ------------------------------------------------------------------------
use rule embed_images as findings_embed_backbone with:
    output:
        iq_image("{backbone}"),
    log:
        f"{LOGS}/findings/embed_backbone/{{backbone}}.log",
    benchmark:
        f"{LOGS}/benchmarks/findings/embed_backbone/{{backbone}}.tsv"
    wildcard_constraints:
        backbone="|".join(IQ_BACKBONES) or "(?!x)x",
    threads: HEAVY_THREADS
    params:
        backbone=lambda wc: wc.backbone,
        spec=lambda wc: as_json(IQ_BACKBONES[wc.backbone]),
        threads=MODEL_THREADS,


rule findings_image_quality:
    input:
        dataset=DATASET,
        metrics=METRICS_FILES,
        samples=[samples_file(d) for d in config["directions"]],
        text=[text_emb(e, lang) for e in config["encoders"] for lang in DIRECTION_LANGS],
        base=image_emb(),
        extra=[iq_image(b) for b in IQ_BACKBONES],
    output:
        json=findings_record("image_quality"),
        tables=findings_tables("image_quality", samples=True),
        figure=findings_figure("image_quality"),
    log:
        f"{LOGS}/findings/image_quality.log",
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    threads: 1
    params:
        text=text_flags(config["encoders"], DIRECTION_LANGS, text_emb),
        images=[f"{config['image_backbone']}={image_emb()}"] + [f"{b}={iq_image(b)}" for b in IQ_BACKBONES],
        base=config["image_backbone"],
        noise=IQ["noise"],
        project=IQ["project"],
        shuffle=["--shuffle"] if IQ["shuffle"] else [],
        max_seeds=["--max-seeds", IQ["max_seeds"]] if IQ["max_seeds"] else [],
        seed=IQ["seed"],
        k=config["recall_k"],
        run_name=RUN,
        out_dir=findings_dir,
    shell:
        "OMP_NUM_THREADS={threads:q} OPENBLAS_NUM_THREADS={threads:q} MKL_NUM_THREADS={threads:q} "
        "backretrieval findings-image-quality --dataset {input.dataset:q} --metrics {input.metrics:q}"
        " --samples {input.samples:q} --text {params.text:q} --image {params.images:q} --base {params.base:q}"
        " --noise {params.noise:q} --project {params.project:q} {params.shuffle:q} {params.max_seeds:q}"
        " --seed {params.seed:q} --recall-k {params.k:q} --run-name {params.run_name:q} --out-dir {params.out_dir:q} > {log:q} 2>&1"


# ---- 3. sample size --------------------------------------------------------------------------
if FINDINGS_SYNTHETIC:

    rule findings_sample_size_dataset:
        output:
            directory(SS_DATASET),
        log:
            f"{LOGS}/findings/sample_size_dataset.log",
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        params:
            spec=as_json(
                {
                    "name": SS_DATASET_NAME,
                    "source": "synthetic",
                    "options": {},
                    "synthetic": {k: _syn[k] for k in ("n_items", "seed", "image_size")},
                }
            ),
            languages=_syn["languages"],
        shell:
            "backretrieval prepare --spec {params.spec:q} --languages {params.languages:q} --out {output:q} > {log:q} 2>&1"

    use rule embed_text as findings_sample_size_embed_text with:
        input:
            dataset=SS_DATASET,
        output:
            [ss_text("{encoder}", lang) for lang in SS_LANGS],
        log:
            f"{LOGS}/findings/sample_size_embed/{{encoder}}.log",
        benchmark:
            f"{LOGS}/benchmarks/findings/sample_size_embed/{{encoder}}.tsv"
        wildcard_constraints:
            encoder="|".join(SS["encoders"]),
        priority: 0
        threads: HEAVY_THREADS
        params:
            rerun_trigger=lambda wc: rerun_on(SS["encoders"][wc.encoder]),
            spec=lambda wc, input: as_json(SS["encoders"][wc.encoder]),
            languages=SS_LANGS,
            skip=[],

    use rule embed_images as findings_sample_size_embed_images with:
        input:
            dataset=SS_DATASET,
        output:
            SS_IMAGE,
        log:
            f"{LOGS}/findings/sample_size_embed_images.log",
        benchmark:
            f"{LOGS}/benchmarks/findings/sample_size_embed_images.tsv"
        threads: HEAVY_THREADS
        params:
            threads=MODEL_THREADS,


rule findings_sample_size:
    input:
        dataset=SS_DATASET,
        run_dataset=DATASET,
        metrics=METRICS_FILES,
        text=[ss_text(e, lang) for e in SS["encoders"] for lang in SS_LANGS],
        image=SS_IMAGE,
    output:
        json=findings_record("sample_size"),
        tables=findings_tables("sample_size", samples=True),
        figure=findings_figure("sample_size"),
    log:
        f"{LOGS}/findings/sample_size.log",
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    threads: 1
    params:
        text=text_flags(SS["encoders"], SS_LANGS, ss_text),
        directions=SS["directions"],
        n_grid=SS["n_grid"],
        seeds=SS["seeds"],
        baseline=["--baseline", SS["baseline"]] if SS["baseline"] else [],
        crit=["--min-agreement", SS["min_agreement"], "--min-share", SS["min_share"]],
        k=config["recall_k"],
        run_name=RUN,
        out_dir=findings_dir,
    shell:
        "OMP_NUM_THREADS={threads:q} OPENBLAS_NUM_THREADS={threads:q} MKL_NUM_THREADS={threads:q} "
        "backretrieval findings-sample-size --dataset {input.dataset:q} --run-dataset {input.run_dataset:q}"
        " --metrics {input.metrics:q} --text {params.text:q} --image {input.image:q} --directions {params.directions:q}"
        " --n-grid {params.n_grid:q} --seeds {params.seeds:q} {params.baseline:q} {params.crit:q} --recall-k {params.k:q}"
        " --run-name {params.run_name:q} --out-dir {params.out_dir:q} > {log:q} 2>&1"


# ---- 4. hubness ------------------------------------------------------------------------------
rule findings_hubness:
    input:
        dataset=DATASET,
        metrics=METRICS_FILES,
        samples=[samples_file(d) for d in config["directions"]],
        text=[text_emb(e, lang) for e in config["encoders"] for lang in DIRECTION_LANGS],
        image=image_emb(),
    output:
        json=findings_record("hubness"),
        tables=findings_tables("hubness", samples=True),
        figure=findings_figure("hubness"),
    log:
        f"{LOGS}/findings/hubness.log",
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    threads: 1
    params:
        text=text_flags(config["encoders"], DIRECTION_LANGS, text_emb),
        retrievals=HUB["retrievals"],
        hub_fraction=HUB["hub_fraction"],
        hub_noise=HUB["hub_noise"],
        max_seeds=["--max-seeds", HUB["max_seeds"]] if HUB["max_seeds"] else [],
        seed=HUB["seed"],
        k=config["recall_k"],
        run_name=RUN,
        out_dir=findings_dir,
    shell:
        "OMP_NUM_THREADS={threads:q} OPENBLAS_NUM_THREADS={threads:q} MKL_NUM_THREADS={threads:q} "
        "backretrieval findings-hubness --dataset {input.dataset:q} --metrics {input.metrics:q} --samples {input.samples:q}"
        " --text {params.text:q} --image {input.image:q} --retrievals {params.retrievals:q}"
        " --hub-fraction {params.hub_fraction:q} --hub-noise {params.hub_noise:q} {params.max_seeds:q} --seed {params.seed:q}"
        " --recall-k {params.k:q} --run-name {params.run_name:q} --out-dir {params.out_dir:q} > {log:q} 2>&1"


# ---- 5. calibration + soft BkR ---------------------------------------------------------------
rule findings_calibration:
    input:
        unpack(findings_run_inputs),
    output:
        json=findings_record("calibration"),
        tables=findings_tables("calibration"),
        soft=findings_file("calibration_soft.csv"),
        points=findings_file("calibration_points.csv"),
        figure=findings_figure("calibration"),
    log:
        f"{LOGS}/findings/calibration.log",
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    threads: 1
    params:
        k=config["recall_k"],
        run_name=RUN,
        out_dir=findings_dir,
        soft_m=FS["calibration"]["soft_m"],
    shell:
        "OMP_NUM_THREADS={threads:q} OPENBLAS_NUM_THREADS={threads:q} MKL_NUM_THREADS={threads:q} "
        "backretrieval findings-calibration --dataset {input.dataset:q} --metrics {input.metrics:q}"
        " --samples {input.samples:q} --image-emb {input.image:q} --text-emb {input.text:q} --recall-k {params.k:q}"
        " --run-name {params.run_name:q} --out-dir {params.out_dir:q} --soft-m {params.soft_m:q} > {log:q} 2>&1"


# ---- 6. BLI + the agreement matrix -----------------------------------------------------------
rule findings_bli:
    input:
        dataset=DATASET,
        metrics=METRICS_FILES,
        wordvec=wordvec_inputs,
    output:
        json=findings_record("bli"),
        tables=BLI_OUTPUTS,
    log:
        f"{LOGS}/findings/bli.log",
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    threads: 1
    params:
        k=config["recall_k"],
        run_name=RUN,
        out_dir=findings_dir,
        encoders={e: config["encoders"][e] for e in WORDVEC_ENCODERS},
        specs=wordvec_spec_args,
        s=FS["bli"],
    shell:
        "OMP_NUM_THREADS={threads:q} OPENBLAS_NUM_THREADS={threads:q} MKL_NUM_THREADS={threads:q} "
        "backretrieval findings-bli --dataset {input.dataset:q} --metrics {input.metrics:q} --recall-k {params.k:q}"
        " --run-name {params.run_name:q} --out-dir {params.out_dir:q} {params.specs:q} --test-size {params.s[test_size]:q}"
        " --min-count {params.s[min_count]:q} --seed {params.s[seed]:q} --csls-k {params.s[csls_k]:q} > {log:q} 2>&1"


rule findings_agreement:
    input:
        dataset=DATASET,
        metrics=METRICS_FILES,
        points=findings_file("calibration_points.csv"),
        bli=[findings_file("bli.csv")] if WORDVEC_ENCODERS else [],
    output:
        json=findings_record("agreement"),
        tables=findings_tables("agreement"),
        figure=findings_figure("agreement_clustermap"),
    log:
        f"{LOGS}/findings/agreement.log",
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    threads: 1
    params:
        k=config["recall_k"],
        run_name=RUN,
        out_dir=findings_dir,
        bli=lambda wc, input: ["--bli", *input.bli] if input.bli else [],
        s=FS["agreement"],
    shell:
        "backretrieval findings-agreement --dataset {input.dataset:q} --metrics {input.metrics:q} --recall-k {params.k:q}"
        " --run-name {params.run_name:q} --out-dir {params.out_dir:q} --points {input.points:q} {params.bli:q}"
        " --soft-m {params.s[soft_m]:q} --B {params.s[B]:q} --bootstrap-seed {params.s[bootstrap_seed]:q} > {log:q} 2>&1"


# ---- across configurations: docs/FINDINGS.md, the overall verdict ------------------------------
rule findings_document:
    input:
        own=FINDINGS_JSON,
        points=findings_file("calibration_points.csv"),
        replicates=findings_file("inference_replicates.csv"),
        others=other_configs_findings(),
    output:
        doc=FINDINGS_DOC,
        summary=directory(FINDINGS_SUMMARY),
        done=touch(f"{FINDINGS_ART}/findings.done"),
    log:
        f"{LOGS}/findings/document.log",
    shadow:
        SHADOW
    conda:
        CONDA_ENV
    params:
        others=lambda wc, input: [p for p in input.others if p.endswith(".json")],
        # README.md's generated verdict block is rewritten in place: a location outside the
        # declared files (a failed job must never delete the README)
        readme=lambda wc, input: absolute("README.md"),
    shell:
        "backretrieval findings-document --records {input.own:q} {params.others:q} --doc {output.doc:q}"
        " --summary-dir {output.summary:q} --readme {params.readme:q} > {log:q} 2>&1"


rule findings:
    """Every findings analysis of the current config, then
    docs/FINDINGS.md from every configuration's findings records."""
    input:
        FINDINGS_JSON,
        FINDINGS_DOC,
        f"{FINDINGS_ART}/findings.done",
