"""No dead links: every relative link in the user-facing markdown (README.md, docs/*.md,
benchmarks/README.md, CHANGELOG.md) names a file of the repository, and a ``#fragment`` names a
heading (or an explicit ``<a id>`` / ``<a name>``) of the target; repository paths cited in the
docs in backticks, and in the comments of dvc.yaml / scripts/dvc_stages.py, exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(
    {ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "README.md", *(ROOT / "docs").glob("*.md")}
)
#: files whose comments cite documents by path (not markdown)
CITING = [ROOT / "dvc.yaml", ROOT / "scripts" / "dvc_stages.py"]
#: top-level folders of tracked sources: a path starting with one of them is a repository file
SOURCE_DIRS = ("docs", "scripts", "src", "workflow", "tests", "benchmarks", "config", "profiles")

_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`]*`")
# [text](target) and ![alt](target), with an optional "title"; text may hold one level of [..]
_LINK = re.compile(r"!?\[(?:[^\][]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
_DIRS = "|".join(SOURCE_DIRS)
_PATH_IN_CODE = re.compile(rf"`((?:{_DIRS})/[^`\s]+)`")
_PATH_IN_COMMENT = re.compile(rf"(?<![\w/.-])((?:{_DIRS})/[\w./-]+\.(?:md|py|yaml|yml|smk|toml|json|txt))")
#: a document named in prose by its file name alone (README.md, DATASETS.md, ...)
_DOC_NAME = re.compile(r"(?<![\w/.-])([A-Z][A-Z0-9_]+\.md)\b")
#: where a document named by its file name alone may live
DOC_HOMES = ("", "docs", "benchmarks")


def _prose_lines(text: str, keep_code: bool = False) -> list[str]:
    """The lines of ``text`` with fenced code blocks blanked (and inline code, unless ``keep_code``)."""
    out, fence = [], False
    for line in text.split("\n"):
        if _FENCE.match(line):
            fence = not fence
            out.append("")
        elif fence:
            out.append("")
        else:
            out.append(line if keep_code else _INLINE_CODE.sub("", line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: markup dropped (link text and code kept), lower case,
    everything but letters, digits, spaces, ``-`` and ``_`` removed, spaces to ``-``."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links -> their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every fragment a link to ``path`` may name (repeated headings get -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for line in _prose_lines(path.read_text(encoding="utf-8"), keep_code=True):
        out.update(_HTML_ANCHOR.findall(line))
        m = _HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def dead_links(doc: Path, root: Path = ROOT) -> list[str]:
    """``file:line: target (why)`` for every relative link of ``doc`` that does not resolve."""
    bad = []
    for i, line in enumerate(_prose_lines(doc.read_text(encoding="utf-8")), 1):
        targets = [m.group(1) for m in _LINK.finditer(line)] + [m.group(1) for m in _REF_DEF.finditer(line)]
        for target in targets:
            if not target or _SCHEME.match(target):
                continue
            path_part, _, fragment = target.partition("#")
            dest = (doc.parent / path_part).resolve() if path_part else doc
            where = f"{doc.relative_to(root)}:{i}: {target}"
            if not dest.exists():
                bad.append(f"{where} (no such file)")
            elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                bad.append(f"{where} (no heading with anchor #{fragment} in {dest.relative_to(root)})")
    return bad


def dead_paths(doc: Path, pattern: re.Pattern[str], keep_code: bool, root: Path = ROOT) -> list[str]:
    """Cited repository paths (no globs or placeholders) that do not exist."""
    bad = []
    text = doc.read_text(encoding="utf-8")
    lines = _prose_lines(text, keep_code=True) if keep_code else text.split("\n")
    for i, line in enumerate(lines, 1):
        for m in pattern.finditer(line):
            cited = m.group(1).rstrip(".,;:)")
            if any(c in cited for c in "*<>{}$"):
                continue
            file_part, _, test_name = cited.partition("::")
            where = f"{doc.relative_to(root)}:{i}: {cited}"
            if not (root / file_part).exists():
                bad.append(f"{where} (no such file)")
            elif test_name and f"def {test_name.split('[')[0]}(" not in (root / file_part).read_text(encoding="utf-8"):
                bad.append(f"{where} (no such test in {file_part})")
    return bad


def unknown_documents(doc: Path, root: Path = ROOT) -> list[str]:
    """Documents named in the prose of ``doc`` (outside code) by file name that are nowhere in
    the repository's document folders."""
    bad = []
    for i, line in enumerate(_prose_lines(doc.read_text(encoding="utf-8")), 1):
        for name in _DOC_NAME.findall(line):
            if not any((root / home / name).is_file() for home in DOC_HOMES):
                bad.append(f"{doc.relative_to(root)}:{i}: {name} (not in {', '.join(h or '.' for h in DOC_HOMES)})")
    return bad


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_documents_named_in_prose_exist(doc: Path) -> None:
    assert unknown_documents(doc) == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    assert dead_links(doc) == []


