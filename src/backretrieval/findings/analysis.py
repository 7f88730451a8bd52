"""The findings analyses: one class per analysis, declared once; the registry, the settings'
defaults, the config's ``findings:`` keys, the command line, the workflow's rules and the
questions of docs/FINDINGS.md are derived from the classes.

An analysis is a subclass of :class:`Analysis` in a module of this package
(``findings/<name>.py``, or a package ``findings/<name>/`` when it is large). It declares

* ``name``: the record's ``analysis``, the stem of its files, ``backretrieval findings
  --analysis NAME``, the config's ``findings.<name>`` section and the rule ``findings_<name>``;
* ``question``: the :class:`Question` it answers (its section and title in docs/FINDINGS.md);
* its summary across configurations, if any: ``summaries``, the questions of the
  cross-configuration records :meth:`Analysis.summarize` builds from every configuration's
  records, ``summary_reads``, the files beside each configuration's record it reads, and
  ``summary_files``, the repository's files it cites where they exist;
* ``inputs``: the artifacts of the run it reads (keys of :data:`INPUTS`), and ``reads``: files
  of the run's other analyses it reads (their names in ``<reports_dir>/findings``);
  :meth:`Analysis.own_data`: the data it reads instead of the run's (:class:`OwnData`: its own
  encoders and languages, and a dataset the workflow prepares and embeds for it first);
* ``settings``: each :class:`Setting` with its default (the one value of that name: the
  command's flag, the config's key and the workflow read it), and :meth:`Analysis.configure`
  for the settings that follow from the config;
* ``files`` and ``figures``: what it writes besides its record ``<name>.json``;
* ``run(artifacts, settings) -> Result``: it computes and writes nothing; the one step
  (:func:`backretrieval.steps.findings.analysis_step`) writes the result.

Adding an analysis is one new module (a summary or intermediate artifacts included): :func:`registry` imports every module of this package
but the shared ones (:data:`SHARED_MODULES`) and finds the classes.

Light at import (the standard library only): the workflow reads the settings when it parses,
which Snakemake repeats in every job, and the command line builds its parser from the
registry. So every analysis module keeps pandas, SciPy and matplotlib out of its top-level
imports and imports them where it computes (tests/test_architecture.py checks both).
"""

from __future__ import annotations

import argparse
import copy
import importlib
import pkgutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ConfigError, InputError, did_you_mean

if TYPE_CHECKING:
    from ..evaluation.run_artifacts import RunArtifacts
    from .result import Result

#: the modules of this package that are no analysis (shared machinery); every other module is
#: imported by :func:`registry` as an analysis module
SHARED_MODULES = frozenset(
    {
        "analysis",
        "answers",
        "document",
        "inference_sim",
        "inference_sim_hits",
        "markdown",
        "record",
        "replot",
        "result",
        "views",
        "writer",
    }
)

#: the artifacts of a run an analysis may read (its ``inputs``): what each is, on the command line
INPUTS: dict[str, str] = {
    "samples": "the samples of every direction (--samples)",
    "ranks": "the per-query ranks beside each metrics CSV (read beside --metrics)",
    "image": "the run's image features (--image)",
    "backbones": "the image features of the setting 'backbones' (more --image NAME=FILE)",
    "text": "the text embeddings of every encoder and language (--text)",
    "wordvec": "the word-vector encoders' vectors, seed dictionaries and maps (their specs: the setting 'specs')",
}

#: the intermediate artifacts the workflow makes for an analysis with its own dataset
#: (:class:`OwnData`), each by one rule ``findings_<analysis>_<kind>`` (workflow/rules/findings.smk)
INTERMEDIATES: dict[str, str] = {
    "dataset": "its dataset, prepared (`backretrieval step prepare`): the step's --dataset (the run's: --run-dataset)",
    "embed_text": "its encoders' text embeddings of its languages on its dataset (`backretrieval step embed-text`)",
    "embed_images": "the config's image backbone's features on its dataset (`backretrieval step embed-images`), "
    "where it reads the input 'image'",
}

