"""The version of the code a pipeline step runs: a hash of the step's modules as Python reads
them, so that the workflow reruns a job when its code changes and only then.

A step names its entry modules (``backretrieval.steps.metrics``); their closure is every module
of the package they import, wherever the import statement sits (module level, a function body,
``TYPE_CHECKING``; not a package's lazy ``__getattr__``, which runs for a caller that asks it), with each imported module's parent packages, which Python runs first. Each
module counts as its syntax tree without docstrings: a comment, a docstring, blank lines or a
moved line change no version; any other edit of a module in the closure changes it. Nothing is
imported (Snakemake computes these while it parses the workflow).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from pathlib import Path

PACKAGE = "backretrieval"
SRC = Path(__file__).resolve().parents[2]
#: hex digits of a version (a params value DVC and Snakemake both record)
DIGITS = 12


def _file(name: str) -> Path | None:
    base = SRC.joinpath(*name.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


#: a package's lazy attribute hooks: what they import runs only for a caller that asks for it
HOOKS = ("__getattr__", "__dir__")


def _nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node of ``tree`` except the bodies of module-level HOOKS."""
    skip = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in HOOKS]
    out: list[ast.AST] = []
    for top in tree.body:
        if top not in skip:
            out.extend(ast.walk(top))
    return out


def imports(name: str) -> frozenset[str]:
    """The package's modules that module ``name`` imports anywhere (and their parent packages)."""
    return frozenset(_parsed(name)[0])


def _imports(name: str, tree: ast.Module) -> list[str]:
    is_pkg = _file(name).name == "__init__.py"  # type: ignore[union-attr]
    package = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _nodes(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for target in targets:
            if target.split(".")[0] != PACKAGE:
                continue
            found.update(p for p in _parents(target) if _file(p))
    found.discard(name)
    return sorted(found)


def _expand(entry: str) -> list[str]:
    """``pkg.*``: every module of package ``pkg`` (one a registry imports by name); else ``entry``."""
    if not entry.endswith(".*"):
        return [entry]
    base = entry[:-2]
    folder = SRC.joinpath(*base.split("."))
    names = [".".join([base, *p.relative_to(folder).with_suffix("").parts]) for p in sorted(folder.rglob("*.py"))]
    return [n.removesuffix(".__init__") for n in names]


def closure(*entries: str) -> list[str]:
    """Every module the entries run, by name, sorted (the entries and their parents included);
    an entry ``pkg.*`` stands for every module of ``pkg``."""
    seen: set[str] = set()
    todo = [p for e in entries for x in _expand(e) for p in _parents(x)]
    while todo:
        name = todo.pop()
        if name in seen or _file(name) is None:
            continue
        seen.add(name)
        todo.extend(imports(name) - seen)
    return sorted(seen)


def _without_docstrings(tree: ast.Module) -> str:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def module_version(name: str) -> str:
    """sha256 of one module's syntax tree without docstrings (positions and comments excluded)."""
    return _parsed(name)[1]


#: (imports, version) per module file, kept between processes by (path, size, mtime) in
#: CACHE_FILE (Snakemake parses the workflow again in every job it spawns)
_MEMO: dict[str, tuple[list[str], str]] = {}
CACHE_FILE = Path(".snakemake/backretrieval/code-versions.json")


def _parsed(name: str) -> tuple[list[str], str]:
    path = _file(name)
    assert path is not None, name
    st = path.stat()
    key = f"{path}\0{st.st_size}\0{st.st_mtime_ns}"
    if key not in _MEMO:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found = _imports(name, tree)
        _MEMO[key] = (found, hashlib.sha256(_without_docstrings(tree).encode()).hexdigest())
    return _MEMO[key]


def _load_cache() -> None:
    try:
        _MEMO.update({k: (v[0], v[1]) for k, v in json.loads(CACHE_FILE.read_text(encoding="utf-8")).items()})
    except (OSError, ValueError, TypeError, IndexError):
        pass


def _save_cache() -> None:
    try:
        CACHE_FILE.parent.mkdir(parents=True, exist_ok=True)
        tmp = CACHE_FILE.with_name(f".{CACHE_FILE.name}.{os.getpid()}")
        tmp.write_text(json.dumps(_MEMO, sort_keys=True), encoding="utf-8")
        os.replace(tmp, CACHE_FILE)
    except OSError:
        pass


def code_version(*entries: str) -> str:
    """The version of the code that ``entries`` run (:func:`closure`), DIGITS hex digits."""
    h = hashlib.sha256()
    for name in closure(*entries):
        h.update(f"{name}\0{module_version(name)}\n".encode())
    return h.hexdigest()[:DIGITS]


#: The workflow's steps and the modules each runs (its `backretrieval <command>`'s step module);
#: every step also counts the command line's own modules (not their closure: they import every
#: step). A rule's param `code` is its step's version.
STEPS: dict[str, tuple[str, ...]] = {
    "prepare": ("backretrieval.steps.prepare",),
    "embed": ("backretrieval.steps.embed",),
    "sample": ("backretrieval.steps.sample",),
    "metrics": ("backretrieval.steps.metrics",),
    "report": ("backretrieval.steps.report",),
    "case_embed": ("backretrieval.steps.case_embed",),
    "case_study": ("backretrieval.steps.case_study",),
    "human_study": ("backretrieval.steps.human_study",),
    "results_doc": ("backretrieval.steps.results_doc",),
    # the findings registry imports every analysis module by name: the whole package counts
    "findings": ("backretrieval.steps.findings", "backretrieval.findings.*"),
}
CLI = ("backretrieval.cli", "backretrieval.cli._args", "backretrieval.cli.pipeline", "backretrieval.cli.findings")
#: where the workflow records them (relative to its folder's parent, the repository root): DVC
#: reads them as params, so `dvc status` and `dvc repro` see a step's code change too
VERSIONS_FILE = "workflow/code_versions.yaml"


def step_versions(root: Path | None = None) -> dict[str, str]:
    """{step: version} of every step of STEPS (the command line's modules included). With
    ``root``: also write them to ``root``/VERSIONS_FILE where it differs (nothing is written
    when they are the same, so a comment-only edit changes no file)."""
    known = len(_MEMO)
    if not known:
        _load_cache()
        known = len(_MEMO)
    cli = "".join(module_version(m) for m in CLI if _file(m))
    versions = {}
    for step, entries in STEPS.items():
        h = hashlib.sha256(f"{code_version(*entries)}\0{cli}".encode())
        versions[step] = h.hexdigest()[:DIGITS]
    if len(_MEMO) != known:
        _save_cache()
    if root is not None:
        path = Path(root) / VERSIONS_FILE
        text = versions_text(versions)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
    return versions


def versions_text(versions: dict[str, str]) -> str:
    """The text of VERSIONS_FILE."""
    head = "# GENERATED by the workflow (backretrieval._util.code_version): each step's code version\n"
    return head + "".join(f"{step}: '{version}'\n" for step, version in versions.items())
