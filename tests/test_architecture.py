"""The layers of src/backretrieval and the one direction of imports between them
(docs/ARCHITECTURE.md): every import, at module level or inside a function, points to the
same or a lower layer, the subpackages of one layer import each other without cycles, and no
module imports itself back through others (every import counted, deferred ones included)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "src" / "backretrieval"

# unit (top-level module or subpackage of backretrieval) -> layer; imports only point down
LAYERS: dict[str, int] = {
    "__main__": 6,
    "__init__": 5,
    "cli": 5,
    "config": 5,
    "steps": 4,
    "study": 3,
    "reporting": 3,
    "evaluation": 3,
    "findings": 3,
    "encoders": 2,
    "images": 2,
    "data": 2,
    "metrics": 1,
    "stats": 1,
    "_util": 0,
    "errors": 0,
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:]) if "." in name else Path()
    return (PKG / rel).with_suffix(".py").is_file() or (PKG / rel / "__init__.py").is_file()


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every backretrieval import in ``path``, at any depth."""
    mod = _module_name(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "backretrieval"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "backretrieval":
                continue
            for a in node.names:  # "from pkg import name": name may be a submodule of pkg
                sub = f"{target}.{a.name}"
                out.append((node.lineno, sub if _is_module(sub) else target))
    return out


def _edges() -> list[tuple[str, str, str]]:
    """(importing unit, imported unit, where) for imports that cross units."""
    edges = []
    for path in sorted(PKG.rglob("*.py")):
        src = _unit(_module_name(path))
        for line, target in _imports(path):
            dst = _unit(target)
            if dst != src:
                edges.append((src, dst, f"{path.relative_to(PKG.parent)}:{line} imports {target}"))
    return edges


def test_every_unit_has_a_layer():
    units = {_unit(_module_name(p)) for p in PKG.rglob("*.py")}
    assert units <= set(LAYERS), f"give these a layer in LAYERS and docs/ARCHITECTURE.md: {sorted(units - set(LAYERS))}"
    assert {"steps", "study", "encoders", "metrics", "_util"} <= units  # the walk found the tree


def test_imports_point_down():
    edges = _edges()
    assert edges  # the parser sees the cross-unit imports
    upward = [where for src, dst, where in edges if LAYERS[dst] > LAYERS.get(src, -1)]
    assert not upward, "imports pointing to a higher layer:\n" + "\n".join(upward)


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (node -> the nodes it imports) as a closed path, or None."""
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done

    def visit(node: str, stack: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt, stack + [nxt])
                if cycle:
                    return cycle
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start, [start])
            if cycle:
                return cycle
    return None


def test_no_cycles_between_subpackages():
    graph: dict[str, set[str]] = {}
    for src, dst, _ in _edges():
        graph.setdefault(src, set()).add(dst)
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle between units: " + " -> ".join(cycle)


def module_graph(pkg: Path) -> dict[str, set[str]]:
    """The import graph of the modules of the package folder ``pkg``: module -> the modules of the
    package it imports, from every import statement anywhere in the module (module level, inside
    functions, under ``TYPE_CHECKING``); relative imports resolved; ``from p import name`` is an
    import of the submodule ``p.name`` where there is one, else of ``p`` (its ``__init__``)."""
    root = pkg.name

    def name_of(path: Path) -> str:
        parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    modules = {name_of(p): p for p in sorted(pkg.rglob("*.py"))}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                targets = [f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names]
            for target in targets:
                if target.split(".")[0] == root and target != mod:
                    graph[mod].add(target)
    return graph


def test_no_import_cycles_between_modules():
    """No module of src/backretrieval imports itself back through other modules, counting every
    import (deferred into a function or under TYPE_CHECKING included): a deferred import hides a
    cycle at run time but not from a reader."""
    graph = module_graph(PKG)
    assert len(graph) > 100 and graph["backretrieval.steps.report"]  # the walk found the modules and imports
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle between modules: " + " -> ".join(cycle)


def test_the_module_cycle_check_sees_a_deferred_and_a_type_checking_cycle(tmp_path):
    """The checker fails on circles made on purpose: one closed by an import inside a function
    (``from . import name`` of a submodule), one by a relative import under TYPE_CHECKING."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import a\n    return a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import D\n")
    (pkg / "d.py").write_text("import pkg.c\nclass D: ...\n")
    (pkg / "e.py").write_text("import pkg.a\nfrom pkg import c\n")  # imports into the cycles: no cycle of its own
    graph = module_graph(pkg)
    assert graph["pkg.sub.b"] == {"pkg.a"} and graph["pkg.c"] == {"pkg.d"} and graph["pkg.e"] == {"pkg.a", "pkg.c"}
    cycle = _find_cycle(graph)
    assert cycle in (["pkg.a", "pkg.sub.b", "pkg.a"], ["pkg.c", "pkg.d", "pkg.c"]), cycle
    (pkg / "sub" / "b.py").write_text("")
    assert _find_cycle(module_graph(pkg)) == ["pkg.c", "pkg.d", "pkg.c"]
    (pkg / "c.py").write_text("")
    assert _find_cycle(module_graph(pkg)) is None


