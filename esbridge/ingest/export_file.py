"""Reading an esbridge export: its header, checked for what import needs, and its chunk lines one by one.

Lines are read as bytes, a block at a time, and decoded one by one, so a line that is not UTF-8 or not JSON fails
alone, with its line number; lines end at ``\n``, ``\r\n`` or ``\r``; a gzipped export is read as it is.
"""

from __future__ import annotations

import gzip
import json
import stat
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import fields
from io import BufferedIOBase
from pathlib import Path
from typing import Any

from esbridge.errors import SourceError
from esbridge.ids import shown_path
from esbridge.ingest.json_lines import json_error_location
from esbridge.ingest.json_values import json_type
from esbridge.line_ends import byte_lines
from esbridge.mappings.schema import IndexParameters

FORMAT = "esbridge-export"
VERSION = 1
_GZIP_MAGIC = b"\x1f\x8b"


ChunkLine = tuple[int, dict[str, Any] | str]
"""A chunk line: its line number, and the chunk or the reason it cannot be used."""


class Export:
    """An export opened once: its checked header, then its chunk lines in order (``lines``). A file is read once
    through it; reading it again means opening it again. Close it, or use it in a ``with`` block."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle = _open_export(path)
        self._lines = byte_lines(self._handle)
        try:
            self.header = parse_header(_read_line(self._lines, path), path)
        except BaseException:
            self._handle.close()
            raise

    def lines(self) -> Iterator[ChunkLine]:
        """The chunk lines after the header, read as they are asked for; the file is closed after the last."""
        return _chunk_lines(self._handle, self._lines, self.path)

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> Export:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def read_export(path: Path) -> tuple[dict[str, Any], Iterator[ChunkLine]]:
    """The header, and the chunk lines as (line number, chunk or the reason it cannot be used).

    Lines are read as bytes and decoded one by one, so a line that is not UTF-8 fails alone; a gzipped
    export is read as it is.
    """
    export = Export(path)
    return export.header, export.lines()


def read_header(path: Path) -> dict[str, Any]:
    """The export's header alone, checked as ``read_export`` checks it."""
    with _open_export(path) as handle:
        return parse_header(_read_line(byte_lines(handle), path), path)


def _open_export(path: Path) -> BufferedIOBase:
    shown = shown_path(path)
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            # Import may read the file twice (into an index lacking a field); a second read of a pipe would start
            # where the first stopped.
            raise SourceError(
                f"cannot read {shown}: it is not a regular file (a pipe or a device), and import may read the export "
                "twice; save it to a file first (`esbridge export --output FILE`)"
            )
        with path.open("rb") as probe:
            compressed = probe.read(len(_GZIP_MAGIC)) == _GZIP_MAGIC
        return gzip.open(path, "rb") if compressed else path.open("rb")
    except OSError as exc:
        raise SourceError(f"cannot read {shown}: {exc.strerror or exc}") from exc


def _read_line(lines: Iterator[bytes], path: Path) -> bytes:
    """The next line of ``lines``, ``b""`` after the last."""
    shown = shown_path(path)
    try:
        return next(lines, b"")
    except (OSError, EOFError, zlib.error) as exc:
        # gzip raises BadGzipFile (an OSError), EOFError or zlib.error for a damaged or truncated file.
        raise SourceError(f"cannot read {shown}: {exc}") from exc


def parse_header(raw: bytes, path: Path) -> dict[str, Any]:
    """The export header on the first line, checked for what import needs."""
    shown = shown_path(path)
    try:
        header = json.loads(raw.decode("utf-8-sig") or "null")
    except UnicodeDecodeError as exc:
        raise SourceError(f"{shown} is not an esbridge export: the first line is not UTF-8 ({exc.reason})") from exc
    except json.JSONDecodeError as exc:
        raise SourceError(f"{shown} is not an esbridge export: the first line is not JSON ({exc})") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise SourceError(f"{shown} is not an esbridge export (no {FORMAT!r} header on the first line)")
    if "version" not in header:
        raise SourceError(f"{shown}: the export header has no 'version' field (this esbridge reads version {VERSION})")
    if header["version"] != VERSION:
        raise SourceError(f"{shown} has export format version {header['version']}; this esbridge reads {VERSION}")
    header_parameters(header, path)
    return header


def header_parameters(header: Mapping[str, Any], path: Path) -> IndexParameters:
    """The index parameters an export was built with, from its header's ``parameters`` object."""
    shown = shown_path(path)
    if "parameters" not in header:
        raise SourceError(
            f"{shown}: the export header has no 'parameters' field (the index parameters the export was built with)"
        )
    given = header["parameters"]
    if not isinstance(given, dict):
        raise SourceError(f"{shown}: the export header's 'parameters' must be an object, not {json_type(given)}")
    if "dimension" not in given:
        raise SourceError(f"{shown}: the export header's 'parameters' has no 'dimension' (the vectors' size)")
    unknown = sorted(set(given) - {spec.name for spec in fields(IndexParameters)})
    if unknown:
        raise SourceError(f"{shown}: the export header's 'parameters' has unknown field(s): {', '.join(unknown)}")
    try:
        return IndexParameters(**{**given, "analysis": "auto"})
    except (TypeError, ValueError) as exc:
        raise SourceError(f"{shown}: the export header's 'parameters' cannot be used: {exc}") from exc


class CutShort(str):
    """Why the file could not be read past a line (a truncated or damaged gzip); the last item of its lines."""


def _chunk_lines(handle: BufferedIOBase, lines: Iterator[bytes], path: Path) -> Iterator[ChunkLine]:
    with handle:
        number = 1
        while True:
            try:
                raw = _read_line(lines, path)
            except SourceError as exc:
                # The whole lines before are good: they are used, and the rest of the file is reported.
                yield number + 1, CutShort(f"{exc}; the file ends early, after {number - 1} chunk line(s)")
                return
            if not raw:
                return
            number += 1
            if raw.strip():
                yield number, parse_chunk_line(raw)


def parse_chunk_line(raw: bytes) -> dict[str, Any] | str:
    """One chunk of an export, or the reason the line cannot be used."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8: byte 0x{raw[exc.start]:02x} at byte offset {exc.start} of the line ({exc.reason})"
    try:
        chunk = json.loads(line.rstrip("\r\n"))
    except json.JSONDecodeError as exc:
        return f"not JSON: {json_error_location(exc)}"
    except RecursionError:
        return "not JSON: nested too deeply"
    if not isinstance(chunk, dict) or not isinstance(chunk.get("_id"), str):
        return "a chunk line needs an object with a string _id"
    return chunk
