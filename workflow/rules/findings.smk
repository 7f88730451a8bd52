# Findings (issue 15): every analysis of the current config -> <reports_dir>/findings/*
# (tables, figures, <analysis>.json), then docs/FINDINGS.md + reports/findings_summary/* from
# every configuration's findings JSONs. Target: `snakemake findings` (with --configfile for a
# named config). Each rule names its inputs, outputs and settings explicitly on the command
# line of one `backretrieval findings-*` subcommand; no step derives a path from the config.
# Blocks: shared helpers; findings-a (inference, calibration, bli, agreement, document);
# findings-b (image quality, sample size, hubness). Every block appends the JSON records of its
# analyses to FINDINGS_JSON, which the `findings` target and the document rule collect.
import glob as _glob
import shlex as _shlex

FINDINGS = f"{REPORTS}/findings"
FINDINGS_SUMMARY = "reports/findings_summary"
FINDINGS_DOC = "docs/FINDINGS.md"
FINDINGS_JSON = []


def findings_figure(name):
    return multiext(f"{FINDINGS}/figures/{name}", ".png", ".svg", ".pdf")


def findings_run_inputs(wildcards=None):
    """The cached artifacts of the main pipeline an analysis reads (every direction)."""
    return {
        "dataset": DATASET_DIR,
        "metrics": [metrics_file(d) for d in config["directions"]],
        "ranks": [ranks_file(d) for d in config["directions"]],
        "samples": [samples_file(d) for d in config["directions"]],
        "image": image_emb(),
        "text": [text_emb(e, lang) for e in config["encoders"] for lang in config["languages"]],
    }


FINDINGS_RUN_ARGS = (
    "--dataset {input.dataset} --metrics {input.metrics} --ranks {input.ranks} "
    "--samples {input.samples} --image-emb {input.image} --text-emb {input.text} "
    "--k {params.k} --run-name {params.run_name} --out-dir {params.out_dir}"
)
BLAS_THREADS = "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads} "


# ============================================================================================
# findings-a: 1 unit of inference, 5 calibration + soft BkR, 6 BLI + agreement, the document

# Settings of these analyses (sized so the default config's findings take minutes on 2 cores).
FINDINGS_A = {
    "inference": {"B": 200, "bootstrap_seed": 0, "n_seeds": 3, "corr_max_pairs": 20000},
    "calibration": {"soft_m": [1, 3, 5, 10]},
    "bli": {"test_size": 2000, "min_count": 5, "seed": 0, "csls_k": 10},
    "agreement": {"soft_m": 5, "B": 1000, "bootstrap_seed": 0},
}
WORDVEC_ENCODERS = sorted(e for e, s in config["encoders"].items() if s.get("type") == "wordvec")
RANDOM_ENCODERS = sorted(e for e, s in config["encoders"].items() if s.get("type") == "random")

FINDINGS_JSON += [f"{FINDINGS}/{a}.json" for a in ("inference", "calibration", "bli", "agreement")]
# BLI writes its tables and figure only when the config has word-vector encoders
BLI_OUTPUTS = ([f"{FINDINGS}/bli.csv", f"{FINDINGS}/bli.md", f"{FINDINGS}/bli_test_dictionary.csv"] + [f"{FINDINGS}/figures/bli.{x}" for x in ("png", "svg", "pdf")]
               if WORDVEC_ENCODERS else [])


rule findings_inference:
    input:
        unpack(findings_run_inputs),
    output:
        json=f"{FINDINGS}/inference.json",
        csv=f"{FINDINGS}/inference.csv",
        md=f"{FINDINGS}/inference.md",
        fig=findings_figure("inference_ci"),
    params:
        k=config["k"],
        run_name=RUN,
        out_dir=FINDINGS,
        B=FINDINGS_A["inference"]["B"],
        seed=FINDINGS_A["inference"]["bootstrap_seed"],
        n_seeds=FINDINGS_A["inference"]["n_seeds"],
        max_pairs=FINDINGS_A["inference"]["corr_max_pairs"] or 0,
        random=" ".join(RANDOM_ENCODERS),
        family=" ".join(WORDVEC_ENCODERS),
    threads: 1
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/findings/inference.log",
    shell:
        BLAS_THREADS + "backretrieval findings-inference " + FINDINGS_RUN_ARGS + " --B {params.B} "
        "--bootstrap-seed {params.seed} --n-seeds {params.n_seeds} --corr-max-pairs {params.max_pairs} "
        "--random-encoders {params.random} --family {params.family} > {log} 2>&1"


