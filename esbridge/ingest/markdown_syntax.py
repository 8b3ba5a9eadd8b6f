"""One note's Markdown, parsed by markdown-it-py into frontmatter, sections, links and tags.

Two inline rules extend CommonMark: ``[[...]]``/``![[...]]`` wikilinks and ``#tags``. Being parser
rules, they never fire inside code spans, code blocks, URLs or link destinations. A tag starts with
``#`` after whitespace or at the start of a line, holds letters, digits, ``_ - / .`` and at least
one non-digit (Obsidian's rule, plus Dendron's dotted tags); a trailing ``.`` or ``/`` is punctuation.

Code blocks (fenced and indented) are taken out of the prose and kept in ``Section.code``; inline code
spans stay in the prose and are also added to ``Section.code``. The body field then stays prose for
BM25 length normalisation and the embedding model, while the code field's identifier-splitting
analyzer finds ``getUserName`` by ``user``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from html.parser import HTMLParser

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

from esbridge.ingest.links import Wikilink, parse_wikilink
from esbridge.ingest.model import Section

_TAG_BODY = re.compile(r"[\w/.\-]+")
_TAG_TRAILING_PUNCTUATION = "./"
_CONTAINERS = {"bullet_list_open", "ordered_list_open", "blockquote_open", "table_open"}
_CONTAINER_CLOSES = {name.replace("_open", "_close") for name in _CONTAINERS}


@dataclass(frozen=True)
class ParsedNote:
    """What the Markdown of one note says, before links are resolved against the vault.

    ``references`` are wikilinks and Markdown link destinations (``href`` strings) in document order.
    """

    frontmatter: str | None
    sections: tuple[Section, ...]
    first_h1: str | None
    references: tuple[Wikilink | str, ...]
    tags: tuple[str, ...]
    frontmatter_unclosed: bool = False


@cache
def markdown_parser() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"]).use(front_matter_plugin)
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    md.inline.ruler.before("link", "hashtag", _hashtag_rule)
    return md


@cache
def _frontmatter_parser() -> MarkdownIt:
    return MarkdownIt("zero").use(front_matter_plugin).disable("inline")


def read_frontmatter(source: str) -> str | None:
    """The raw YAML between the opening and closing ``---`` lines, if the note starts with one."""
    tokens = _frontmatter_parser().parse(source)
    return tokens[0].content if tokens and tokens[0].type == "front_matter" else None


def parse_note(source: str, label_of: Callable[[Wikilink], str]) -> ParsedNote:
    """Parse a note; ``label_of`` says what a reader sees in place of a wikilink (convention-dependent)."""
    tokens = markdown_parser().parse(source)
    frontmatter = tokens[0].content if tokens and tokens[0].type == "front_matter" else None
    walker = _SectionWalker(_InlineText(label_of))
    walker.walk(tokens)
    unclosed = frontmatter is None and source.lstrip("\ufeff").splitlines()[:1] == ["---"]
    return ParsedNote(
        frontmatter=frontmatter,
        sections=tuple(walker.sections()),
        first_h1=walker.first_h1,
        references=tuple(walker.inline.references),
        tags=tuple(walker.inline.tags),
        frontmatter_unclosed=unclosed,
    )


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    start = state.pos
    embed = state.src.startswith("![[", start)
    if not embed and not state.src.startswith("[[", start):
        return False
    opening = start + (3 if embed else 2)
    closing = state.src.find("]]", opening, state.posMax)
    if closing < 0:
        return False
    inner = state.src[opening:closing]
    if not inner.strip() or "\n" in inner or "[" in inner:
        return False
    if not silent:
        token = state.push("wikilink", "", 0)
        token.meta = {"link": parse_wikilink(inner, embed=embed)}
        token.content = inner
    state.pos = closing + 2
    return True


def _hashtag_rule(state: StateInline, silent: bool) -> bool:
    start = state.pos
    if state.src[start] != "#" or (start > 0 and not state.src[start - 1].isspace()):
        return False
    match = _TAG_BODY.match(state.src, start + 1, state.posMax)
    if match is None:
        return False
    tag = match.group().rstrip(_TAG_TRAILING_PUNCTUATION)
    if not tag or tag.replace("/", "").replace(".", "").replace("-", "").replace("_", "").isdigit():
        return False
    if not silent:
        token = state.push("hashtag", "", 0)
        token.content = tag
    state.pos = start + 1 + len(tag)
    return True


class _InlineText:
    """Plain text of one inline token, collecting the links, tags and code spans on the way."""

    def __init__(self, label_of: Callable[[Wikilink], str]) -> None:
        self.label_of = label_of
        self.references: list[Wikilink | str] = []
        self.tags: list[str] = []
        self.code_spans: list[str] = []

    def render(self, inline: Token) -> str:
        parts: list[str] = []
        for child in inline.children or ():
            kind = child.type
            if kind in ("text", "text_special"):
                parts.append(child.content)
            elif kind == "code_inline":
                parts.append(child.content)
                self.code_spans.append(child.content)
            elif kind in ("softbreak", "hardbreak"):
                parts.append("\n")
            elif kind == "image":
                parts.append(child.content)
            elif kind == "link_open":
                href = child.attrGet("href")
                if isinstance(href, str):
                    self.references.append(href)
            elif kind == "wikilink":
                link: Wikilink = child.meta["link"]
                self.references.append(link)
                parts.append(self.label_of(link))
            elif kind == "hashtag":
                self.tags.append(child.content)
                parts.append("#" + child.content)
        return "".join(parts)


class _SectionWalker:
    """Cuts the block tokens into sections at headings. Inside a list, quote or table, each item or
    table row is one line and the whole container one paragraph."""

    def __init__(self, inline: _InlineText) -> None:
        self.inline = inline
        self.first_h1: str | None = None
        self._done: list[Section] = []
        self._path: list[tuple[int, str]] = []
        self._paragraphs: list[str] = []
        self._code: list[str] = []
        self._lines: list[str] = []
        self._row: list[str] = []
        self._depth = 0

    def walk(self, tokens: Sequence[Token]) -> None:
        heading_level: int | None = None
        in_cell = False
        for token in tokens:
            kind = token.type
            if kind == "heading_open" and self._depth == 0:
                heading_level = int(token.tag[1:])
            elif kind == "inline" and heading_level is not None:
                self._heading(heading_level, token)
                heading_level = None
            elif kind == "inline" and in_cell:
                self._row.append(" ".join(self.inline.render(token).split()))
            elif kind == "inline":
                self._text(self.inline.render(token))
            elif kind in ("fence", "code_block"):
                self._code_block(token.content)
            elif kind == "html_block":
                self._text(_html_text(token.content))
            elif kind in _CONTAINERS:
                self._depth += 1
            elif kind in _CONTAINER_CLOSES:
                self._depth -= 1
                if self._depth == 0:
                    self._add_paragraph("\n".join(self._lines))
                    self._lines = []
            elif kind in ("th_open", "td_open", "th_close", "td_close"):
                in_cell = kind.endswith("_open")
            elif kind == "tr_close":
                self._lines.append(" | ".join(self._row))
                self._row = []

    def sections(self) -> list[Section]:
        """The sections in order; a heading with no text of its own is dropped when a subsection follows,
        which carries it in its heading path."""
        self._flush()
        kept = []
        for index, section in enumerate(self._done):
            following = self._done[index + 1].headings if index + 1 < len(self._done) else ()
            depth = len(section.headings)
            leads_on = len(following) > depth and following[:depth] == section.headings
            if section.text or section.code or (section.headings and not leads_on):
                kept.append(section)
        return kept

    def _heading(self, level: int, inline: Token) -> None:
        self._flush()  # before rendering: code spans in the heading belong to the new section
        text = self.inline.render(inline).strip()
        if level == 1 and self.first_h1 is None and text:
            self.first_h1 = text
        while self._path and self._path[-1][0] >= level:
            self._path.pop()
        self._path.append((level, text))

    def _text(self, text: str) -> None:
        if self._depth == 0:
            self._add_paragraph(text)
        elif text.strip():
            self._lines.append(text.strip())

    def _code_block(self, code: str) -> None:
        code = code.strip("\n")
        if code.strip():
            self._code.append(code)

    def _add_paragraph(self, text: str) -> None:
        text = text.strip()
        if text:
            self._paragraphs.append(text)

    def _flush(self) -> None:
        spans = self.inline.code_spans
        code = tuple(dict.fromkeys([*self._code, *(span for span in spans if span.strip())]))
        headings = tuple(text for _, text in self._path)
        if self._paragraphs or code or headings:
            self._done.append(Section("\n\n".join(self._paragraphs), headings, code))
        self._paragraphs, self._code = [], []
        spans.clear()


def _html_text(html: str) -> str:
    collector = _HtmlTextCollector()
    collector.feed(html)
    collector.close()
    return " ".join("".join(collector.parts).split())


class _HtmlTextCollector(HTMLParser):
    _INVISIBLE = frozenset({"script", "style"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._INVISIBLE:
            self._hidden += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self._INVISIBLE and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data + " ")
