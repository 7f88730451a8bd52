"""User-facing documents say what changed and why, without citing tracker issues: "issue 12",
"#12" or "PR 5" mean nothing to a reader without the tracker. Code (inline or fenced) is not
prose: a label such as `#1` there is allowed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted({ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")})

#: "#12" (not an HTML entity "&#39;", not a heading "# x"), "issue 12", "issues 12 and 13",
#: "PR 5", "pull request #5", "GH-12"
CITATION = re.compile(r"(?<![&\w])#\d+\b|\b(?:issues?|PRs?|pull requests?)\s+#?\d+|\bGH-\d+", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`]*`")


def citations(text: str) -> list[str]:
    """``line: match`` of every issue citation in the prose of ``text``."""
    out, fence = [], False
    for n, line in enumerate(text.split("\n"), 1):
        if _FENCE.match(line):
            fence = not fence
            continue
        if not fence:
            out += [f"{n}: {m.group(0)}" for m in CITATION.finditer(_INLINE_CODE.sub("", line))]
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_cite_no_issue_numbers(doc: Path) -> None:
    assert citations(doc.read_text(encoding="utf-8")) == []


def test_the_check_catches_citations() -> None:
    text = (
        "Fixed in issue 12 and #13; Issues 14 and 15; see PR 7, pull request #8 and GH-9.\n"
        "Kept: `#1`, &#39;, # Heading, C# 12, step 3, 2.3x.\n```\n#99 issue 99\n```\n"
    )
    assert [c.split(": ", 1)[1] for c in citations(text)] == [
        "issue 12",
        "#13",
        "Issues 14",
        "PR 7",
        "pull request #8",
        "GH-9",
    ]
