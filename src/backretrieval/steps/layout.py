"""The artifact layout: config → path of every artifact, and readers of the shared artifacts.

The only place that maps a config to paths (see docs/ARCHITECTURE.md). The Snakemake rules
(``workflow/rules/common.smk``) and the DVC stage generator (``scripts/dvc_stages.py``) take
their paths from here and hand them to the file-based CLI; no step derives a path itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

# the readers of the artifacts, defined in the layers below (re-exported: the steps read them here)
from .._util.io import load_embedding as load_embedding
from .._util.io import ranks_path as ranks_path
from .._util.io import skipped_reason as skipped_reason

if TYPE_CHECKING:
    import numpy as np

#: The trained heads of the case study (backretrieval.study.case_study.HEADS; repeated here so
#: the layout imports nothing heavy: the CLI builds its parser from it).
HEADS = ("triplet", "tripletxl")


# -------------------------------------------------------------------------------------------
# main pipeline

PREPARED = Path("data/prepared")


def dataset_root(cfg: dict) -> Path:
    return PREPARED / cfg["dataset"]["name"]


def artifacts_root(cfg: dict) -> Path:
    return Path("artifacts") / cfg["run_name"]


def logs_root(cfg: dict) -> Path:
    return Path("logs") / cfg["run_name"]


def dataset_check_path(cfg: dict) -> Path:
    """The record that the prepared dataset fits the config (``check-dataset``)."""
    return artifacts_root(cfg) / "checks" / "dataset.json"


def flags_root(cfg: dict) -> Path:
    """Completion flags of the rules whose other outputs are all committed reports."""
    return artifacts_root(cfg) / "done"


def text_emb_path(cfg: dict, encoder: str, lang: str) -> Path:
    return artifacts_root(cfg) / "text" / encoder / f"{lang}.{cfg['text_field']}.npz"


def image_emb_path(cfg: dict, backbone: str | None = None) -> Path:
    return artifacts_root(cfg) / "image" / f"{backbone or cfg['image_backbone']}.npz"


def samples_path(cfg: dict, direction: str) -> Path:
    return artifacts_root(cfg) / "samples" / f"{direction}.json"


def metrics_path(cfg: dict, direction: str) -> Path:
    return artifacts_root(cfg) / "metrics" / f"{direction}.csv"


def metrics_part_path(cfg: dict, direction: str, group: int) -> Path:
    """The metrics CSV of seed group ``group`` of a direction (``seed_group_size``; ranks beside it)."""
    return artifacts_root(cfg) / "metric_parts" / direction / f"{group}.csv"


def correlations_path(cfg: dict) -> Path:
    return artifacts_root(cfg) / "correlations.csv"


#: The report step's outputs under ``reports_dir``: name (a CLI flag and a rule output) → path.
REPORT_FILES = {
    "table1": "table1.md",
    "table1_tex": "table1.tex",
    "corr_ci": "correlations_ci.csv",
    "recall_ci": "recall_ci.csv",
    "metrics": "metrics.json",
    "headline": "headline.json",
    "significance": "significance.csv",
    "fig2_png": "figures/fig2_scatter.png",
    "fig2_svg": "figures/fig2_scatter.svg",
    "fig2_pdf": "figures/fig2_scatter.pdf",
    "fig2_csv": "plots/fig2_xlr_vs_bkr.csv",
    "means": "plots/encoder_means.csv",
}


#: The report step's outputs on a dataset without parallel texts (``"parallel": false`` in its
#: dataset.json): BkR only. No Table 1, Figure 2, correlations or significance of BkR vs CORR:
#: all of them compare with XLR, which needs ground-truth correspondences between languages.
BKR_REPORT_FILES = {
    "bkr_report": "bkr_report.md",
    "bkr_ci": "bkr_ci.csv",
    "ranking": "ranking.csv",
    "pairwise": "pairwise.csv",
    "metrics": "metrics.json",
    "headline": "headline.json",
    "bkr_png": "figures/bkr_per_encoder.png",
    "bkr_svg": "figures/bkr_per_encoder.svg",
    "bkr_pdf": "figures/bkr_per_encoder.pdf",
    "means": "plots/encoder_means.csv",
}


def report_files(parallel: bool) -> dict[str, str]:
    """The report step's outputs (name → path under ``reports_dir``) for parallel or
    non-parallel data."""
    return REPORT_FILES if parallel else BKR_REPORT_FILES


def dataset_parallel(cfg: dict) -> bool:
    """Whether the configured dataset has parallel texts, known before it is prepared: every
    generated or downloaded source is parallel; a bring-your-own folder (``source: prepared``)
    says so in its ``dataset.json`` (``parallel``, default true). A folder or dataset.json that
    cannot be read, or a ``parallel`` that is not a boolean, counts as parallel here: preparing
    the dataset then fails with the validator's error."""
    if cfg["dataset"].get("source") != "prepared":
        return True
    raw = prepared_dataset_json(cfg)
    return not (raw is not None and raw.get("parallel", True) is False)


