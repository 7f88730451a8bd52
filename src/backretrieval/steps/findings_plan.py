"""The findings analyses' files and settings in the workflow (workflow/rules/findings.smk): the
paths of :class:`FindingsPlan` beside the main pipeline's (:mod:`.plan`). Nothing heavy is
imported: Snakemake parses the workflow in every job it spawns."""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

from . import layout
from .plan import Plan, as_json, rerun_on, spec_input_paths


class FindingsPlan:
    """The findings analyses of a config (workflow/rules/findings.smk): one rule each, from the
    analyses' classes (backretrieval.findings.analysis): the files it reads (its `inputs`, mapped
    to this config's artifacts by :meth:`run`), the files it writes, and its settings
    (:func:`backretrieval.findings.analysis.findings_settings`: its defaults, what follows from the
    config, the config's `findings:` section), passed as one JSON. Intermediate artifacts (other
    backbones' features; an analysis's own dataset and its embeddings, :attr:`own`) go to
    artifacts/<run>.findings/; its summary across configurations reads what :meth:`document_inputs` lists."""

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
        # the analyses that read their own data (OwnData) instead of the run's
        self.own = {a: od for a, cls in self.classes.items() if (od := cls.own_data(cfg, self.settings[a]))}
        for a, od in self.own.items():
            unknown = [e for e, spec in od.encoders.items() if spec != cfg["encoders"].get(e)]
            if od.dataset is None and unknown:
                raise ValueError(f"findings {a}: without its own dataset it reads configured encoders only: {unknown}")

    def record(self, analysis: str) -> str:
        return str(layout.findings_record_path(self.config, analysis))

    def file(self, name: str) -> str:
        """A file of <reports_dir>/findings besides an analysis's record, tables and figures."""
        return str(layout.findings_root(self.config) / name)

    def backbone_image(self, backbone: str) -> str:
        """Image features of another backbone on the config's dataset (an analysis's `backbones`)."""
        return str(layout.findings_backbone_image_path(self.config, backbone))

    # ---- an analysis's own data (backretrieval.findings.analysis.OwnData) and the rules making it

    def intermediates(self, analysis: str) -> tuple[str, ...]:
        """The intermediate artifacts made for ``analysis`` (kinds of analysis.INTERMEDIATES)."""
        od = self.own.get(analysis)
        return od.intermediates(self.classes[analysis].inputs) if od else ()

    def own_dataset(self, analysis: str) -> str:
        """The dataset an analysis reads: its own, prepared (data/prepared/<its name>), else the run's."""
        od = self.own[analysis]
        return str(layout.PREPARED / od.dataset["name"]) if od.dataset else self.plan.dataset

    def own_text(self, analysis: str, encoder: str, lang: str) -> str:
        """A text embedding an analysis reads: on its own dataset
        artifacts/<run>.findings/<analysis>/text/<encoder>/<lang>.<text_field>.npz, else the run's."""
        if self.own[analysis].dataset is None:
            return self.plan.text_emb(encoder, lang)
        name = f"{lang}.{self.config['text_field']}.npz"
        return str(Path(self.artifacts) / analysis / "text" / encoder / name)

    def own_texts(self, analysis: str) -> list[str]:
        """The outputs of rule findings_<analysis>_embed_text: one per language (wildcard encoder)."""
        return [self.own_text(analysis, "{encoder}", lang) for lang in self.own[analysis].languages]

    def own_image(self, analysis: str) -> str:
        """The image features an analysis reads: the config's backbone on its own dataset
        (artifacts/<run>.findings/<analysis>/image/<backbone>.npz), else the run's."""
        if self.own[analysis].dataset is None:
            return self.plan.image_emb()
        return str(Path(self.artifacts) / analysis / "image" / f"{self.config['image_backbone']}.npz")

    def own_params(self, analysis: str, kind: str, **more: Any) -> dict:
        """The params of rule findings_<analysis>_<kind> (``more``: the workflow's, e.g. its code)."""
        od, cfg = self.own[analysis], self.config
        if kind == "dataset":  # its local data's content, as prepare's
            content = self.plan.source_content(od.dataset) if od.dataset is not None else ""
            return {"spec": as_json(od.dataset), "languages": list(od.dataset_languages), "content": content, **more}
        if kind == "embed_text":
            return {
                "rerun_trigger": lambda wc: rerun_on(od.encoders[wc.encoder]),
                "spec": lambda wc, input: as_json(od.encoders[wc.encoder]),
                "field": cfg["text_field"],
                "languages": list(od.languages),
                "skip": [],
                "cache": self.plan.cache,
                **more,
            }
        backbone = cfg["image_backbone"]
        spec = as_json(cfg["backbones"][backbone])
        return {"backbone": backbone, "spec": spec, "cache": self.plan.cache, **more}

    def wordvec_inputs(self) -> list[str]:
        """The word-vector encoders' embeddings (their vectors, seed dictionaries and maps are
        then in wordvec's training cache, a side store) and training corpora."""
        encoders, langs = self.wordvec_encoders, self.config["languages"]
        embeddings = [self.plan.text_emb(e, lang) for e in encoders for lang in langs]
        return [*embeddings, *(p for e in encoders for p in spec_input_paths(self.config["encoders"][e]))]

    def run(self, analysis: str) -> tuple[dict, list[str]]:
        """(input files by name, their flags of `backretrieval step findings`) of one analysis: the
        run's dataset and metrics, what its `inputs` name (backretrieval.findings.analysis.INPUTS)
        and its `reads` of the files the other analyses write here."""
        cls, plan, cfg = self.classes[analysis], self.plan, self.config
        metrics = plan.metrics_files()
        run: dict[str, Any] = {
            "dataset": plan.dataset,
            "samples": plan.samples_files(),
            "ranks": plan.ranks_files(),
            "image": plan.image_emb(),
            "backbones": {b: self.backbone_image(b) for b in self.settings[analysis].get("backbones", {})},
            "text": {(e, lang): plan.text_emb(e, lang) for e in cfg["encoders"] for lang in self.direction_langs},
            "wordvec": self.wordvec_inputs(),
        }
        if analysis in self.own:
            od = self.own[analysis]
            run["dataset"], run["run_dataset"] = self.own_dataset(analysis), plan.dataset
            run["image"] = self.own_image(analysis)
            run["text"] = {(e, lang): self.own_text(analysis, e, lang) for e in od.encoders for lang in od.languages}
        files: dict = {"dataset": run["dataset"], "metrics": metrics}
        flags: list[str] = ["--dataset", run["dataset"], "--metrics", *metrics]
        if "run_dataset" in run:
            files["run_dataset"] = run["run_dataset"]
            flags += ["--run-dataset", run["run_dataset"]]
        # one --image-emb: the run's backbone's file, then NAME=FILE of each other backbone compared
        images = [run["image"]] if "image" in cls.inputs else []
        images += [f"{b}={p}" for b, p in run["backbones"].items()] if "backbones" in cls.inputs else []
        for name in cls.inputs:
            if name in ("samples", "ranks", "wordvec"):
                files[name] = run[name]
            elif name in ("image", "backbones") and run[name]:
                files[name] = list(run[name].values()) if name == "backbones" else run[name]
                if images:
                    flags += ["--image-emb", *images]
                    images = []
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
        """What docs/FINDINGS.md and the verdict are made from: this config's records, the files
        beside them the analyses' summaries read (their `summary_reads`), the repository's files
        they cite where present (`summary_files`, e.g. the simulated coverage of
        benchmarks/bench_inference_coverage.py), and the other configurations' (:meth:`other_configs`)."""
        cited = [f for cls in self.classes.values() for f in cls.summary_files]
        return {
            "own": self.records,
            "summary_reads": [self.file(name) for name, _ in self._summary_reads()],
            "summary_files": lambda wc: [f for f in cited if Path(f).is_file()],
            "others": self.other_configs(),
        }

    def _summary_reads(self) -> list[tuple[str, str]]:
        """(file, analysis) of every analysis's `summary_reads`, by file name."""
        return sorted((f, a) for a, cls in self.classes.items() for f in cls.summary_reads)

    def other_configs(self) -> list[str]:
        """The committed findings records of the other configurations (each made by its own
        `snakemake findings --configfile ...`) and the files beside them the summaries read
        (where present: a record made before its summary read one has none)."""
        own = {Path(self.root), Path(self.summary)}
        records = [
            p for p in sorted(glob.glob("reports/**/findings/*.json", recursive=True)) if Path(p).parent not in own
        ]
        beside = [
            str(Path(p).parent / name)
            for name, analysis in self._summary_reads()
            for p in records
            if Path(p).name == f"{analysis}.json" and (Path(p).parent / name).is_file()
        ]
        return [*records, *beside]
