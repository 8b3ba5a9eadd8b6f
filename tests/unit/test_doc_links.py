"""Every relative link between the Markdown docs (`[text](file.md#anchor)`) names a file that exists and, when it
has an anchor, a heading of that file (GitHub's anchor for it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted({ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("benchmarks/*.md")})

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"`[^`]*`")


def _prose_lines(path: Path) -> list[str]:
    """The file's lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def _slug(heading: str) -> str:
    """GitHub's anchor: lower case, punctuation but `-` and `_` dropped, spaces as `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in _prose_lines(path):
        match = _HEADING.match(line)
        if match:
            slug = _slug(match.group(2))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(path: Path) -> list[str]:
    """Relative link targets in prose (not in code spans or code blocks)."""
    text = "\n".join(_CODE_SPAN.sub("", line) for line in _prose_lines(path))
    return [target for target in _LINK.findall(text) if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_relative_links_name_a_file_and_a_heading_that_exist(doc: Path) -> None:
    broken = []
    for target in links(doc):
        file_part, _, anchor = target.partition("#")
        linked = (doc.parent / file_part).resolve() if file_part else doc
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no such heading in {linked.name}")
    assert not broken, f"{doc.relative_to(ROOT)}: {broken}"


def test_the_anchor_of_a_heading_is_githubs() -> None:
    assert _slug("Registries, entities, tools as hits: minority types") == (
        "registries-entities-tools-as-hits-minority-types"
    )
    assert _slug("Live engines without Docker: `scripts/engines`") == "live-engines-without-docker-scriptsengines"
