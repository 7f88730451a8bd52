"""The Snakemake workflow's plumbing (workflow/rules/*.smk): a validated config -> the files of
every job, the settings each step gets, and the command lines too long for a rule.

The rules declare every file a job reads and writes and hand them to the file-based CLI
(`backretrieval <step> --dataset {input.dataset} ... --out {output}`); settings go through
`params:`, so a changed setting reruns exactly the rules that use it. Every job runs in a minimal
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

import glob
import json
import os
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
from .settings import fit_requirements, report_settings, seed_groups

#: Content hashes of bring-your-own folders, cached by (size, mtime, ctime, inode) per file.
HASH_CACHE = Path(".snakemake/backretrieval/content-hashes.json")
#: dataset/corpus options that name a location; a value with "://" is a URL and stays as it is
PATH_OPTIONS = {"mirror", "stair_mirror", "coco_mirror", "download_dir", "images_dir", "mapping_csv", "npy", "path"}
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
#: a job's torch/BLAS threads, the job's own thread count (a model's reductions depend on it)
THREAD_ENV = "OMP_NUM_THREADS={threads:q} OPENBLAS_NUM_THREADS={threads:q} MKL_NUM_THREADS={threads:q} "

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

#: The command lines of the steps whose rules would be too long with them; Snakemake formats
#: them with the job's {input}, {output}, {params}, {wildcards}, {threads} and {log}.
COMMANDS = {
    "embed-text": "backretrieval embed-text --dataset {input.dataset:q} --encoder {wildcards.encoder:q}"
    " --spec {params.spec:q} --text-field {params.field:q} --languages {params.languages:q} --out {output:q}"
    " {params.skip:q} --cache-dir {params.cache:q} --threads {params.threads:q} > {log:q} 2>&1",
    "embed-images": "backretrieval embed-images --dataset {input.dataset:q} --image-backbone {params.backbone:q}"
    " --spec {params.spec:q} --out {output:q} --cache-dir {params.cache:q} --threads {params.threads:q} > {log:q} 2>&1",
    "metrics": THREAD_ENV + "backretrieval metrics --dataset {input.dataset:q} --dataset-name {params.name:q}"
    " --direction {wildcards.direction:q} --samples {input.samples:q} --image-emb {input.images:q}"
    " --image-backbone {params.backbone:q} --encoders {params.encoders:q} --text-emb {input.text:q}"
    " --text-field {params.field:q} --recall-k {params.recall_k:q} {params.corr:q} {params.seeds:q}"
    " --out {output.csv:q} > {log:q} 2>&1",
    "report": "backretrieval report --metrics {input.metrics:q} --dataset {input.dataset:q}"
    " --encoders {params.encoders:q} --languages {params.languages:q} --text-emb {input.text:q}"
    " --settings {params.settings:q}",
    "report-parallel": " --samples {input.samples:q} --image-emb {input.image:q}"
    " --out-correlations {output.correlations:q} --out-table1 {output.table1:q} --out-table1-tex {output.table1_tex:q}"
    " --out-corr-ci {output.corr_ci:q} --out-recall-ci {output.recall_ci:q} --out-metrics {output.metrics:q}"
    " --out-significance {output.significance:q} --out-fig2-png {output.fig2_png:q} --out-fig2-svg {output.fig2_svg:q}"
    " --out-fig2-pdf {output.fig2_pdf:q} --out-fig2-csv {output.fig2_csv:q} --out-means {output.means:q} > {log:q} 2>&1",
    "report-bkr": " --samples {input.samples:q} --out-bkr-report {output.bkr_report:q} --out-bkr-ci {output.bkr_ci:q} --out-ranking {output.ranking:q}"
    " --out-pairwise {output.pairwise:q} --out-metrics {output.metrics:q} --out-bkr-png {output.bkr_png:q}"
    " --out-bkr-svg {output.bkr_svg:q} --out-bkr-pdf {output.bkr_pdf:q} --out-means {output.means:q} > {log:q} 2>&1",
    "case-embed": "backretrieval case-embed --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
    " --encoder {wildcards.encoder:q} --spec {params.spec:q} --out-fields {output.fields:q} --out-repr {output.reprs:q}"
    " --cache-dir {params.cache:q} --threads {params.threads:q} > {log:q} 2>&1",
    "case-select": "backretrieval case-select --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
    " --image-emb {input.images:q} --encoders {params.encoders:q} --repr {input.reprs:q}"
    " --out-chosen {output.chosen:q} --out-bkr {output.csv:q} > {log:q} 2>&1",
    "case-train": "backretrieval case-train --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
    " --head {wildcards.head:q} --training-seed {wildcards.tseed:q} --chosen {input.chosen:q}"
    " --encoders {params.encoders:q} --fields {input.fields:q}"
    " --out-head {output.head:q} --out-meta {output.meta:q} --out-history {output.history:q}"
    " --out-curve {output.curve:q} --out-repr {output.reprs:q} --threads {params.threads:q} > {log:q} 2>&1",
    "case-evaluate": "backretrieval case-evaluate --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
    " --image-emb {input.images:q} --models {params.models:q} --repr {input.reprs:q}"
    " --out-bkr {output.csv:q} --out-hits {output.hits:q} > {log:q} 2>&1",
    "case-report": "backretrieval case-report --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
    " --chosen {input.chosen:q} --bkr {input.bkr:q} --out-table2 {output.table2:q}"
    " --out-table2-tex {output.table2_tex:q} --out-table2-csv {output.table2_csv:q} --out-sig {output.sig:q}"
    " --out-fig3-png {output.fig3_png:q} --out-fig3-svg {output.fig3_svg:q} --out-fig3-pdf {output.fig3_pdf:q}"
    " --out-metrics {output.metrics:q} --threads {params.threads:q} > {log:q} 2>&1",
    "human-sheets": "backretrieval human-sheets --dataset {input.dataset:q} --case {params.case:q} {params.corpus:q}"
    " --human {params.human:q} --chosen {input.chosen:q} --models {params.models:q}"
    " --languages {params.languages:q} --repr {input.reprs:q} --out-template {output.template:q}"
    " --out-html {output.html:q} --out-key {output.key:q} --out-page {output.page:q} > {log:q} 2>&1",
    "human-simulate": "backretrieval human-simulate --dataset {input.dataset:q} --template {input.template:q}"
    " --key {input.key:q} --seed {params.seed:q} --out {output:q} > {log:q} 2>&1",
    "human-tally": "backretrieval human-tally --ratings {input.ratings:q} --key {input.key:q} {params.unverified:q}"
    " {params.simulated:q} --out-tally-md {output.tally_md:q} --out-tally-json {output.tally_json:q} > {log:q} 2>&1",
    "findings": THREAD_ENV + "backretrieval findings --analysis {params.analysis:q} {params.run:q}"
    " --run-name {params.run_name:q} --out-dir {params.out_dir:q}"
    " --settings {params.settings:q} {params.job:q} > {log:q} 2>&1",
}


def as_json(obj: Any) -> str:
    """Canonical JSON: how a structured setting reaches a step (one quoted argument)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


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
        self.requirements = as_json(fit_requirements(config))
        self.report_settings = as_json(report_settings(config))
        self.case: dict | None = None
        self.human: dict | None = None
        # the case study's {tseed} values (constrained in common.smk): none without one
        self.case_training_seeds: list[int] = []
        # the case_study keys case_select reads (its params: nothing else reruns it)
        self.select_keys: tuple[str, ...] = ()
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
        """A dataset/corpus section for `backretrieval prepare`: locations absolute (downloads are
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

    def byo_folder(self, spec: dict) -> str | None:
        """The user's folder of a `source: prepared` dataset/corpus (a declared input), else None."""
        return self.job_path(spec["options"]["path"]) if spec["source"] == "prepared" else None

    def byo_content(self, spec: dict) -> str:
        """sha256 of the user's folder (a param of prepare: an edit reruns it and all after it)."""
        folder = self.byo_folder(spec)
        return tree_sha256(folder, HASH_CACHE) if folder else ""

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

    def dataset_params(self) -> dict:
        """prepare's params for the dataset (``--source-dir`` of a bring-your-own folder)."""
        ds = self.config["dataset"]
        return {
            "rerun_trigger": rerun_on(ds),
            "languages": self.config["languages"],
            "content": self.byo_content(ds),
            "spec": lambda wc, input: self.dataset_spec(ds, ds["name"]),
            "source": source_flag,
        }

    def corpus_params(self) -> dict:
        """prepare's params for a corpus: its own ``languages`` (a word-vector family may train
        on more languages than the run evaluates), else the run's."""
        return {
            "rerun_trigger": lambda wc: rerun_on(self.corpus(wc.corpus)),
            "languages": lambda wc: self.corpus(wc.corpus).get("languages") or self.config["languages"],
            "content": lambda wc: self.byo_content(self.corpus(wc.corpus)),
            "spec": lambda wc, input: self.dataset_spec(self.corpus(wc.corpus), wc.corpus),
            "source": source_flag,
        }

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

    def embed_text_params(self) -> dict:
        cfg = self.config
        return {
            "rerun_trigger": lambda wc: rerun_on(cfg["encoders"][wc.encoder]),
            "field": cfg["text_field"],
            "languages": cfg["languages"],
            "skip": ["--skip-unavailable"] if cfg.get("skip_unavailable", False) else [],
            "threads": self.model_threads,
            "spec": lambda wc, input: self.encoder_spec(wc.encoder),
            "cache": self.cache,
        }

    def embed_images_params(self) -> dict:
        backbone = self.config["image_backbone"]
        return {
            "backbone": backbone,
            "spec": as_json(self.config["backbones"][backbone]),
            "threads": self.image_threads,
            "cache": self.cache,
        }

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

    def sample_params(self) -> dict:
        cfg = self.config
        return {"sample_size": cfg["sample_size"], "seeds": cfg["seeds"], "directions": cfg["directions"]}

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

    def metrics_params(self) -> dict:
        cfg = self.config
        return {
            "name": cfg["dataset"]["name"],
            "backbone": cfg["image_backbone"],
            "encoders": list(cfg["encoders"]),
            "field": cfg["text_field"],
            "recall_k": cfg["recall_k"],
            "corr": ["--corr-max-pairs", cfg["corr_max_pairs"]] if cfg.get("corr_max_pairs") else [],
            "seeds": [],
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

    def report_params(self) -> dict:
        return {
            "encoders": list(self.config["encoders"]),
            "languages": self.config["languages"],
            "settings": self.report_settings,
        }

    def report_command(self) -> str:
        return COMMANDS["report"] + COMMANDS["report-parallel" if self.parallel else "report-bkr"]

    def all_outputs(self) -> list[str]:
        flags = [f"{self.flags}/report.done"]
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
        # the section as the steps get it: train_corpus is a declared input instead
        self.case_json = as_json({k: v for k, v in case.items() if k != "train_corpus"})
        self.select_keys = cs.SELECT_KEYS
        self.train_corpus = self.job_path(case["train_corpus"]) if case.get("train_corpus") else None
        self.human_ratings = self.job_path(layout.ratings_path(cfg))
        # a tally needs ratings: human ones or, on the synthetic dataset only, the SIMULATED rater
        self.human_tally = bool(human.get("ratings")) or cfg["dataset"]["source"] == "synthetic"

    def case_inputs(self, wildcards: Any = None) -> dict:
        """Input function: the prepared dataset and, when set, the training corpus of a case step."""
        return {"dataset": self.dataset, **({"corpus": self.train_corpus} if self.train_corpus else {})}

    def case_params(self, keys: tuple[str, ...] | None = None, **more: Any) -> dict:
        """The params a case-study step gets (``--case``: the section, or only its ``keys``, so
        a setting the step does not read never reruns it; ``--train-corpus``), then ``more``."""
        case = self.case_json if keys is None else as_json({k: v for k, v in (self.case or {}).items() if k in keys})
        return {"case": case, "corpus": corpus_flag, **more}

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

    def case_embed_params(self) -> dict:
        from ..study.case_config import ITEM_KEYS

        return self.case_params(
            ITEM_KEYS,
            rerun_trigger=lambda wc: rerun_on(self.config["encoders"][wc.encoder]),
            threads=self.model_threads,
            spec=lambda wc, input: self.encoder_spec(wc.encoder),
            cache=self.cache,
        )

    def case_embed_outputs(self, encoder: str) -> dict:
        """case_embed's outputs: the encoder's fields (case_fields) and its representations."""
        return {"fields": self.case_fields(encoder), "reprs": self.case_reprs([encoder])}

    def head_outputs(self) -> dict:
        """case_train's outputs, per {head} and training seed {tseed}."""
        files = layout.head_paths(self.config, "{head}", "{tseed}")
        reprs = [str(layout.head_repr_path(self.config, "{head}", "{tseed}", lang)) for lang in self.case_langs]
        return {**{k: str(files[k]) for k in ("head", "meta", "history", "curve")}, "reprs": reprs}

    def human_sheets_params(self) -> dict:
        human = self.human or {}
        return self.case_params(
            human=as_json({k: v for k, v in human.items() if k != "ratings"}),
            models=self.human_runs,
            languages=self.human_langs,
        )

    def human_tally_params(self) -> dict:
        human = self.human or {}
        return {
            "unverified": ["--allow-unverified-key"] if human["allow_unverified_key"] else [],
            "simulated": [] if human.get("ratings") else ["--simulated"],
        }

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


class FindingsPlan:
    """The findings analyses of a config (workflow/rules/findings.smk): one rule each, from the
    analyses' classes (backretrieval.findings.analysis): the files it reads (its `inputs`, mapped
    to this config's artifacts by :meth:`run`), the files it writes, and its settings
    (:func:`backretrieval.findings.analysis.findings_settings`: its defaults, what follows from the
    config, the config's `findings:` section), passed as one JSON. Intermediate artifacts (other
    backbones' features, the scaled SYNTHETIC set) go to artifacts/<run>.findings/."""

    def __init__(self, plan: Plan):
        from ..findings.analysis import findings_settings, registry

        cfg = self.config = plan.config
        self.plan = plan
        self.classes = registry()
        self.settings = findings_settings(cfg)
        self.root = str(layout.findings_root(cfg))
        self.artifacts = str(layout.findings_artifacts_root(cfg))
        self.summary = str(layout.FINDINGS_SUMMARY)
        self.doc = str(layout.FINDINGS_DOC)
        self.records = [self.record(a) for a in self.classes]
        self.synthetic = cfg["dataset"]["source"] == "synthetic"
        self.wordvec_encoders = sorted(e for e, s in cfg["encoders"].items() if s.get("type") == "wordvec")
        self.direction_langs = sorted({lang for d in cfg["directions"] for lang in d.split("-")})
        # the other backbones whose features an analysis reads (its setting `backbones`)
        self.backbones = {
            b: spec
            for a, cls in self.classes.items()
            if "backbones" in cls.inputs
            for b, spec in self.settings[a]["backbones"].items()
        }
        # every file the analyses write (an analysis reads those of its `reads` made here)
        self.outputs = {p: a for a, cls in self.classes.items() for p in cls.output_paths(self.settings[a])}
        ss = self.ss = self.settings["sample_size"]
        self.ss_langs = sorted({lang for d in ss["directions"] for lang in d.split("-")})
        if self.synthetic:  # the SYNTHETIC generator scaled up (its first items equal the default's)
            self.ss_dataset = str(layout.findings_sample_size_dataset(cfg, ss["synthetic"]))
            self.ss_image = str(layout.findings_sample_size_image_path(cfg))
        else:
            self.ss_dataset, self.ss_image = plan.dataset, plan.image_emb()
        # the analyses that read other artifacts than the run's: input -> files (run)
        self.own_inputs = {
            "sample_size": {
                "dataset": self.ss_dataset,
                "run_dataset": plan.dataset,
                "image": self.ss_image,
                "text": {(e, lang): self.ss_text(e, lang) for e in ss["encoders"] for lang in self.ss_langs},
            },
        }

    def record(self, analysis: str) -> str:
        return str(layout.findings_record_path(self.config, analysis))

    def file(self, name: str) -> str:
        """A file of <reports_dir>/findings besides an analysis's record, tables and figures."""
        return str(layout.findings_root(self.config) / name)

    def iq_image(self, backbone: str) -> str:
        """Image features of another backbone on the config's dataset (an analysis's `backbones`)."""
        return str(layout.findings_backbone_image_path(self.config, backbone))

    def ss_text(self, encoder: str, lang: str) -> str:
        """A text embedding of the sample-size analysis: the scaled SYNTHETIC set's, else the run's."""
        if self.synthetic:
            return str(layout.findings_sample_size_text_path(self.config, encoder, lang))
        return self.plan.text_emb(encoder, lang)

    def ss_dataset_spec(self) -> str:
        syn = self.ss["synthetic"]
        keys = ("n_items", "seed", "image_size")
        spec = {"name": Path(self.ss_dataset).name, "source": "synthetic", "options": {}}
        return as_json({**spec, "synthetic": {k: syn[k] for k in keys}})

    def wordvec_inputs(self) -> list[str]:
        """The word-vector encoders' embeddings (their vectors, seed dictionaries and maps are
        then in wordvec's training cache, a side store) and training corpora."""
        encoders, langs = self.wordvec_encoders, self.config["languages"]
        embeddings = [self.plan.text_emb(e, lang) for e in encoders for lang in langs]
        return [*embeddings, *(p for e in encoders for p in spec_input_paths(self.config["encoders"][e]))]

    def run(self, analysis: str) -> tuple[dict, list[str]]:
        """(input files by name, their flags of `backretrieval findings`) of one analysis: the
        run's dataset and metrics, what its `inputs` name (backretrieval.findings.analysis.INPUTS)
        and its `reads` of the files the other analyses write here."""
        cls, plan, cfg = self.classes[analysis], self.plan, self.config
        metrics = plan.metrics_files()
        run: dict[str, Any] = {
            "dataset": plan.dataset,
            "samples": plan.samples_files(),
            "ranks": plan.ranks_files(),
            "image": plan.image_emb(),
            "backbones": {b: self.iq_image(b) for b in self.settings[analysis].get("backbones", {})},
            "text": {(e, lang): plan.text_emb(e, lang) for e in cfg["encoders"] for lang in self.direction_langs},
            "wordvec": self.wordvec_inputs(),
            **self.own_inputs.get(analysis, {}),
        }
        files: dict = {"dataset": run["dataset"], "metrics": metrics}
        flags: list[str] = ["--dataset", run["dataset"], "--metrics", *metrics]
        if "run_dataset" in run:
            files["run_dataset"] = run["run_dataset"]
            flags += ["--run-dataset", run["run_dataset"]]
        for name in cls.inputs:
            if name in ("samples", "ranks", "wordvec"):
                files[name] = run[name]
            elif name == "image":
                files[name] = run[name]
                flags += ["--image-emb", run[name]]
            elif name == "backbones" and run[name]:
                files[name] = list(run[name].values())
                flags += ["--backbone-emb", *(f"{b}={p}" for b, p in run[name].items())]
            elif name == "text":
                files[name] = list(run[name].values())
                flags += ["--text-emb", *(f"{e}:{lang}={p}" for (e, lang), p in run[name].items())]
        if "samples" in cls.inputs:
            flags += ["--samples", *run["samples"]]
        reads = [str(Path(self.root) / f) for f in cls.reads if f in self.outputs]
        if reads:
            files["reads"] = reads
            flags += ["--findings-files", *reads]
        return files, flags

    def outputs_of(self, analysis: str) -> dict:
        """What one analysis writes: its JSON record and its other files and figures."""
        record = self.record(analysis)
        paths = [str(Path(self.root) / p) for p in self.classes[analysis].output_paths(self.settings[analysis])]
        return {"json": record, "files": [p for p in paths if p != record]}

    def params(self, analysis: str) -> dict:
        """The params of one analysis's job: its settings as one JSON; the word-vector encoders'
        specs (machine-dependent: absolute stores) a param of `input` (`--specs`, see rerun_on)."""
        cls = self.classes[analysis]
        settings = cls.command_settings(self.settings[analysis])
        if "wordvec" in cls.inputs:
            settings.pop("specs")
        wordvec = "wordvec" in cls.inputs and self.wordvec_encoders
        return {
            "analysis": analysis,
            "run": self.run(analysis)[1],
            "settings": as_json(settings),
            "job": lambda wc, input: ["--specs", self._specs()] if wordvec else [],
            "run_name": self.plan.run,
            "out_dir": lambda wc, output: str(Path(output.json).parent),
        }

    def _specs(self) -> str:
        return as_json({e: json.loads(self.plan.encoder_spec(e)) for e in self.wordvec_encoders})

    def document_inputs(self) -> dict:
        """What docs/FINDINGS.md and the verdict are made from: this config's records, the other
        configurations' (:meth:`other_configs`) and the simulated coverage the verdict cites
        (benchmarks/bench_inference_coverage.py; where absent the verdict says so)."""
        from ..findings.inference import COVERAGE_FILE

        return {
            "own": self.records,
            "points": self.file("calibration_points.csv"),
            "replicates": self.file("inference_replicates.csv"),
            "coverage": lambda wc: [COVERAGE_FILE] if Path(COVERAGE_FILE).is_file() else [],
            "others": self.other_configs(),
        }

    def other_configs(self) -> list[str]:
        """The committed findings records of the other configurations (each made by its own
        `snakemake findings --configfile ...`), their calibration points and joint-bootstrap
        replicate tables (a record made before the joint bootstrap has none)."""
        own = {Path(self.root), Path(self.summary)}
        records = [
            p for p in sorted(glob.glob("reports/**/findings/*.json", recursive=True)) if Path(p).parent not in own
        ]
        points = [str(Path(p).parent / "calibration_points.csv") for p in records if Path(p).name == "calibration.json"]
        replicates = [
            str(Path(p).parent / "inference_replicates.csv")
            for p in records
            if Path(p).name == "inference.json" and (Path(p).parent / "inference_replicates.csv").is_file()
        ]
        return [*records, *points, *replicates]


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
