"""The Snakemake workflow's paths (workflow/rules/*.smk): a validated config -> the files of
every job, its input functions, and the settings that are locations (absolute, machine-dependent).

The rules declare every file a job reads and writes and hand them to the file-based CLI
(`backretrieval <step> --dataset {input.dataset} ... --out {output}`, each rule showing its
command); settings go through `params:`, read from the config in the rule itself, so a changed
setting reruns exactly the rules that use it. Every job runs in a minimal
shadow directory (only its declared inputs linked there), so a read of an undeclared file fails.
Locations outside the declared files (downloads, the embedding cache, a mirror, anything outside
the working directory) are absolute, passed through params that are functions of the job's
`input`: Snakemake treats those as derived and does not compare them, so moving the checkout or
`cache_dir` reruns nothing; such a rule also has the param `rerun_trigger` (:func:`rerun_on`).

Paths come from :mod:`backretrieval.steps.layout` (the one config -> path mapping), settings from
:mod:`backretrieval.steps.settings`. Nothing heavy is imported: Snakemake parses the workflow in
every job it spawns.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from .._util.device import DEFAULT_MODEL_THREADS
from .._util.hashing import tree_sha256
from ..data.prepare import DOWNLOAD_DIRS
from ..images import backbone_threads
from ..reporting.results_doc import READS as RESULTS_DOC_READS
from . import layout
from .results_doc import listed_configs
from .settings import seed_groups

#: Content hashes of bring-your-own folders, cached by (size, mtime, ctime, inode) per file.
HASH_CACHE = Path(".snakemake/backretrieval/content-hashes.json")
#: dataset/corpus options that name a location; a value with "://" is a URL and stays as it is
PATH_OPTIONS = {"mirror", "stair_mirror", "coco_mirror", "download_dir", "images_dir", "mapping_csv", "npy", "path"}
#: ... of them, those that name local data the dataset is made from (not where a job downloads)
SOURCE_OPTIONS = PATH_OPTIONS - {"download_dir"}
#: encoder spec keys that name files the encoder reads (declared inputs) ...
SPEC_INPUTS = {
    "wordvec": ("corpus",),
    "precomputed": ("npy", "ids"),
    "glove-translate": ("glove", "translations"),
    "laser": ("bpe_codes", "bpe_vocab", "encoder"),
    "muse": ("vectors",),
    "rcsls": ("vectors",),
}
#: ... and folders it keeps between runs or reads as a whole (absolute; wordvec's cache default)
SPEC_STORES: dict[str, dict[str, str | None]] = {
    "wordvec": {"cache_dir": ".cache/wordvec", "dict_dir": None},
    "muse": {"vectors_dir": None},
    "rcsls": {"vectors_dir": None},
}
#: The category and caption (relative to workflow/rules) of each output that Snakemake's report shows.
CAPTIONS = {
    **{name: ("Tables", f"../report/{name}.rst") for name in ("table1", "significance", "pairwise", "bkr_report")},
    **{name: ("Tables", "../report/ci.rst") for name in ("corr_ci", "recall_ci", "bkr_ci")},
    "means": ("Tables", "../report/encoder_means.rst"),
    "fig2_png": ("Figures", "../report/fig2.rst"),
    "bkr_png": ("Figures", "../report/bkr_per_encoder.rst"),
    "table2": ("Case study", "../report/table2.rst"),
    "fig3_png": ("Case study", "../report/fig3.rst"),
    "curve": ("Case study", "../report/loss.rst"),
    "tally_md": ("Case study", "../report/human.rst"),
}


def as_json(obj: Any) -> str:
    """Canonical JSON: how a structured setting reaches a step (one quoted argument)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


def source_paths(opts: dict | None) -> list[str]:
    """The local data a dataset or corpus section's ``options`` name (SOURCE_OPTIONS, nested
    sections included; a URL is not local), as configured and normalized."""
    found = [p for value in (opts or {}).values() if isinstance(value, dict) for p in source_paths(value)]
    named = [v for k, v in (opts or {}).items() if k in SOURCE_OPTIONS and isinstance(v, str) and v]
    return [os.path.normpath(v) for v in named if "://" not in v] + found


