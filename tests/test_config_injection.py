"""No config string runs a command (docs/SECURITY.md).

The config reaches shell commands: names and paths become the rules' inputs, outputs, logs and
params. Two defences, each tested here on its own:

* the schema (backretrieval.config.SCHEMA_PATH) refuses every string the workflow reads
  that holds a shell metacharacter, a quote, a brace or a newline, naming the field, before any
  job. The strings are found by walking the schema itself (``string_slots``: every leaf that
  may be a string, every map whose keys are names, the free-form settings such as
  ``dataset.options`` and encoder specs), so a key added to the schema is covered without
  editing this file; ``validate_config``, ``snakemake -n`` and (for a key whose injection the
  old rules executed) a real ``snakemake --cores 1`` are each given every payload;
* every value a rule puts into its shell command is quoted (``{...:q}``), checked on the
  rules' source.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

import backretrieval.config
from backretrieval.config import schema, validate_config
from backretrieval.errors import ConfigError
from snake import ROOT, run_snakemake

TINY = ROOT / "tests" / "data" / "tiny.yaml"

#: what a payload does when a shell runs it: create the file CANARY (relative: in the job's
#: folder; the real-run tests put an absolute path of their own in its place)
PAYLOADS = {
    "command substitution": "x$(touch CANARY)",
    "backticks": "x`touch CANARY`",
    "semicolon": "x;touch CANARY",
    "pipe": "x|touch CANARY",
    "newline": "x\ntouch CANARY",
    "quote": "x'; touch CANARY; '",
    "double quote": 'x"; touch CANARY; "',
    "and": "x&&touch CANARY",
    "redirection": "x>CANARY",
    "brace": "x{CANARY}",
}


def combined(canary: str = "CANARY") -> str:
    """Every payload in one string (one Snakemake run each key instead of one per payload)."""
    return f"x$(touch {canary})`touch {canary}`;touch {canary}|touch {canary}\n'\"{{}}"


# ------------------------------------------------------------------------ the schema's strings
class Key(str):
    """A path element: any key of a map but ``declared`` (written ``*``)."""

    def __new__(cls, declared=()):
        obj = super().__new__(cls, "*")
        obj.declared = frozenset(declared)
        return obj

    def __hash__(self):
        return hash(("*", self.declared))

    def __eq__(self, other):
        return isinstance(other, Key) and other.declared == self.declared


def _resolve(node: dict, root: dict, seen: tuple[str, ...]) -> tuple[dict, tuple[str, ...]]:
    """``node`` with its ``$ref`` (a local ``#/$defs/<name>``) merged in; the refs followed so far."""
    while isinstance(node, dict) and "$ref" in node:
        name = node["$ref"].removeprefix("#/$defs/")
        node = {**root["$defs"][name], **{k: v for k, v in node.items() if k != "$ref"}}
        seen = (*seen, name)
    return node, seen


def _walk(node: dict, root: dict, path: tuple, seen: tuple[str, ...], out: list) -> None:
    node, seen = _resolve(node, root, seen)
    if any(seen.count(name) > 2 for name in seen):  # a recursive definition (free-form settings): two levels
        return
    for alt in node.get("anyOf", []) + node.get("oneOf", []):
        _walk(alt, root, path, seen, out)
    types = node.get("type")
    types = [types] if isinstance(types, str) else types
    if path and (types is None or "string" in types) and not node.get("anyOf"):
        out.append(("value", path))
    if types is None or "object" in types:
        if "propertyNames" in node:
            out.append(("key", path))
        for key, sub in (node.get("properties") or {}).items():
            _walk(sub, root, (*path, key), seen, out)
        if isinstance(node.get("additionalProperties"), dict):
            # any key but the declared ones (an encoder spec's `type` is a property of its own)
            _walk(node["additionalProperties"], root, (*path, Key(node.get("properties") or ())), seen, out)
    if (types is None or "array" in types) and isinstance(node.get("items"), dict):
        _walk(node["items"], root, (*path, 0), seen, out)


def string_slots(sch: dict | None = None) -> list[tuple[str, tuple]]:
    """(kind, path) of every place a config may hold a string the workflow reads: kind "value"
    (a string at ``path``; ``*`` stands for any key of a map, 0 for a list's items) or "key" (a
    key of the map at ``path``: encoder, backbone, corpus names, ...)."""
    sch = sch or schema()
    out: list[tuple[str, tuple]] = []
    _walk(sch, sch, (), (), out)
    return sorted(set(out), key=lambda s: (s[0], [str(p) for p in s[1]]))


def base_config() -> dict:
    """tests/data/tiny.yaml with every optional section the schema has a string in: a corpus, a
    findings override, so that an injected string is the config's only schema error."""
    cfg = yaml.safe_load(TINY.read_text(encoding="utf-8"))
    cfg["corpora"] = {"extra": {"source": "prepared", "options": {"path": "data/extra"}}}
    cfg["findings"] = {"hubness": {"seed": 0}}
    cfg["dataset"]["options"] = {}  # the SYNTHETIC source reads no option; a payload goes in a new key
    return cfg


def _concrete(cfg: dict, path: tuple, fresh_last: bool) -> tuple:
    """``path`` with each ``*`` replaced by a key of that map in ``cfg`` (its first; a new one,
    "k", where the map is empty or ``fresh_last`` for a last ``*``)."""
    out, cur = [], cfg
    for i, p in enumerate(path):
        if isinstance(p, Key):
            last = i == len(path) - 1
            free = [k for k in cur if k not in p.declared] if isinstance(cur, dict) else []
            p = free[0] if free and not (last and fresh_last) else "k"
        out.append(p)
        cur = cur.get(p) if isinstance(cur, dict) else (cur[p] if isinstance(cur, list) and cur else None)
    return tuple(out)


def _set(cfg: dict, path: tuple, value) -> None:
    cur = cfg
    for p, nxt in zip(path, path[1:]):
        if isinstance(cur, list):
            cur = cur[p]
            continue
        if not isinstance(cur.get(p), (dict, list)):
            cur[p] = [] if isinstance(nxt, int) else {}
        cur = cur[p]
    if isinstance(cur, list):
        cur[path[-1] : path[-1] + 1] = [value]
    else:
        cur[path[-1]] = value


def _get(cfg: dict, path: tuple):
    for p in path:
        if isinstance(cfg, list):
            cfg = cfg[p] if len(cfg) > p else None
        else:
            cfg = cfg.get(p) if isinstance(cfg, dict) else None
    return cfg


def injected(kind: str, path: tuple, bad: str) -> tuple[dict, str]:
    """The base config with ``bad`` at the slot; the field its error must name."""
    cfg = base_config()
    if kind == "value":
        where = _concrete(cfg, path, fresh_last=False)
        _set(cfg, where, bad)
    else:
        where = _concrete(cfg, path, fresh_last=False)
        container = _get(cfg, where)
        value = copy.deepcopy(next(iter(container.values()))) if isinstance(container, dict) and container else "v"
        if not isinstance(container, dict):
            _set(cfg, where, {})
            container = _get(cfg, where)
        container[bad] = value
    return cfg, ".".join(map(str, where))


SLOTS = string_slots()
SLOT_IDS = [f"{kind}:{'.'.join(map(str, path))}" for kind, path in SLOTS]


def test_the_walk_finds_the_strings_the_workflow_reads():
    """The walk itself: the fields the workflow turns into paths, names and commands are among
    the slots (a broken walk would make the tests below check nothing)."""
    ids = set(SLOT_IDS)
    for slot in [
        "value:run_name",
        "value:reports_dir",
        "value:cache_dir",
        "value:dataset.name",
        "value:dataset.options.*",
        "value:languages.0",
        "value:directions.0",
        "value:image_backbone",
        "key:backbones",
        "key:encoders",
        "key:corpora",
        "value:encoders.*.type",
        "value:encoders.*.*",
        "value:case_study.base_encoders.0",
        "value:case_study.train_corpus",
        "value:human_study.ratings",
        "value:findings.*.*",
    ]:
        assert slot in ids, f"{slot} not found by the schema walk: {sorted(ids)}"
    base = base_config()
    errors = list(jsonschema.Draft202012Validator(schema()).iter_errors(base))
    assert not errors, [e.message for e in errors]


@pytest.fixture
def schema_once(monkeypatch):
    """validate_config with the schema read once (it reads the file on every call)."""
    sch = schema()
    monkeypatch.setattr(backretrieval.config.validation, "schema", lambda: sch)


@pytest.mark.parametrize(("kind", "path"), SLOTS, ids=SLOT_IDS)
def test_validation_refuses_a_shell_metacharacter_naming_the_field(schema_once, kind, path):
    """Every payload (PAYLOADS) at the slot: refused, the message names the field (a map's key: as a key)."""
    wrong = {}
    for payload, bad in PAYLOADS.items():
        cfg, field = injected(kind, path, bad)
        expected = f"c.yaml: field '{field}': " + ("key " if kind == "key" else "")
        try:
            validate_config(cfg, "c.yaml")
        except ConfigError as exc:
            if not str(exc).startswith(expected):
                wrong[payload] = f"wrong message: {exc}"
        else:
            wrong[payload] = "accepted"
    assert not wrong, wrong


def test_path_values_may_hold_spaces_and_non_ascii_letters():
    """The schema refuses metacharacters, not ordinary folder names."""
    cfg = base_config()
    cfg["reports_dir"] = "reports/a folder (ü)"
    cfg["cache_dir"] = ".cache/Grüße mit Leerzeichen"
    cfg["dataset"]["options"] = {"path": "data/a path with spaces and ü"}
    errors = list(jsonschema.Draft202012Validator(schema()).iter_errors(cfg))
    assert not errors, [e.message for e in errors]


@pytest.mark.parametrize(("kind", "path"), SLOTS, ids=SLOT_IDS)
def test_dry_run_stops_before_any_job(tmp_path, kind, path):
    """``snakemake -n`` with the payloads in the field: refused at parse, the field named, nothing run."""
    cfg, field = injected(kind, path, combined())
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    res = run_snakemake(tmp_path, "-n", configfile=tmp_path / "cfg.yaml", check=False)
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    assert f"field '{field}'" in out, out[-3000:]
    assert not list(tmp_path.rglob("CANARY*")), out[-3000:]


def _real_run(tmp_path: Path, cfg: dict) -> tuple[str, Path]:
    (tmp_path / "wd").mkdir()
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    res = run_snakemake(
        tmp_path / "wd",
        "--",
        "embed_images",
        "sample",
        configfile=tmp_path / "cfg.yaml",
        cores=1,
        check=False,
        timeout=600,
    )
    return res.stdout + res.stderr, tmp_path / "wd"


def test_real_run_with_an_injected_backbone_name_runs_nothing(tmp_path):
    """The image backbone's name reaches embed_images' command (its --backbone and --out):
    before the schema checked names and the rule quoted them, this run created the canary."""
    canary = tmp_path / "CANARY"
    bad = combined(str(canary))
    cfg = base_config()
    cfg["backbones"] = {bad: cfg["backbones"][cfg["image_backbone"]]}
    cfg["image_backbone"] = bad
    out, wd = _real_run(tmp_path, cfg)
    assert not canary.exists(), out[-3000:]
    assert "field 'backbones': key " in out, out[-3000:]
    assert not (wd / "data").exists(), "a job ran"


@pytest.mark.parametrize("field", ["reports_dir", "run_name"])
def test_real_run_with_an_injected_path_runs_nothing(tmp_path, field):
    canary = tmp_path / "CANARY"
    cfg = base_config()
    cfg[field] = f"reports/x$(touch {canary})" if field == "reports_dir" else f"x$(touch {canary})"
    out, wd = _real_run(tmp_path, cfg)
    assert not canary.exists(), out[-3000:]
    assert f"field '{field}'" in out, out[-3000:]
    assert not (wd / "data").exists(), "a job ran"


# ------------------------------------------------------------------------- the rules' commands
_FIELD = re.compile(r"(?<!\{)\{([^{}]*)\}(?!\})")


def shell_fields() -> list[tuple[str, int, str]]:
    """(file, line, field) of every ``{...}`` in the ``shell:`` strings of the Snakefile and
    workflow/rules/*.smk (each rule shows its command: a ``shell:`` runs to the next directive)."""
    out = []
    for f in [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]:
        in_shell = False
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            s = line.strip()
            if s == "shell:":
                in_shell = True
            elif in_shell and s and not re.match(r"^(rule\b|use rule\b|\w+:$|if .*:$|#)", s):
                literals = re.findall(r'"((?:[^"\\]|\\.)*)"', s)
                out += [(f.name, n, m.group(1)) for lit in literals for m in _FIELD.finditer(lit)]
            else:
                in_shell = False
    return out


def test_every_value_in_a_shell_command_is_quoted():
    fields = shell_fields()
    assert len(fields) > 100, "the shell strings were not found"
    unquoted = [f"{f}:{n}: {{{x}}}" for f, n, x in fields if not x.endswith(":q")]
    assert not unquoted, "values put into a shell command without :q:\n" + "\n".join(unquoted)


# ------------------------------------------------------------- where a run may write its files
@pytest.mark.parametrize(
    "value",
    ["../x", "src/backretrieval", "/tmp/reports", "reports/../src", "reports/x/..", "~/reports", "reportsX", "."],
)
def test_reports_dir_stays_inside_the_checkouts_reports_folder(value):
    cfg = base_config()
    cfg["reports_dir"] = value
    with pytest.raises(
        ConfigError, match=r"^c\.yaml: field 'reports_dir': .*must stay inside the checkout's 'reports/'"
    ):
        validate_config(cfg, "c.yaml")


@pytest.mark.parametrize("value", ["reports/tiny", "./reports/x", "reports/a folder (ü)/b"])
def test_reports_dir_under_reports_is_fine(value):
    cfg = base_config()
    del cfg["corpora"]  # a relation of its own (its folder), not what this test is about
    cfg["reports_dir"] = value
    validate_config(cfg, "c.yaml")


@pytest.mark.parametrize("value", ["..", ".", "-x", ".hidden"])
def test_run_name_keeps_the_artifacts_inside_the_checkouts_artifacts_folder(value):
    """artifacts/<run_name> (and logs/<run_name>): never artifacts/.. nor artifacts itself."""
    cfg = base_config()
    cfg["run_name"] = value
    with pytest.raises(ConfigError, match=r"^c\.yaml: field 'run_name': "):
        validate_config(cfg, "c.yaml")


def test_a_real_run_with_reports_dir_outside_reports_runs_nothing(tmp_path):
    cfg = base_config()
    cfg["reports_dir"] = "src/backretrieval"
    out, wd = _real_run(tmp_path, cfg)
    assert "field 'reports_dir'" in out, out[-3000:]
    assert not (wd / "data").exists() and not (wd / "src").exists(), "a job ran"
