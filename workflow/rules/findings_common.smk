# Helpers and settings of the findings rules (workflow/rules/findings.smk); blocks as there.
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


def findings_dir(wildcards, output):
    """<reports_dir>/findings, from a rule's JSON record output."""
    return str(Path(output.json).parent)


# ---- findings-a ------------------------------------------------------------------------------
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
BLI_OUTPUTS = (
    [f"{FINDINGS}/{name}" for name in ("bli.csv", "bli.md", "bli_test_dictionary.csv", "figures/bli.png",
                                       "figures/bli.svg", "figures/bli.pdf")]
    if WORDVEC_ENCODERS
    else []
)


def wordvec_inputs(wildcards):
    """The word-vector encoders' embeddings (so the wordvec cache holds their vectors, seed
    dictionaries and maps) and training corpora."""
    embeddings = [text_emb(e, lang) for e in WORDVEC_ENCODERS for lang in config["languages"]]
    return [*embeddings, *sorted({config["encoders"][e]["corpus"] for e in WORDVEC_ENCODERS})]


def wordvec_spec_args():
    specs = [f"{e}={json.dumps(config['encoders'][e], sort_keys=True)}" for e in WORDVEC_ENCODERS]
    return " ".join(f"--spec {_shlex.quote(x)}" for x in specs)


def other_configs_findings():
    """The committed findings records of the other configurations (their rules run with their
    own --configfile) and the calibration points beside them; this config's records and the
    cross-configuration ones are excluded."""
    found = sorted(_glob.glob("reports/**/findings/*.json", recursive=True))
    own = {Path(FINDINGS), Path(FINDINGS_SUMMARY)}
    records = [p for p in found if Path(p).parent not in own]
    points = [str(Path(p).parent / "calibration_points.csv") for p in records if Path(p).name == "calibration.json"]
    return [*records, *points]