def rerun_on(setting: Any) -> str:
    """The param `rerun_trigger`: ``setting`` (a dataset, corpus or encoder section) as configured.
    No command uses it: the job gets the setting in machine-dependent form (absolute locations)
    through a param of `input`, which Snakemake does not record; this one reruns the rule when
    the setting changes, and moving the checkout or `cache_dir` reruns nothing."""
    return as_json(setting)


def spec_input_paths(spec: dict) -> list[str]:
    """The files an encoder spec names (SPEC_INPUTS), as configured."""
    out: list[str] = []
    for key in SPEC_INPUTS.get(spec["type"], ()):
        value = spec.get(key)
        if isinstance(value, dict):
            out += [str(v) for v in value.values()]
        elif value:
            out.append(str(value))
    return out


class Plan:
    """The files and settings of every job of one config (validated). ``heavy_threads``: the
    cores a model job claims (all Snakemake was given: scheduling only)."""

    def __init__(self, config: dict, workdir: Path, heavy_threads: Any = 4):
        self.config = config
        self.workdir = workdir
        self.run = config["run_name"]
        self.dataset = str(layout.dataset_root(config))
        self.check = str(layout.dataset_check_path(config))
        self.logs = str(layout.logs_root(config))
        # reports are committed: a rule whose outputs all are also writes a flag here, the target
        self.flags = str(layout.flags_root(config))
        # parallel texts (else no XLR: the BkR report instead of Table 1, Figure 2, correlations)
        self.parallel = layout.dataset_parallel(config)
        self.reports = {name: str(p) for name, p in layout.report_paths(config, self.parallel).items()}
        # a fixed setting, never the cores a job got: the same bytes with --cores 1 and 8
        self.model_threads = int(config.get("model_threads", DEFAULT_MODEL_THREADS))
        self.heavy_threads = heavy_threads
        self.image_threads = backbone_threads(config["backbones"][config["image_backbone"]])
        self.seed_group_size = config.get("seed_group_size")
        self.seed_groups = seed_groups(list(config["seeds"]), self.seed_group_size)
        self.case: dict | None = None
        self.human: dict | None = None
        # the case study's {tseed} values (constrained in common.smk): none without one
        self.case_training_seeds: list[int] = []
        self.human_tally = False
        if config.get("case_study"):
            self._case_study()

    # ---- locations ------------------------------------------------------------------------
    def absolute(self, path: Any) -> str:
        """A location outside the declared files: absolute, the same inside a shadow directory."""
        return str((self.workdir / os.path.expanduser(str(path))).resolve())

    def job_path(self, path: Any) -> str:
        """A declared input as a job sees it: relative inside the working directory (the shadow
        directory links it), absolute where it leaves it (shadow refuses '..')."""
        p = Path(os.path.expanduser(str(path)))
        if p.is_absolute():
            return str(p)
        inside = os.path.normpath(p)
        return self.absolute(p) if inside == ".." or inside.startswith("../") else inside

    def cache(self, wildcards: Any, input: Any) -> str:
        """The embedding cache (a side store; a param of `input`)."""
        return self.absolute(self.config["cache_dir"])

    # ---- datasets and corpora --------------------------------------------------------------
    def _job_options(self, opts: dict | None) -> dict:
        out: dict = {}
        for key, value in (opts or {}).items():
            if isinstance(value, dict):
                out[key] = self._job_options(value)
            elif key in PATH_OPTIONS and isinstance(value, str) and "://" not in value:
                out[key] = self.absolute(value)
            else:
                out[key] = value
        return out

    def dataset_spec(self, spec: dict, name: str) -> str:
        """A dataset/corpus section for `backretrieval step prepare`: locations absolute (downloads are
        kept in data/downloads, outside the shadow directory); a bring-your-own folder (source:
        prepared) is the rule's declared input instead."""
        spec = {**{k: v for k, v in spec.items() if k != "languages"}, "name": name}
        opts = self._job_options(spec.get("options"))
        if spec["source"] == "prepared":
            opts.pop("path", None)
        elif spec["source"] in DOWNLOAD_DIRS:
            opts.setdefault("download_dir", self.absolute(DOWNLOAD_DIRS[spec["source"]]))
        spec["options"] = opts
        return as_json(spec)

    def byo_folder(self, spec: Mapping[str, Any]) -> str | None:
        """The user's folder of a `source: prepared` dataset/corpus (a declared input), else None."""
        return self.job_path(spec["options"]["path"]) if spec["source"] == "prepared" else None

    def source_content(self, spec: Mapping[str, Any]) -> str:
        """The param `content` of prepare: an edit of the data it is made from reruns it and all
        after it. A bring-your-own folder: its sha256. Otherwise the local data its options name
        (a mirror, an images folder, a features file; DVC's deps of the data stage): the sha256 of
        each by name, where it exists; none: empty. A job's own download is its output, not this."""
        folder = self.byo_folder(spec)
        if folder:
            return tree_sha256(folder, HASH_CACHE)
        local = [(p, tree_sha256(p, HASH_CACHE)) for p in source_paths(spec.get("options")) if os.path.exists(p)]
        return as_json(local) if local else ""

    def corpus(self, name: str) -> dict:
        return (self.config.get("corpora") or {})[name]

    def dataset_source(self, wildcards: Any) -> dict:
        """Input function: the dataset's bring-your-own folder, if any."""
        folder = self.byo_folder(self.config["dataset"])
        return {"source": folder} if folder else {}

    def corpus_source(self, wildcards: Any) -> dict:
        """Input function: the corpus's bring-your-own folder, if any."""
        folder = self.byo_folder(self.corpus(wildcards.corpus))
        return {"source": folder} if folder else {}

    # ---- encoders --------------------------------------------------------------------------
    def encoder_spec(self, enc: str) -> str:
        """An encoder's section for a job: input files as the job sees them, stores absolute."""
        spec = dict(self.config["encoders"][enc])
        for key in SPEC_INPUTS.get(spec["type"], ()):
            value = spec.get(key)
            if isinstance(value, dict):
                spec[key] = {k: self.job_path(v) for k, v in value.items()}
            elif value:
                spec[key] = self.job_path(value)
        for key, default in SPEC_STORES.get(spec["type"], {}).items():
            value = spec.get(key, default)
            if value is not None:
                spec[key] = self.absolute(value)
        return as_json(spec)

    def encoder_extra_inputs(self, wildcards: Any) -> list[str]:
        """Input function: files an encoder reads besides the dataset (a word-vector training
        corpus, precomputed matrices and id lists)."""
        return [self.job_path(p) for p in spec_input_paths(self.config["encoders"][wildcards.encoder])]

    def embed_threads(self, wildcards: Any) -> int:
        """Cores an embedding job claims: the encoder's inference threads where its spec sets
        them (so other jobs run beside it), else all cores (models computing with model_threads)."""
        from ..encoders import inference_threads

        return inference_threads(self.config["encoders"][wildcards.encoder]) or self.heavy_threads

    # ---- main pipeline ---------------------------------------------------------------------
    def text_emb(self, encoder: str, lang: str) -> str:
        return str(layout.text_emb_path(self.config, encoder, lang))

    def text_embs(self, encoder: str) -> list[str]:
        """One encoder's main text embeddings, one per language (one embed_text job)."""
        return [self.text_emb(encoder, lang) for lang in self.config["languages"]]

    def all_text_embs(self) -> list[str]:
        return [self.text_emb(e, lang) for e in self.config["encoders"] for lang in self.config["languages"]]

    def image_emb(self) -> str:
        return str(layout.image_emb_path(self.config))

    def samples_file(self, direction: str) -> str:
        return str(layout.samples_path(self.config, direction))

    def samples_files(self) -> list[str]:
        return [self.samples_file(d) for d in self.config["directions"]]

    def metrics_file(self, direction: str) -> str:
        return str(layout.metrics_path(self.config, direction))

    def metrics_files(self) -> list[str]:
        return [self.metrics_file(d) for d in self.config["directions"]]

    def ranks_file(self, direction: str) -> str:
        return str(layout.ranks_path(layout.metrics_path(self.config, direction)))

    def ranks_files(self) -> list[str]:
        return [self.ranks_file(d) for d in self.config["directions"]]

    def metrics_outputs(self, direction: str) -> dict:
        return {"csv": self.metrics_file(direction), "ranks": self.ranks_file(direction)}

    def metrics_part_outputs(self, direction: str, group: Any) -> dict:
        """A seed group's metrics CSV and ranks (``seed_group_size``; {group}: its index)."""
        csv = str(layout.metrics_part_path(self.config, direction, group))
        return {"csv": csv, "ranks": str(layout.ranks_path(csv))}

    def metrics_inputs(self, wildcards: Any) -> dict:
        """Input function: per encoder (config order) its source- then target-language embedding
        (metrics --text-emb), besides the dataset, the direction's samples and the image features."""
        src, tgt = wildcards.direction.split("-")
        return {
            "dataset": self.dataset,
            "samples": self.samples_file(wildcards.direction),
            "images": self.image_emb(),
            "text": [self.text_emb(e, lang) for e in self.config["encoders"] for lang in (src, tgt)],
        }

    def metrics_parts(self, wildcards: Any) -> dict:
        """Input function: the seed groups' metrics CSVs and ranks of a direction, in group order."""
        parts = [self.metrics_part_outputs(wildcards.direction, str(g)) for g in range(len(self.seed_groups))]
        return {"csv": [p["csv"] for p in parts], "ranks": [p["ranks"] for p in parts]}

    def report_inputs(self) -> dict:
        """What the report step reads: the samples (the query items, the unit of every test and
        interval) and, with parallel texts, the image features (CORR's per-query contributions
        to Table 1's marks, which test BkR - CORR)."""
        extra = {"samples": self.samples_files(), **({"image": self.image_emb()} if self.parallel else {})}
        files = {"metrics": self.metrics_files(), "ranks": self.ranks_files(), **extra}
        return {**files, "dataset": self.dataset, "text": self.all_text_embs()}

    def report_outputs(self) -> dict:
        """With parallel texts: the correlations, Table 1, Figure 2 (layout.REPORT_FILES); else
        (no XLR without them) the BkR report (layout.BKR_REPORT_FILES)."""
        own = {"correlations": str(layout.correlations_path(self.config))} if self.parallel else {}
        return {**own, **self.reports}

    def all_outputs(self) -> list[str]:
        """The default target: the reports, the flags of the steps without one, the dataset check."""
        flags = [self.check, f"{self.flags}/report.done"]
        if self.case:
            flags.append(f"{self.flags}/case_report.done")
            if self.human_tally:
                flags.append(f"{self.flags}/human_tally.done")
        return self.report_files() + flags

    def report_files(self) -> list[str]:
        files = list(self.reports.values())
        if self.case:
            from ..study.case_config import HEADS

            files += [
                self.case_reports["table2"],
                self.case_reports["fig3_png"],
                *(
                    str(layout.head_paths(self.config, h, s)["curve"])
                    for h in HEADS
                    for s in self.case["training_seeds"]
                ),
                self.human_files["page"],
            ] + ([self.human_files["tally_md"]] if self.human_tally else [])
        return files

    # ---- case study ------------------------------------------------------------------------
    def _case_study(self) -> None:
        from ..study import case_config as cs

        cfg = self.config
        case = self.case = cs.case_cfg(cfg)
        human = self.human = cs.human_cfg(cfg)
        self.case_reports = {name: str(p) for name, p in layout.case_report_paths(cfg).items()}
        self.human_files = {name: str(p) for name, p in layout.human_paths(cfg).items()}
        self.chosen = str(layout.chosen_base_path(cfg))
        self.select_bkr = str(layout.select_bkr_path(cfg))
        self.case_bkr = str(layout.case_bkr_path(cfg))
        self.case_hits = str(layout.case_hits_path(cfg))
        # the evaluated runs: baseline, base encoders, each head once per training seed (<head>@<seed>)
        self.case_runs = cs.runs(case)
        self.case_training_seeds = list(case["training_seeds"])
        # the human study rates one sheet: the base encoders and every training seed's heads
        self.human_runs = [r for r in cs.runs(case) if cs.parse_run(r)[0] in cs.models(case)]
        self.human_langs = [human["source_lang"], human["target_lang"]]
        self.case_langs = list(case["languages"])
        # what case_train reads: the base encoders' title and body embeddings (case_embed's fields)
        self.case_base_fields = [f for e in case["base_encoders"] for f in self.case_fields(e)]
        self.train_corpus = self.job_path(case["train_corpus"]) if case.get("train_corpus") else None
        self.human_ratings = self.job_path(layout.ratings_path(cfg))
        # a tally needs ratings: human ones or, on the synthetic dataset only, the SIMULATED rater
        self.human_tally = bool(human.get("ratings")) or cfg["dataset"]["source"] == "synthetic"

    def case_inputs(self, wildcards: Any = None) -> dict:
        """Input function: the prepared dataset and, when set, the training corpus of a case step."""
        return {"dataset": self.dataset, **({"corpus": self.train_corpus} if self.train_corpus else {})}

    def case_section(self, keys: tuple[str, ...] | None = None) -> str:
        """A case-study step's ``--case``: the resolved section without ``train_corpus`` (a
        declared input), or only its ``keys``."""
        case = {k: v for k, v in (self.case or {}).items() if k != "train_corpus"}
        return as_json(case if keys is None else {k: v for k, v in case.items() if k in keys})

    def case_embed_after(self, wildcards: Any) -> list[str]:
        """Input function: the same encoder's main embeddings, so case_embed reads the cache they
        filled instead of embedding the titles at the same time (same bits either way)."""
        return self.text_embs(wildcards.encoder)

    def case_fields(self, encoder: str) -> list[str]:
        """Per case-study language its title then body embedding (--out-fields, --fields)."""
        return [
            str(layout.field_path(self.config, encoder, lang, f)) for lang in self.case_langs for f in ("title", "body")
        ]

    def case_reprs(self, models: list[str], langs: list[str] | None = None) -> list[str]:
        """Per model, per language its representation (model-major, as --repr expects)."""
        return [str(layout.repr_path(self.config, m, lang)) for m in models for lang in (langs or self.case_langs)]

    def case_embed_outputs(self, encoder: str) -> dict:
        """case_embed's outputs: the encoder's fields (case_fields) and its representations."""
        return {"fields": self.case_fields(encoder), "reprs": self.case_reprs([encoder])}

    def head_outputs(self) -> dict:
        """case_train's outputs, per {head} and training seed {tseed}."""
        files = layout.head_paths(self.config, "{head}", "{tseed}")
        reprs = [str(layout.head_repr_path(self.config, "{head}", "{tseed}", lang)) for lang in self.case_langs]
        return {**{k: str(files[k]) for k in ("head", "meta", "history", "curve")}, "reprs": reprs}

    # ---- docs/RESULTS.md ---------------------------------------------------------------------
    def results_doc_runs(self, runs_file: str) -> list[tuple[str, str]]:
        """(config file, reports folder) of every listed run configuration; called by input
        functions only, so a run in another working directory (no run list there) still parses."""
        runs = []
        for cfg_file in listed_configs(runs_file):
            with open(cfg_file, encoding="utf-8") as f:
                cfg = yaml.safe_load(f)
            runs.append((cfg_file, str(layout.report_paths(cfg)["metrics"].parent)))
        return runs

    def results_doc_reports(self, runs_file: str) -> list[str]:
        """The report files the document reads: those that exist, and this config's own reports."""
        own = {self.reports["metrics"], self.reports.get("table1")}
        files = []
        for _, reports_dir in self.results_doc_runs(runs_file):
            for rel in RESULTS_DOC_READS:
                path = str(Path(reports_dir) / rel)
                if path in own or Path(path).exists():
                    files.append(path)
        return files


