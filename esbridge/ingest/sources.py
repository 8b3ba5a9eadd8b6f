"""Choosing the reader for an input path: a Markdown vault or note, a JSONL file, a BEIR corpus folder, or
(only when asked: ``--format registry``) a registry of MCP servers and A2A agents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from esbridge.errors import SourceError
from esbridge.ids import shown_path
from esbridge.ingest.beir import CORPUS_FILE, QRELS_FOLDER, QUERIES_FILE, read_beir_corpus
from esbridge.ingest.jsonl import read_jsonl
from esbridge.ingest.markdown import NOTE_FILE_SUFFIXES, read_vault
from esbridge.ingest.model import Document, Problem
from esbridge.ingest.registry import read_registry

SourceFormat = Literal["auto", "markdown", "jsonl", "beir", "registry"]
FORMATS: tuple[SourceFormat, ...] = ("auto", "markdown", "jsonl", "beir", "registry")


def detect_format(path: Path) -> Literal["markdown", "jsonl", "beir"]:
    """A folder with ``corpus.jsonl`` is BEIR, another folder a Markdown vault (unless it holds a BEIR
    folder's other files: ``SourceError``), a ``.jsonl`` file JSONL, a ``.md`` or ``.markdown`` file a vault
    of one note."""
    if path.is_dir():
        if (path / CORPUS_FILE).is_file():
            return "beir"
        _refuse_beir_without_corpus(path)
        return "markdown"
    if path.is_file() and path.suffix.lower() in (".jsonl", ".ndjson"):
        return "jsonl"
    if path.is_file() and path.suffix.casefold() in NOTE_FILE_SUFFIXES:
        return "markdown"
    if not path.exists():
        raise SourceError(f"{shown_path(path)} does not exist")
    raise SourceError(f"cannot tell the format of {shown_path(path)}: pass --format markdown, jsonl, beir or registry")


def _refuse_beir_without_corpus(folder: Path) -> None:
    """A BEIR folder whose corpus is missing (or still compressed) would otherwise be read as an empty vault."""
    found = [name for name in (QUERIES_FILE, QRELS_FOLDER, f"{CORPUS_FILE}.gz") if (folder / name).exists()]
    if found:
        fix = f"unpack {CORPUS_FILE}.gz" if f"{CORPUS_FILE}.gz" in found else f"add {CORPUS_FILE}"
        raise SourceError(
            f"{shown_path(folder)} holds {' and '.join(found)} but no {CORPUS_FILE}: a BEIR folder is ingested from "
            f"its corpus ({fix}); if it is a Markdown vault, pass --format markdown"
        )


# What each reader looks for, as an error about a source in which it found nothing names it.
_LOOKED_FOR = {
    "markdown": "a Markdown vault: its .md notes",
    "jsonl": "JSONL: one JSON record per line",
    "beir": f"a BEIR corpus: the records of its {CORPUS_FILE}",
    "registry": "a registry: one JSON record per line",
}


def looked_for(path: Path, source_format: SourceFormat) -> str:
    """How ``path`` was read, as in ``found no documents in PATH (read as ...)``."""
    return _LOOKED_FOR[detect_format(path) if source_format == "auto" else source_format]


def read_source(path: Path, source_format: SourceFormat = "auto") -> Iterator[Document | Problem]:
    chosen = detect_format(path) if source_format == "auto" else source_format
    if chosen == "markdown":
        return read_vault(path)
    if chosen == "jsonl":
        return read_jsonl(path)
    if chosen == "registry":
        return read_registry(path)
    return read_beir_corpus(path)