def prepared_dataset_json(cfg: dict) -> dict | None:
    """The ``dataset.json`` of a bring-your-own folder (``source: prepared``) as an object, or
    None when it cannot be read yet or is not an object."""
    ds = cfg["dataset"]
    path = Path(os.path.expanduser(str((ds.get("options") or {}).get("path", "")))) / "dataset.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return raw if isinstance(raw, dict) else None


def report_paths(cfg: dict, parallel: bool = True) -> dict[str, Path]:
    return {name: Path(cfg["reports_dir"]) / rel for name, rel in report_files(parallel).items()}


# -------------------------------------------------------------------------------------------
# findings (``snakemake findings``)

#: Generated from every configuration's findings records (not one configuration's outputs).
FINDINGS_DOC = Path("docs/FINDINGS.md")
FINDINGS_SUMMARY = Path("reports/findings_summary")


def findings_root(cfg: dict) -> Path:
    """``<reports_dir>/findings``: every analysis's record, tables and figures."""
    return Path(cfg["reports_dir"]) / "findings"


def findings_artifacts_root(cfg: dict) -> Path:
    """The findings' intermediate artifacts, beside (not inside) the run's artifacts: DVC
    versions the findings as their own stage."""
    return Path(f"{artifacts_root(cfg)}.findings")


def findings_record_path(cfg: dict, analysis: str) -> Path:
    return findings_root(cfg) / f"{analysis}.json"


def findings_backbone_image_path(cfg: dict, backbone: str) -> Path:
    """Image features of another backbone on the config's dataset (image quality)."""
    return findings_artifacts_root(cfg) / "image" / f"{backbone}.npz"


def findings_sample_size_dataset(cfg: dict, synthetic: dict) -> Path:
    """The SYNTHETIC generator scaled up for the sample-size analysis (``synthetic``: its
    ``n_items``, ``languages`` and ``seed``), prepared as any dataset."""
    langs = "-".join(synthetic["languages"])
    return PREPARED / f"synthetic-findings-{synthetic['n_items']}-{langs}-s{synthetic['seed']}"


def findings_sample_size_text_path(cfg: dict, encoder: str, lang: str) -> Path:
    return findings_artifacts_root(cfg) / "sample_size" / "text" / encoder / f"{lang}.{cfg['text_field']}.npz"


def findings_sample_size_image_path(cfg: dict) -> Path:
    return findings_artifacts_root(cfg) / "sample_size" / "image" / f"{cfg['image_backbone']}.npz"


# -------------------------------------------------------------------------------------------
# case study and human study


def case_root(cfg: dict) -> Path:
    return artifacts_root(cfg) / "case"


def case_reports(cfg: dict) -> Path:
    return Path(cfg["reports_dir"]) / "case_study"


def chosen_base_path(cfg: dict) -> Path:
    return case_root(cfg) / "chosen_base.json"


def select_bkr_path(cfg: dict) -> Path:
    return case_root(cfg) / "select_bkr.csv"