#: the formats every figure is written in (``figures/<stem>.<format>``)
FIGURE_FORMATS = ("png", "svg", "pdf")


@dataclass(frozen=True)
class Question:
    """What an analysis (or a cross-configuration record) answers, in docs/FINDINGS.md:
    ``section`` (1..), ``order`` within it (ties: by name), the heading ``title`` and the
    ``question`` in italics. ``analysis`` is the record's name (an analysis's own question
    gets its class's ``name``)."""

    section: int
    title: str
    question: str
    analysis: str = ""
    order: int = 0


@dataclass(frozen=True)
class Setting:
    """One setting of an analysis: ``name`` (the config's ``findings.<analysis>.<name>``, the key
    of ``--settings`` and the flag ``--<name with dashes>``), its ``default`` and ``help``.

    On the command line: a value of ``type`` (default: ``str``), a list with ``nargs`` (``+``,
    ``*``), an on/off switch for a boolean default (``--x`` / ``--no-x``). ``required``: no run
    without a value. ``config``: a config may set it (False: it follows from the config,
    :meth:`Analysis.configure`); ``command``: the step reads it (False: only the workflow does).
    A flag that names a noun of the command line's vocabulary (``--bootstrap``, ``--max-seeds``,
    ``--seed``, ``--seeds``, ``--directions``) keeps its meaning (tests/test_cli_help.py)."""

    name: str
    default: Any
    help: str
    type: Callable[[str], Any] = str
    nargs: str | None = None
    choices: tuple[Any, ...] | None = None
    metavar: str | None = None
    required: bool = False
    config: bool = True
    command: bool = True

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """This setting's flag. Unset flags leave no value (the default comes from
        :meth:`Analysis.settings_of`, after ``--settings``)."""
        kw: dict[str, Any] = {"dest": self.name, "default": argparse.SUPPRESS}
        default = self.default
        if isinstance(default, bool):
            kw["action"] = argparse.BooleanOptionalAction
        else:
            if self.type is not str:  # a string flag has no type, as argparse's default
                kw["type"] = self.type
            if self.nargs:
                kw["nargs"] = self.nargs
            if self.choices:
                kw["choices"] = list(self.choices)
            if self.metavar:
                kw["metavar"] = self.metavar
        if default not in (None, [], {}, ()):
            shown = " ".join(map(str, default)) if isinstance(default, (list, tuple)) else default
            kw["help"] = f"{self.help} (default {shown})"
        else:
            kw["help"] = self.help
        parser.add_argument(self.option, **kw)


@dataclass(frozen=True)
class OwnData:
    """What an analysis reads instead of the run's text embeddings and dataset
    (:meth:`Analysis.own_data`): the text of ``encoders`` (id → spec) in ``languages``; with a
    ``dataset`` (the spec of ``backretrieval step prepare --spec``, its ``name`` the prepared
    folder's, prepared in ``dataset_languages``), the workflow makes its :data:`INTERMEDIATES`
    first and the step reads them (the run's dataset as ``--run-dataset``); without one, the
    run's embeddings of ``encoders`` (configured encoders, as configured)."""

    encoders: Mapping[str, Mapping[str, Any]]
    languages: tuple[str, ...]
    dataset: Mapping[str, Any] | None = None
    dataset_languages: tuple[str, ...] = ()

    def intermediates(self, inputs: tuple[str, ...]) -> tuple[str, ...]:
        """The :data:`INTERMEDIATES` the workflow makes for an analysis reading ``inputs``."""
        if self.dataset is None:
            return ()
        return ("dataset", "embed_text", *(("embed_images",) if "image" in inputs else ()))