rule findings_calibration:
    input:
        unpack(findings_run_inputs),
    output:
        json=f"{FINDINGS}/calibration.json",
        csv=f"{FINDINGS}/calibration.csv",
        md=f"{FINDINGS}/calibration.md",
        soft=f"{FINDINGS}/calibration_soft.csv",
        points=f"{FINDINGS}/calibration_points.csv",
        fig=findings_figure("calibration"),
    params:
        k=config["k"],
        run_name=RUN,
        out_dir=FINDINGS,
        soft_m=" ".join(str(m) for m in FINDINGS_A["calibration"]["soft_m"]),
    threads: 1
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/findings/calibration.log",
    shell:
        BLAS_THREADS + "backretrieval findings-calibration " + FINDINGS_RUN_ARGS + " --soft-m {params.soft_m} > {log} 2>&1"


def _wordvec_inputs(wildcards):
    """The word-vector encoders' embeddings (so the wordvec cache holds their vectors, seed
    dictionaries and maps) and training corpora."""
    out = [text_emb(e, lang) for e in WORDVEC_ENCODERS for lang in config["languages"]]
    out += sorted({config["encoders"][e]["corpus"] for e in WORDVEC_ENCODERS})
    return out


rule findings_bli:
    input:
        dataset=DATASET_DIR,
        metrics=[metrics_file(d) for d in config["directions"]],
        wordvec=_wordvec_inputs,
    output:
        json=f"{FINDINGS}/bli.json",
        tables=BLI_OUTPUTS,
    params:
        k=config["k"],
        run_name=RUN,
        out_dir=FINDINGS,
        specs=" ".join(
            "--spec " + _shlex.quote(f"{e}={json.dumps(config['encoders'][e], sort_keys=True)}") for e in WORDVEC_ENCODERS
        ),
        s=FINDINGS_A["bli"],
    threads: 1
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/findings/bli.log",
    shell:
        BLAS_THREADS + "backretrieval findings-bli --dataset {input.dataset} --metrics {input.metrics} --k {params.k} "
        "--run-name {params.run_name} --out-dir {params.out_dir} {params.specs} --test-size {params.s[test_size]} "
        "--min-count {params.s[min_count]} --seed {params.s[seed]} --csls-k {params.s[csls_k]} > {log} 2>&1"


rule findings_agreement:
    input:
        dataset=DATASET_DIR,
        metrics=[metrics_file(d) for d in config["directions"]],
        points=f"{FINDINGS}/calibration_points.csv",
        bli=[f"{FINDINGS}/bli.csv"] if WORDVEC_ENCODERS else [],
    output:
        json=f"{FINDINGS}/agreement.json",
        csv=f"{FINDINGS}/agreement.csv",
        md=f"{FINDINGS}/agreement.md",
        fig=findings_figure("agreement_clustermap"),
    params:
        k=config["k"],
        run_name=RUN,
        out_dir=FINDINGS,
        bli=lambda wc, input: f"--bli {input.bli}" if input.bli else "",
        s=FINDINGS_A["agreement"],
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/findings/agreement.log",
    shell:
        "backretrieval findings-agreement --dataset {input.dataset} --metrics {input.metrics} --k {params.k} "
        "--run-name {params.run_name} --out-dir {params.out_dir} --points {input.points} {params.bli} "
        "--soft-m {params.s[soft_m]} --B {params.s[B]} --bootstrap-seed {params.s[bootstrap_seed]} > {log} 2>&1"


def other_configs_findings():
    """The committed findings records of the other configurations (their rules run with their
    own --configfile); this config's and the cross-configuration records are excluded."""
    own = {str(Path(FINDINGS) / Path(p).name) for p in FINDINGS_JSON}
    found = sorted(_glob.glob("reports/**/findings/*.json", recursive=True))
    records = [p for p in found if p not in own and not p.startswith(FINDINGS + "/")
               and not p.startswith(FINDINGS_SUMMARY + "/")]
    # a calibration record's points feed the leave-one-dataset-out evaluation
    points = [str(Path(p).parent / "calibration_points.csv") for p in records if Path(p).name == "calibration.json"]
    return records + points


rule findings_document:
    input:
        own=lambda wc: FINDINGS_JSON,
        others=other_configs_findings(),
    output:
        doc=FINDINGS_DOC,
        overall=f"{FINDINGS_SUMMARY}/overall.json",
        lodo=f"{FINDINGS_SUMMARY}/calibration_lodo.json",
        done=touch(f"{FLAGS}/findings.done"),
    params:
        summary=FINDINGS_SUMMARY,
        others=" ".join(p for p in other_configs_findings() if p.endswith(".json")),
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/findings/document.log",
    shell:
        # README.md's generated verdict block is rewritten in place (not a declared output:
        # a failed job must never delete the README)
        "backretrieval findings-document --records {input.own} {params.others} --doc {output.doc} "
        "--summary-dir {params.summary} --readme README.md > {log} 2>&1"


rule findings:
    input:
        lambda wc: FINDINGS_JSON,
        FINDINGS_DOC,
        f"{FLAGS}/findings.done",