def case_bkr_path(cfg: dict) -> Path:
    return case_root(cfg) / "bkr.csv"


def case_hits_path(cfg: dict) -> Path:
    return case_root(cfg) / "bkr_hits.npz"


def field_path(cfg: dict, encoder: str, lang: str, field: str) -> Path:
    return case_root(cfg) / "text" / encoder / f"{lang}.{field}.npz"


def repr_path(cfg: dict, model: str, lang: str) -> Path:
    """Evaluated representation of a model: base encoders under repr/, trained heads under
    repr_heads/ (kept apart so the base-selection step never depends on the heads). A head is
    named by its run id ``<head>@<training seed>`` (:func:`backretrieval.study.case_config.run_id`)."""
    head, sep, seed = model.partition("@")
    if sep:
        return head_repr_path(cfg, head, seed, lang)
    if model in HEADS:
        raise ValueError(f"repr_path: a head is trained once per training seed; name its run ({model}@<seed>)")
    return case_root(cfg) / "repr" / model / f"{lang}.npz"


def head_repr_path(cfg: dict, head: str, training_seed: int | str, lang: str) -> Path:
    """The evaluated representation of ``head`` trained with ``training_seed`` (a Snakemake
    wildcard such as ``{tseed}`` passes through)."""
    return case_root(cfg) / "repr_heads" / head / f"seed{training_seed}" / f"{lang}.npz"


def head_paths(cfg: dict, head: str, training_seed: int | str) -> dict[str, Path]:
    """The case-train step's files of one head trained with one training seed (weights,
    metadata, history, loss curve)."""
    heads = case_root(cfg) / "heads" / f"seed{training_seed}"
    return {
        "head": heads / f"{head}.pt",
        "meta": heads / f"{head}.json",
        "history": heads / f"{head}.history.csv",
        "curve": case_reports(cfg) / "figures" / f"loss_{head}_seed{training_seed}.png",
    }


#: The case-report step's outputs under ``<reports_dir>/case_study``.
CASE_REPORT_FILES = {
    "table2": "table2.md",
    "table2_tex": "table2.tex",
    "table2_csv": "table2.csv",
    "sig": "table2_significance.csv",
    "fig3_png": "figures/fig3_boxplot.png",
    "fig3_svg": "figures/fig3_boxplot.svg",
    "fig3_pdf": "figures/fig3_boxplot.pdf",
    "metrics": "metrics.json",
}


def case_report_paths(cfg: dict) -> dict[str, Path]:
    return {name: case_reports(cfg) / rel for name, rel in CASE_REPORT_FILES.items()}


def human_dir(cfg: dict) -> Path:
    return case_root(cfg) / "human"


def human_paths(cfg: dict) -> dict[str, Path]:
    """The human-study files: blinded sheets + sealed key, the page copied to the reports,
    SIMULATED ratings, and the tally."""
    return {
        "template": human_dir(cfg) / "ratings_template.csv",
        "html": human_dir(cfg) / "rating_sheet.html",
        "key": human_dir(cfg) / "key.sealed.json",
        "page": case_reports(cfg) / "rating_sheet.html",
        "simulated": human_dir(cfg) / "ratings.simulated.csv",
        "tally_md": case_reports(cfg) / "human_study.md",
        "tally_json": case_reports(cfg) / "human_study.json",
    }


def ratings_path(cfg: dict) -> Path:
    """The ratings the tally reads: ``human_study.ratings`` or the SIMULATED rater's file."""
    from ..study.case_config import human_cfg

    hs = human_cfg(cfg)
    return Path(hs["ratings"]) if hs.get("ratings") else human_paths(cfg)["simulated"]


# -------------------------------------------------------------------------------------------
# readers


def _load(path: Path) -> tuple[dict[str, int], np.ndarray]:
    from .._util import io

    z = io.load_npz(path)
    ids = [str(x) for x in z["ids"]]
    return {x: i for i, x in enumerate(ids)}, z["emb"]
