# Findings (docs/FINDINGS.md): every analysis of the current config over the main
# pipeline's artifacts -> <reports_dir>/findings/<analysis>.{csv,md,json} (+ figures/), then
# docs/FINDINGS.md, reports/findings_summary/* and the README's verdict block from every
# configuration's committed findings records. Target: `snakemake findings` (--configfile for a
# named config).
#
# One rule per analysis, findings_<name>, all made by the loop below from the analyses' classes
# (backretrieval.findings.analysis): the files it reads (its `inputs`, mapped to this config's
# artifacts by findings_run), the files it writes (its outputs), and its settings
# (findings_settings: its defaults, what follows from the config and the config's optional
# `findings:` section), passed as one JSON. Adding an analysis adds its rule. As every rule:
# declared files passed to the file-based CLI, shadow, log; the output folder is passed as
# --out-dir, derived from the declared outputs. Intermediate artifacts (other backbones'
# features, the scaled SYNTHETIC set's embeddings) go to artifacts/<run>.findings/ (beside, not
# inside, artifacts/<run>: DVC versions the findings as their own stage, see
# scripts/dvc_stages.py). Paths: steps.layout; helpers: common.smk.
from backretrieval.findings.analysis import registry as findings_registry
from backretrieval.findings.inference import COVERAGE_FILE as INFERENCE_COVERAGE
from backretrieval.steps.settings import findings_settings

FINDINGS_CLASSES = findings_registry()
FS = findings_settings(config)
FINDINGS = str(layout.findings_root(config))
FINDINGS_ART = str(layout.findings_artifacts_root(config))
FINDINGS_SUMMARY = str(layout.FINDINGS_SUMMARY)
FINDINGS_DOC = str(layout.FINDINGS_DOC)
FINDINGS_JSON = [str(layout.findings_record_path(config, a)) for a in FINDINGS_CLASSES]
FINDINGS_SYNTHETIC = config["dataset"]["source"] == "synthetic"
WORDVEC_ENCODERS = sorted(e for e, s in config["encoders"].items() if s.get("type") == "wordvec")
DIRECTION_LANGS = sorted({lang for d in config["directions"] for lang in d.split("-")})
METRICS_FILES = [metrics_file(d) for d in config["directions"]]
# the other backbones whose features an analysis reads (its setting `backbones`)
FINDINGS_BACKBONES = {
    b: spec
    for a, cls in FINDINGS_CLASSES.items()
    if "backbones" in cls.inputs
    for b, spec in FS[a]["backbones"].items()
}
# every file the analyses of this config write (an analysis reads those of its `reads` made here)
FINDINGS_OUTPUTS = {p: a for a, cls in FINDINGS_CLASSES.items() for p in cls.output_paths(FS[a])}


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

# the analyses that read other artifacts than the run's: input -> files (findings_run)
FINDINGS_OWN_INPUTS = {
    "sample_size": {
        "dataset": SS_DATASET,
        "run_dataset": DATASET,
        "image": SS_IMAGE,
        "text": {(e, lang): ss_text(e, lang) for e in SS["encoders"] for lang in SS_LANGS},
    },
}


for _name, _cls in FINDINGS_CLASSES.items():

    rule:
        name:
            f"findings_{_name}"
        input:
            **findings_run(_name)[0],
        output:
            json=findings_record(_name),
            files=findings_outputs(_name),
        log:
            f"{LOGS}/findings/{_name}.log",
        shadow:
            SHADOW
        conda:
            CONDA_ENV
        threads: 1
        params:
            analysis=_name,
            run=findings_run(_name)[1],
            settings=findings_command_settings(_name),
            job=lambda wc, input, _name=_name: findings_job_flags(_name),
            k=config["recall_k"],
            run_name=RUN,
            out_dir=findings_dir,
        shell:
            "OMP_NUM_THREADS={threads:q} OPENBLAS_NUM_THREADS={threads:q} MKL_NUM_THREADS={threads:q} "
            "backretrieval findings --analysis {params.analysis:q} {params.run:q} --recall-k {params.k:q}"
            " --run-name {params.run_name:q} --out-dir {params.out_dir:q} --settings {params.settings:q}"
            " {params.job:q} > {log:q} 2>&1"


# ---- the intermediate artifacts of image quality and sample size -------------------------------
use rule embed_images as findings_embed_backbone with:
    output:
        iq_image("{backbone}"),
    log:
        f"{LOGS}/findings/embed_backbone/{{backbone}}.log",
    benchmark:
        f"{LOGS}/benchmarks/findings/embed_backbone/{{backbone}}.tsv"
    wildcard_constraints:
        backbone="|".join(FINDINGS_BACKBONES) or "(?!x)x",
    threads: HEAVY_THREADS
    params:
        backbone=lambda wc: wc.backbone,
        spec=lambda wc: as_json(FINDINGS_BACKBONES[wc.backbone]),
        threads=MODEL_THREADS,


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
            "backretrieval prepare --spec {params.spec:q} --languages {params.languages:q} --out-dir {output:q} > {log:q} 2>&1"

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


# ---- across configurations: docs/FINDINGS.md, the overall verdict ------------------------------
rule findings_document:
    input:
        own=FINDINGS_JSON,
        points=findings_file("calibration_points.csv"),
        replicates=findings_file("inference_replicates.csv"),
        # the simulated coverage the verdict cites (benchmarks/bench_inference_coverage.py);
        # where it is absent the verdict says its layout's coverage was not simulated
        coverage=lambda wc: [INFERENCE_COVERAGE] if Path(INFERENCE_COVERAGE).is_file() else [],
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
        "backretrieval findings-document --records {input.own:q} {params.others:q} --out-doc {output.doc:q}"
        " --out-dir {output.summary:q} --readme {params.readme:q} > {log:q} 2>&1"


rule findings:
    """Every findings analysis of the current config, then
    docs/FINDINGS.md from every configuration's findings records."""
    input:
        FINDINGS_JSON,
        FINDINGS_DOC,
        f"{FINDINGS_ART}/findings.done",
