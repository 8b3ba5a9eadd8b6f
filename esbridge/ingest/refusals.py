"""What ingest checks before it writes anything: each refusal names the problem and the way out."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from esbridge import errors
from esbridge.engines.base import Engine, Hit
from esbridge.engines.bulk import MAX_ID_BYTES
from esbridge.ids import shown_escaped, shown_path
from esbridge.ingest.model import Chunk
from esbridge.mappings.schema import FIELDS

# A source label is a folder or file name by default, so a different folder of the same name (every
# Obsidian vault called "vault") would replace the first one's chunks; so would an empty mount. A run
# that would delete most of what a source holds is refused until the operator says it is meant; below
# MASS_DELETE_MINIMUM chunks, only one that would delete all of it (a small file of the same name).
MAX_DELETE_SHARE = 0.5
MASS_DELETE_MINIMUM = 20

# Doc ids per `terms` query when looking for another source's chunks: below OpenSearch's and
# Elasticsearch's index.max_terms_count (65,536) and SQLite's 32,766 parameters per statement.
DOC_ID_BATCH = 10_000


def chunks_of_other_sources(engine: Engine, index: str, source: str, doc_ids: Sequence[str]) -> tuple[int, Hit | None]:
    """How many chunks of ``doc_ids`` the index holds under a source label other than ``source``, and one of them."""
    total, example = 0, None
    for start in range(0, len(doc_ids), DOC_ID_BATCH):
        body = {
            "size": 1 if example is None else 0,
            "track_total_hits": True,
            "_source": ["doc_id", "source"],
            "query": {
                "bool": {
                    "filter": [{"terms": {"doc_id": list(doc_ids[start : start + DOC_ID_BATCH])}}],
                    "must_not": [{"term": {"source": source}}],
                }
            },
        }
        found = engine.search(index, body)
        total += found.total
        if example is None and found.hits:
            example = found.hits[0]
    return total, example


def refuse_missing_fields(properties: Mapping[str, Any], index: str, *, weighted: bool) -> None:
    """An index created by an older esbridge may lack fields this one writes; its strict mapping would then
    refuse every chunk, one error each. ``link_weights`` is written only for weighted links."""
    written = [spec.name for spec in FIELDS if weighted or spec.name != "link_weights"]
    missing = [name for name in written if name not in properties]
    if missing:
        raise errors.ConfigError(
            f"index {index} has no mapping for {', '.join(missing)}, which ingest writes; nothing was written. "
            "Add the fields with `esbridge mapping apply` (`esbridge mapping diff` shows the change)"
        )


def refuse_foreign_documents(engine: Engine, path: Path, index: str, source: str, chunks: Sequence[Chunk]) -> None:
    """Chunk ids hold the doc id, not the source, so two sources with the same relative paths would
    overwrite each other's chunks, and flip them back on every run."""
    doc_ids = sorted({chunk.doc_id for chunk in chunks})
    count, example = chunks_of_other_sources(engine, index, source, doc_ids)
    if not count:
        return
    doc_id = str(example.source.get("doc_id", example.id)) if example is not None else "?"
    other = str(example.source.get("source", "")) if example is not None else ""
    shown = shown_path(path)
    raise ForeignDocumentsRefused(
        f"index {index} already holds {count} chunk(s) of documents that {shown} would write, under another "
        f"source label (for example {doc_id!r} of source {other!r}; this run's label is {source!r}); nothing "
        "was written. Chunk ids are the documents' ids, not their source's, so the two sources would overwrite "
        "each other",
        f"Ingest {shown} into another --index, or, if it really is the same collection under a new label, run "
        f"with --source {shown_escaped(shlex.quote(other))} (or remove source {other!r} from the index first)",
    )


class RefusedWithWayOut(errors.ConfigError):
    """A refusal whose way out depends on the command: ``found`` says what was found without it (``eval`` and
    ``tune`` have neither --source nor --allow-mass-delete, and give their own)."""

    def __init__(self, found: str, way_out: str) -> None:
        super().__init__(f"{found}. {way_out}")
        self.found = found


class ForeignDocumentsRefused(RefusedWithWayOut):
    """A run that would write documents the index holds under another source label."""


class MassDeleteRefused(RefusedWithWayOut):
    """A run that would delete most of the chunks a source holds."""


class EmptySourceRefused(MassDeleteRefused):
    """A source that gave no document, for a source the index holds: the run would delete all of it."""


def refuse_mass_delete(path: Path, source: str, index: str, held: int, stale: int, max_share: float) -> None:
    if stale <= max_share * held or (stale < MASS_DELETE_MINIMUM and stale < held):
        return
    shown = shown_path(path)
    raise MassDeleteRefused(
        f"index {index} holds {held} chunks for source {source!r}, and {shown} would delete {stale} of them "
        f"({stale / held:.0%}); nothing was written",
        f"If {shown} is another collection that shares the name {source!r}, give it its own label with --source; "
        "if the documents really were removed, run again with --allow-mass-delete",
    )


def refuse_empty_source(engine: Engine, index: str | None, path: Path, source: str, found: str, allow: bool) -> None:
    """A source that gave no document (a mistyped path, notes that are not .md files, an empty file) is refused
    before anything is created or written, unless it is meant to empty a source the index holds (``allow``).
    ``index`` is the one behind the alias, None when there is none yet."""
    held = chunks_of_source(engine, index, source) if index is not None else 0
    if not held:
        raise errors.SourceError(f"{found}; nothing was written")
    if not allow:
        raise EmptySourceRefused(
            f"{found}; index {index} holds {held} chunks for source {source!r}, which this run would delete; "
            "nothing was written",
            "Check the path (and --format); if the documents really were removed, run again with "
            "--allow-mass-delete to remove them from the index",
        )


def chunks_of_source(engine: Engine, index: str, source: str) -> int:
    body = {"size": 0, "track_total_hits": True, "query": {"term": {"source": source}}}
    return engine.search(index, body).total


def id_too_long(chunks: Sequence[Chunk], note_path: str | None = None) -> str | None:
    """Why a document with a chunk id longer than the engines take is refused: they would take its first chunks
    and refuse the rest (a 510-byte doc id fits #0-#9, not #10). A note's id is its path, which is what its
    author can change: ``note_path`` (vault-relative) makes the reason name it and the length it must keep to."""
    sizes = {chunk.chunk_id: len(chunk.chunk_id.encode("utf-8")) for chunk in chunks}
    longest = max(sizes, key=sizes.__getitem__, default=None)
    if longest is None or sizes[longest] <= MAX_ID_BYTES:
        return None
    if note_path is None:
        return (
            f"chunk {longest}: id is {sizes[longest]} bytes long; engines accept at most {MAX_ID_BYTES} (shorten "
            f"the record's id): none of its {len(chunks)} chunks was written"
        )
    path_bytes = len(note_path.encode("utf-8"))
    # The chunk id is the path without its extension, '#' and the chunk's number.
    allowed = path_bytes - (sizes[longest] - MAX_ID_BYTES)
    return (
        f"the note's path is {path_bytes} bytes long, and its id (the path without the extension) with a chunk "
        f"number makes chunk ids of up to {sizes[longest]} bytes, over the {MAX_ID_BYTES} the engines accept: move or "
        f"rename the note so that its path in the vault is at most {allowed} bytes (shorter folder or file names); "
        f"none of its {len(chunks)} chunk(s) was written"
    )
