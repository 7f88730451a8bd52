"""The findings analyses' files and settings in the workflow (workflow/rules/findings.smk): the
paths of :class:`FindingsPlan` beside the main pipeline's (:mod:`.plan`). Nothing heavy is
imported: Snakemake parses the workflow in every job it spawns."""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

from . import layout
from .plan import Plan, as_json, spec_input_paths


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