def test_the_workflow_imports_no_heavy_library_when_it_parses():
    """Snakemake parses the workflow again in every job it spawns (each rule runs in a shadow
    directory), so what the .smk files import is paid once per job: pandas, scipy, torch and
    matplotlib would add about a CPU-second to each of the default run's ~40 jobs."""
    import re
    import subprocess
    import sys

    wf = PKG.parents[1] / "workflow" / "rules"
    imports = sorted(
        {
            m.group(0).strip()
            for f in wf.glob("*.smk")
            for m in re.finditer(
                r"^\s*(from backretrieval[\w.]* import [\w, ]+|import backretrieval[\w.]*)", f.read_text(), re.M
            )
        }
    )
    assert any("backretrieval.steps.plan" in i for i in imports), imports  # the rules' plumbing
    heavy = ("pandas", "scipy", "torch", "matplotlib", "statsmodels", "sklearn")
    code = "\n".join(imports) + f"\nimport sys\nprint(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"the workflow's parse-time imports load {out.strip()}:\n" + "\n".join(imports)


def test_the_command_line_and_a_model_free_step_start_without_heavy_libraries():
    """Every pipeline job starts through ``backretrieval.cli``: building its parser must not load
    pandas, SciPy, torch or matplotlib (seconds per job; the defaults come from
    ``evaluation.defaults``), and the steps of data, sampling, embedding, the case study's
    training and the human study load no SciPy, matplotlib or torch (their report steps do, when
    they run), nor does the figures module the training job draws its loss curves with load
    SciPy. A model-free embedding step sets its thread count without importing torch; torch,
    imported afterwards, gets that count (``limit_threads``'s import hook), and a later setting
    wins. 3 threads: not this machine's default (its core count) on 1 or 2 cores."""
    import subprocess
    import sys

    code = """
import sys
import backretrieval.cli
backretrieval.cli.build_parser()
heavy = ("pandas", "scipy", "torch", "matplotlib", "statsmodels", "sklearn")
print(sorted(m for m in heavy if m in sys.modules))
from backretrieval._util.device import limit_threads
from backretrieval.steps import case_study, embed, human_study, prepare, sample
print(sorted(m for m in heavy[1:] if m in sys.modules))
import backretrieval.reporting.figures  # the training job's loss curves: matplotlib when drawn, never SciPy
print(sorted(m for m in ("scipy", "statsmodels") if m in sys.modules))
limit_threads(5)
limit_threads(3)
print("torch" in sys.modules)
import torch
print(torch.get_num_threads())
limit_threads(1)
print(torch.get_num_threads())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:6] == ["[]", "[]", "[]", "False", "3", "1"], out