class Analysis:
    """One findings analysis (see the module's docstring). A subclass that sets ``name`` is
    registered when it is defined."""

    name: ClassVar[str]
    question: ClassVar[Question]
    summaries: ClassVar[tuple[Question, ...]] = ()
    summary_reads: ClassVar[tuple[str, ...]] = ()
    summary_files: ClassVar[tuple[str, ...]] = ()
    inputs: ClassVar[tuple[str, ...]] = ()
    reads: ClassVar[tuple[str, ...]] = ()
    settings: ClassVar[tuple[Setting, ...]] = ()
    files: ClassVar[tuple[str, ...]] = ()
    figures: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            return
        unknown = sorted(set(cls.inputs) - set(INPUTS))
        if unknown:
            raise TypeError(f"findings analysis {cls.name!r}: unknown inputs {unknown}; known: {sorted(INPUTS)}")
        if cls.summary_reads and not cls.summaries:
            raise TypeError(f"findings analysis {cls.name!r}: summary_reads without summaries")
        names = [s.name for s in cls.settings]
        if len(set(names)) != len(names):
            raise TypeError(f"findings analysis {cls.name!r}: a setting declared twice in {names}")
        old = _CLASSES.get(cls.name)
        if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
            raise TypeError(f"findings analysis {cls.name!r} is declared twice: {old.__module__}, {cls.__module__}")
        _CLASSES[cls.name] = cls

    # ---- settings

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Every setting's default (a fresh copy: its lists are not shared)."""
        return {s.name: copy.deepcopy(s.default) for s in cls.settings}

    @classmethod
    def configure(cls, cfg: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """The settings for a validated config: the defaults, then those that follow from the
        config (an analysis overrides this), then ``given`` (the config's ``findings.<name>``,
        its keys checked by :func:`check_config`)."""
        return {**cls.defaults(), **given}

    @classmethod
    def settings_of(cls, given: Mapping[str, Any]) -> dict[str, Any]:
        """The settings a run gets: the defaults updated by ``given`` (the command's
        ``--settings`` and flags); an unknown or a missing required setting is an error."""
        known = {s.name: s for s in cls.settings}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise InputError(
                f"findings {cls.name}: unknown setting(s) {unknown}{did_you_mean(unknown[0], list(known))}; "
                f"its settings are {sorted(known)}"
            )
        out = {**cls.defaults(), **given}
        for s in cls.settings:
            if s.required and out[s.name] is None:
                raise InputError(f"findings {cls.name}: the setting {s.name!r} ({s.option}) is required")
        return out

    @classmethod
    def command_settings(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The settings the step reads (``command``) of a config's settings (:func:`findings_settings`)."""
        return {s.name: settings[s.name] for s in cls.settings if s.command and s.name in settings}

    # ---- outputs

    @classmethod
    def outputs(cls, settings: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(files, figure stems) it writes with these settings, besides ``<name>.json``."""
        return cls.files, cls.figures

    @classmethod
    def output_paths(cls, settings: Mapping[str, Any]) -> list[str]:
        """Every output relative to the findings folder: the record, the files, the figures."""
        files, figures = cls.outputs(settings)
        return [f"{cls.name}.json", *files, *(f"figures/{f}.{ext}" for f in figures for ext in FIGURE_FORMATS)]

    # ---- what it reads besides the run's artifacts

    @classmethod
    def own_data(cls, cfg: Mapping[str, Any], settings: Mapping[str, Any]) -> OwnData | None:
        """The data it reads instead of the run's (:class:`OwnData`) for a validated config and
        its settings there; None (the default): the run's."""
        return None

    # ---- the analysis

    def run(self, artifacts: RunArtifacts, settings: Mapping[str, Any]) -> Result:
        raise NotImplementedError

    @classmethod
    def summarize(cls, records: Sequence[tuple[Path, Any]], summary_dir: Path) -> list[Any]:
        """Its cross-configuration records, one per question of ``summaries`` in that order
        (``FindingsRecord`` with ``run`` None), from every configuration's records (``(path,
        FindingsRecord)``, every analysis's: it picks its own; the files of ``summary_reads`` lie
        beside them); their tables and figures it writes to ``summary_dir`` (the step writes
        the records). The default: none."""
        return []

    @classmethod
    def sort_key(cls) -> tuple[int, int, str]:
        return (cls.question.section, cls.question.order, cls.name)


#: every analysis class by name, filled as the classes are defined (:func:`registry` imports them)
_CLASSES: dict[str, type[Analysis]] = {}


def registry() -> dict[str, type[Analysis]]:
    """Every analysis, by name, in document order (section, order in it, name): the classes
    of every module of this package but :data:`SHARED_MODULES` (imported here), and any other
    subclass defined so far."""
    package = sys.modules[__package__]
    for mod in pkgutil.iter_modules(package.__path__):
        if mod.name not in SHARED_MODULES and not mod.name.startswith("_"):
            importlib.import_module(f"{__package__}.{mod.name}")
    return dict(sorted(_CLASSES.items(), key=lambda kv: kv[1].sort_key()))


def get(name: str) -> type[Analysis]:
    """The analysis ``name``; an unknown name is an error naming the known ones."""
    known = registry()
    if name not in known:
        raise InputError(f"findings: unknown analysis {name!r}{did_you_mean(name, list(known))}; known: {list(known)}")
    return known[name]


def questions() -> tuple[Question, ...]:
    """The questions of docs/FINDINGS.md in document order: each analysis's, then those of the
    cross-configuration records built from its records (``summaries``)."""
    out: list[Question] = []
    for name, cls in registry().items():
        out.append(replace(cls.question, analysis=name))
        out += cls.summaries
    return tuple(sorted(out, key=lambda q: q.section))  # stable: within a section, the order above


def summary_names() -> tuple[str, ...]:
    """The cross-configuration records (their ``run`` is null)."""
    return tuple(q.analysis for cls in registry().values() for q in cls.summaries)


# ---- a config's ``findings:`` section


def findings_settings(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The settings of every analysis for one validated config: each analysis's defaults, the
    settings that follow from the config, and the config's optional ``findings: {<analysis>:
    {...}}`` (e.g. ``findings: {inference: {bootstrap: 1000}}``), checked first (:func:`check_config`)."""
    user: Mapping[str, Any] = cfg.get("findings") or {}
    if user:
        check_config(cfg)
    return {name: cls.configure(cfg, dict(user.get(name) or {})) for name, cls in registry().items()}


def config_keys() -> dict[str, list[str]]:
    """The keys a config's ``findings.<analysis>`` may set, per analysis: its settings that are
    not derived from the config (``Setting.config``)."""
    return {name: sorted(s.name for s in cls.settings if s.config) for name, cls in registry().items()}


def check_config(cfg: Mapping[str, Any]) -> None:
    """Refuse a config's ``findings:`` section that names an unknown analysis or a key its
    analysis does not have (a misspelt key would otherwise be ignored and the default run):
    a ConfigError naming the field, the analysis and the allowed names; ``fields`` holds the
    dotted field, for :func:`backretrieval.config.validate_config`."""
    user: Mapping[str, Any] = cfg.get("findings") or {}
    allowed = config_keys()
    for name in user:
        if name not in allowed:
            exc = ConfigError(
                f"field 'findings.{name}': unknown analysis {name!r}{did_you_mean(name, list(allowed))}; "
                f"the analyses are {list(allowed)}"
            )
            exc.fields = (f"findings.{name}",)  # type: ignore[attr-defined]
            raise exc
    for name, given in user.items():
        for key in given or {}:
            if key not in allowed[name]:
                exc = ConfigError(
                    f"field 'findings.{name}.{key}': analysis {name!r} has no setting {key!r}"
                    f"{did_you_mean(key, allowed[name])}; its settings are {allowed[name]}"
                )
                exc.fields = (f"findings.{name}.{key}",)  # type: ignore[attr-defined]
                raise exc
