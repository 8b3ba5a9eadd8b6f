"""Splitting text files into lines at ``\\n``, ``\\r\\n`` or ``\\r`` (old Mac files), and at nothing else.

``str.splitlines`` also ends a line at U+2028, U+0085, a form feed and other characters a JSON string or an id may
hold, which would cut a record in two and number every later line wrong; a binary ``readline`` ends one at ``\\n``
only, so a file whose lines end in ``\\r`` reads as one line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Protocol

LINE_END = re.compile(r"\r\n?|\n")
BYTE_LINE_END = re.compile(rb"\r\n?|\n")
_BLOCK = 1 << 16


class Readable(Protocol):
    def readline(self, size: int = ..., /) -> bytes: ...


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` without their line ends; a last line that ends the text gives a last ``""``."""
    return LINE_END.split(text)


def byte_lines(handle: Readable, block: int = _BLOCK) -> Iterator[bytes]:
    """Each line of a binary file with its line end, as ``readline`` gives them, read at most ``block`` bytes at a
    time: a large file is never held whole, whichever of the three line ends it uses. Each read stops at a ``\\n``,
    so a file that cannot be read to its end (a damaged gzip) still gives every whole line before the damage."""
    parts: list[bytes] = []  # the line read so far, a piece per read, so a long line is joined once
    held = b""  # a read's last \r, kept until the next read says whether a \n follows it
    while data := handle.readline(block):
        data, held = held + data, b""
        if data.endswith(b"\r"):
            data, held = data[:-1], b"\r"
        if not parts and data.endswith(b"\n") and b"\r" not in data[:-2]:  # a whole line, as most are
            yield data
            continue
        start = 0
        for match in BYTE_LINE_END.finditer(data):
            parts.append(data[start : match.end()])
            yield b"".join(parts)
            parts, start = [], match.end()
        if start < len(data):
            parts.append(data[start:])
    if held or parts:
        yield b"".join([*parts, held])
