# Helpers and settings of the findings rules (workflow/rules/findings.smk).
import glob as _glob

from backretrieval.steps.settings import ANALYSES as FINDINGS_ANALYSES
from backretrieval.steps.settings import english_only_encoders, findings_settings

FS = findings_settings(config)
FINDINGS = str(Path(config["reports_dir"]) / "findings")
FINDINGS_ART = f"{layout.artifacts_root(config)}.findings"
FINDINGS_SUMMARY = "reports/findings_summary"
FINDINGS_DOC = "docs/FINDINGS.md"
FINDINGS_JSON = [f"{FINDINGS}/{a}.json" for a in FINDINGS_ANALYSES]
FINDINGS_SYNTHETIC = config["dataset"]["source"] == "synthetic"
WORDVEC_ENCODERS = sorted(e for e, s in config["encoders"].items() if s.get("type") == "wordvec")
RANDOM_ENCODERS = sorted(e for e, s in config["encoders"].items() if s.get("type") == "random")
ENGLISH_ONLY_ENCODERS = english_only_encoders(config)
DIRECTION_LANGS = sorted({lang for d in config["directions"] for lang in d.split("-")})
METRICS_FILES = [metrics_file(d) for d in config["directions"]]


def findings_figure(name):
    return [f"{FINDINGS}/figures/{name}.{ext}" for ext in ("png", "svg", "pdf")]


def findings_tables(name, samples=False):
    exts = ("csv", "md", "samples.csv") if samples else ("csv", "md")
    return [f"{FINDINGS}/{name}.{ext}" for ext in exts]


def findings_dir(wildcards, output):
    """<reports_dir>/findings, the folder of the rule's declared JSON record."""
    return str(Path(output.json).parent)


def findings_run_inputs(wildcards=None):
    """The main pipeline's artifacts an analysis of this config reads (every direction)."""
    return {
        "dataset": DATASET,
        "metrics": METRICS_FILES,
        "ranks": [ranks_file(d) for d in config["directions"]],
        "samples": [samples_file(d) for d in config["directions"]],
        "image": image_emb(),
        "text": [text_emb(e, lang) for e in config["encoders"] for lang in config["languages"]],
    }


def text_flags(encoders, langs, path_of):
    """ENCODER:LANG=PATH of every encoder and language (the --text of the image-quality, sample-size and hubness steps)."""
    return " ".join(f"{e}:{lang}={path_of(e, lang)}" for e in encoders for lang in langs)


IQ = FS["image_quality"]
IQ_BACKBONES = dict(IQ["backbones"])


def iq_image(backbone):
    return f"{FINDINGS_ART}/image/{backbone}.npz"


SS = FS["sample_size"]
SS_LANGS = sorted({lang for d in SS["directions"] for lang in d.split("-")})


if FINDINGS_SYNTHETIC:
    # the SYNTHETIC generator scaled up (its first items equal the default's), prepared as any dataset
    _syn = SS["synthetic"]
    SS_DATASET_NAME = f"synthetic-findings-{_syn['n_items']}-{'-'.join(_syn['languages'])}-s{_syn['seed']}"
    SS_DATASET = str(layout.PREPARED / SS_DATASET_NAME)
    SS_IMAGE = f"{FINDINGS_ART}/sample_size/image/{config['image_backbone']}.npz"

    def ss_text(encoder, lang):
        return f"{FINDINGS_ART}/sample_size/text/{encoder}/{lang}.{config['text_field']}.npz"

else:
    SS_DATASET = DATASET
    SS_IMAGE = image_emb()
    ss_text = text_emb


HUB = FS["hubness"]


# BLI writes its tables and figure only when the config has word-vector encoders
BLI_OUTPUTS = (
    [
        *findings_tables("bli"),
        f"{FINDINGS}/bli_test_dictionary.csv",
        *findings_figure("bli"),
    ]
    if WORDVEC_ENCODERS
    else []
)


def wordvec_inputs(wildcards):
    """The word-vector encoders' embeddings (their vectors, seed dictionaries and maps are then
    in wordvec's training cache, a side store) and training corpora."""
    embeddings = [text_emb(e, lang) for e in WORDVEC_ENCODERS for lang in config["languages"]]
    return [
        *embeddings,
        *(p for e in WORDVEC_ENCODERS for p in _spec_input_paths(config["encoders"][e])),
    ]


def wordvec_spec_args(wildcards, input):
    return " ".join(f"--spec {shlex.quote(f'{e}={encoder_spec(e)}')}" for e in WORDVEC_ENCODERS)


def other_configs_findings():
    """The committed findings records of the other configurations (each is produced by its own
    `snakemake findings --configfile ...`) and the calibration points beside them."""
    own = {Path(FINDINGS), Path(FINDINGS_SUMMARY)}
    records = [p for p in sorted(_glob.glob("reports/**/findings/*.json", recursive=True)) if Path(p).parent not in own]
    points = [str(Path(p).parent / "calibration_points.csv") for p in records if Path(p).name == "calibration.json"]
    # the joint bootstrap's replicate tables (a record made before it has none; the verdict names it)
    replicates = [
        str(Path(p).parent / "inference_replicates.csv")
        for p in records
        if Path(p).name == "inference.json" and (Path(p).parent / "inference_replicates.csv").is_file()
    ]
    return [*records, *points, *replicates]
