"""What counts as text a reader can see."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from esbridge.line_ends import BYTE_LINE_END

# Invisible code points that are not Unicode format characters (Cf) but are default-ignorable as well:
# Hangul fillers, the combining grapheme joiner, variation selectors, the Mongolian free variation selectors.
_IGNORABLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u3164\uffa0") | frozenset(
    map(chr, [*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)])
)


def is_blank(text: str) -> bool:
    """Whether ``text`` shows nothing: only whitespace and invisible characters (format characters such as zero-width
    spaces and joiners, U+2060, a byte order mark; control characters such as NUL; variation selectors, Hangul
    fillers)."""
    return all(char.isspace() or char in _IGNORABLE or unicodedata.category(char) in ("Cf", "Cc") for char in text)


def some_of(names: Sequence[str], limit: int = 10) -> str:
    """``names`` joined by commas, the first ``limit`` only and how many more: an error naming what a request got
    wrong stays short however many names it sent."""
    shown = ", ".join(names[:limit])
    return f"{shown} and {len(names) - limit} more" if len(names) > limit else shown


def where_not_utf8(exc: UnicodeDecodeError) -> str:
    """Where a whole file stops being UTF-8, by line, for a person to find it: ``line 5000: invalid UTF-8: byte 0xe9
    at byte offset 5 of the line (invalid continuation byte)`` (the decoder itself gives an offset in the file)."""
    line, said = line_not_utf8(exc)
    return f"line {line}: {said}"


def line_not_utf8(exc: UnicodeDecodeError) -> tuple[int, str]:
    """The line where a whole file stops being UTF-8, and what is wrong there: ``invalid UTF-8: byte 0xe9 at byte
    offset 5 of the line (invalid continuation byte)``. Lines end at ``\\n``, ``\\r\\n`` or ``\\r``, as
    ``esbridge.line_ends`` splits them; a byte order mark the decoder dropped (``utf-8-sig``) is not counted."""
    raw, start = exc.object, exc.start
    line, line_start = 1, 0
    for end in BYTE_LINE_END.finditer(raw, 0, start):
        line, line_start = line + 1, end.end()
    offset = start - line_start
    return line, f"invalid UTF-8: byte 0x{raw[start]:02x} at byte offset {offset} of the line ({exc.reason})"