# the CHANGELOG is history: it names files as they were then
@pytest.mark.parametrize("doc", [d for d in DOCS if d.name != "CHANGELOG.md"], ids=lambda p: str(p.relative_to(ROOT)))
def test_paths_cited_in_backticks_exist(doc: Path) -> None:
    assert dead_paths(doc, _PATH_IN_CODE, keep_code=True) == []


@pytest.mark.parametrize("path", CITING, ids=lambda p: str(p.relative_to(ROOT)))
def test_paths_cited_in_comments_exist(path: Path) -> None:
    assert dead_paths(path, _PATH_IN_COMMENT, keep_code=False) == []


def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    """Each check fails on a dead target and passes the live ones beside it, in a small
    repository of its own (a check that cannot fail proves nothing)."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "README.md").write_text("# Project\n\n## Snakemake and DVC\n", encoding="utf-8")
    (tmp_path / "docs" / "ARCHITECTURE.md").write_text("# Architecture\n", encoding="utf-8")
    (tmp_path / "tests" / "test_x.py").write_text("def test_there():\n    pass\n", encoding="utf-8")
    doc = tmp_path / "docs" / "probe.md"
    doc.write_text(
        "# A heading, with `code` and punctuation!\n\n## Twice\n\n## Twice\n\n"
        "[ok](ARCHITECTURE.md) [ok](#a-heading-with-code-and-punctuation) [ok](#twice-1)\n"
        "[ok](../README.md#snakemake-and-dvc) [web](https://example.org/x.md) [ok][ref]\n"
        "`[not a link](NOWHERE.md)`\n\n```\n[not a link](NOWHERE.md)\n```\n"
        "[dead](DVC.md) [dead](#twice-2) [dead](ARCHITECTURE.md#no-such-section)\n"
        "`docs/ARCHITECTURE.md` `tests/test_x.py::test_there` `config/*.yaml`\n"
        "`docs/DEVELOPERS.md` `tests/test_x.py::test_not_there`\n\n"
        "[ref]: ../README.md\n[gone]: ../GONE.md\n",
        encoding="utf-8",
    )
    assert [b.split(": ", 1)[1] for b in dead_links(doc, tmp_path)] == [
        "DVC.md (no such file)",
        "#twice-2 (no heading with anchor #twice-2 in docs/probe.md)",
        "ARCHITECTURE.md#no-such-section (no heading with anchor #no-such-section in docs/ARCHITECTURE.md)",
        "../GONE.md (no such file)",
    ]
    assert [b.split(": ", 1)[1] for b in dead_paths(doc, _PATH_IN_CODE, True, tmp_path)] == [
        "docs/DEVELOPERS.md (no such file)",
        "tests/test_x.py::test_not_there (no such test in tests/test_x.py)",
    ]
    (tmp_path / "docs" / "std.md").write_text(
        "## Standards (from DEVELOPERS.md)\nSee ARCHITECTURE.md and README.md; `--out FILE.md`.\n", encoding="utf-8"
    )
    assert unknown_documents(tmp_path / "docs" / "std.md", tmp_path) == [
        "docs/std.md:1: DEVELOPERS.md (not in ., docs, benchmarks)"
    ]
    yaml = tmp_path / "dvc.yaml"
    yaml.write_text("#   dvc push   (remote: .dvc/config, docs/DVC.md; docs/ARCHITECTURE.md)\n", encoding="utf-8")
    assert dead_paths(yaml, _PATH_IN_COMMENT, False, tmp_path) == ["dvc.yaml:1: docs/DVC.md (no such file)"]