def source_flag(wildcards: Any, input: Any) -> list[str]:
    """``--source-dir FOLDER`` (the rule quotes each) of a bring-your-own folder, else none."""
    return ["--source-dir", input.source] if hasattr(input, "source") else []


def corpus_flag(wildcards: Any, input: Any) -> list[str]:
    """``--train-corpus FILE`` of the case study's training corpus, else none."""
    return ["--train-corpus", input.corpus] if hasattr(input, "corpus") else []


def on_start(config: dict, persistence: Any) -> None:
    """Before the first job: claim the reports folder, remove the report files of an earlier
    config of the run and the shadow folders of killed jobs (steps.owner, steps.cleanup)."""
    from .cleanup import remove_abandoned_shadows, remove_stale_reports
    from .owner import claim_reports

    claim_reports(config)
    stale = remove_stale_reports(config)
    if stale:
        print(
            f"backretrieval: removed {len(stale)} report file(s) of an earlier config of run {config['run_name']!r} "
            f"that this config does not make: {', '.join(map(str, stale))}"
        )
    p = persistence
    removed, kept = remove_abandoned_shadows(
        p.shadow_path, getattr(p, "_lockdir", None), getattr(p, "_lockfile", {}).values()
    )
    if removed:
        print(f"backretrieval: removed {len(removed)} shadow folder(s) of killed jobs: {', '.join(map(str, removed))}")
    elif kept:
        print(f"backretrieval: kept the shadow folders in {p.shadow_path}: {kept}")
