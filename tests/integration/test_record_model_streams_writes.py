"""Ingest, import and ``embed --missing`` into a name over several indices on the real engines: refused before any
write, naming each index and the way out (``record_by_hand`` records a model behind the name). An alias over two
indices and a data stream on both engines (a build without data streams skips the latter, naming it)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from esbridge import errors
from esbridge.embeddings.identity import identity_of, recorded_identity
from esbridge.engines import Engine
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.ingest.documents import AWAITING_VECTOR, EMBEDDED
from esbridge.ingest.embed_missing import embed_missing
from esbridge.ingest.record_by_hand import record_by_hand
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.ingest.transfer import export_to_file, import_chunks
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import VECTOR_FIELD, IndexParameters, render_index
from esbridge.service.documents import upsert
from tests.integration.raw_client import index_document, put_index_template
from tests.integration.test_model_check_streams import client, stream
from tests.support.hashing import RECORDS, HashingEmbedder

__all__ = ["client", "stream"]  # fixtures shared with the model check's tests

MODEL = identity_of(HashingEmbedder())


def _records(engine: Engine, name: str) -> dict[str, str | None]:
    mappings = engine.get_mappings(name)
    return {index: getattr(recorded_identity(mappings[index], index), "name", None) for index in sorted(mappings)}


def test_an_alias_over_two_indices_is_refused_by_ingest_import_and_embed_missing(
    engine: Engine, alias: str, tmp_path: Path
) -> None:
    source = tmp_path / "a.jsonl"
    source.write_text("\n".join(json.dumps(record) for record in RECORDS), encoding="utf-8")
    manager = IndexManager(engine, alias, IndexParameters(dimension=32))
    ingest(source, engine=engine, manager=manager, embedder=HashingEmbedder(), options=IngestOptions(source="a"))
    exported = tmp_path / "export.jsonl"
    export_to_file(engine, manager, exported)
    first = manager.current()
    second = f"{alias}-v2"
    engine.create_index(second, manager.wanted_body())
    engine.update_aliases([{"add": {"index": second, "alias": alias}}])
    counts = {index: engine.count(index) for index in (first, second)}
    both = re.escape(f"alias {alias!r} points to several indices ({first}, {second}): ")

    with pytest.raises(errors.AmbiguousAlias, match=rf"^{both}embed --missing would write into its write index"):
        embed_missing(engine, alias, HashingEmbedder())
    with pytest.raises(errors.AmbiguousAlias, match=rf"^{both}ingest would write .* Point the alias at one index"):
        ingest(source, engine=engine, manager=manager, embedder=HashingEmbedder(), options=IngestOptions(source="b"))
    with pytest.raises(errors.AmbiguousAlias, match=rf"^{both}import would write into its write index alone"):
        import_chunks(engine, alias, exported)
    assert {index: engine.count(index) for index in (first, second)} == counts
    assert _records(engine, alias) == {first: MODEL.name, second: None}


def _an_export(tmp_path: Path, source: Path) -> Path:
    """An export of ``source`` ingested on the embedded engine."""
    embedded = EmbeddedEngine(tmp_path / "data")
    try:
        manager = IndexManager(embedded, "notes", IndexParameters(dimension=32))
        ingest(source, engine=embedded, manager=manager, embedder=HashingEmbedder(), options=IngestOptions())
        export_to_file(embedded, manager, tmp_path / "export.jsonl")
    finally:
        embedded.close()
    return tmp_path / "export.jsonl"


def _stream_template(engine: Engine, name: str) -> dict[str, Any]:
    """esbridge's own mapping, with the time field a data stream needs."""
    body = render_index(engine.dialect, IndexParameters(dimension=32))
    body["mappings"]["properties"]["@timestamp"] = {"type": "date"}
    return {"index_patterns": [f"{name}*"], "priority": 500, "template": body, "data_stream": {}}


def _awaiting(number: int) -> dict[str, Any]:
    return {
        "@timestamp": "2026-11-29T12:00:00Z",
        "chunk_id": f"doc-{number}#0",
        "doc_id": f"doc-{number}",
        "chunk_index": 0,
        "title": f"note {number}",
        "body": f"solar panels and batteries, note {number}",
        "embedding": AWAITING_VECTOR,
    }


def test_a_data_stream_is_refused_before_any_write_and_record_model_records_behind_it(
    engine_kind: str, engine: Engine, client: Any, stream: str, tmp_path: Path
) -> None:
    put_index_template(engine_kind, client, stream, _stream_template(engine, stream))
    client.indices.create_data_stream(name=stream)
    index_document(engine_kind, client, stream, _awaiting(1), op_type="create", refresh=True)
    # What the refusal says: a data stream takes new documents only, refusing esbridge's writes by id.
    (only,) = engine.get_mappings(stream)
    refused_write = engine.bulk(stream, [BulkAction("update", "x", {"embedding": EMBEDDED})])
    assert "op_type of create" in refused_write.failed[0].reason, refused_write.failed

    with pytest.raises(errors.AmbiguousAlias) as one_index:
        embed_missing(engine, stream, HashingEmbedder())  # before: each update refused by the engine
    assert str(one_index.value).startswith(
        f"data stream {stream!r} (backing indices {only}) takes new documents only, so it refuses embed --missing's"
    )
    client.indices.rollover(alias=stream)
    index_document(engine_kind, client, stream, _awaiting(2), op_type="create", refresh=True)
    first, second = sorted(engine.get_mappings(stream))
    with pytest.raises(errors.AmbiguousAlias) as two_indices:
        embed_missing(engine, stream, HashingEmbedder())  # before: "expected one index behind ..., found 2"
    message = str(two_indices.value)
    assert f"(backing indices {first}, {second})" in message and "nothing was written" in message
    assert f"`esbridge index record-model --index {stream}` records a model in every index behind" in message
    manager = IndexManager(engine, stream, IndexParameters(dimension=32))
    source = tmp_path / "a.jsonl"
    source.write_text(json.dumps(RECORDS[0]), encoding="utf-8")
    with pytest.raises(
        errors.AmbiguousAlias, match=r"refuses ingest's writes by id.* name of its own \(--index NAME\)"
    ):
        ingest(source, engine=engine, manager=manager, embedder=HashingEmbedder(), options=IngestOptions(source="a"))
    exported = _an_export(tmp_path, source)
    with pytest.raises(errors.AmbiguousAlias, match=r"refuses import's writes by id"):
        import_chunks(engine, stream, exported)
    with pytest.raises(errors.AmbiguousAlias, match=r"refuses the sidecar's writes by id"):
        upsert(engine, stream, HashingEmbedder(), [{"id": "tides", "text": "The moon moves oceans."}], source="api")
    assert _records(engine, stream) == {first: None, second: None}
    assert engine.count(stream) == 2
    assert engine.list_indices(f"{stream}-v*") == []  # no version of esbridge's was made beside it

    record_by_hand(engine, stream, MODEL, VECTOR_FIELD, in_template=True, confirm=lambda question: None)
    assert _records(engine, stream) == {first: MODEL.name, second: MODEL.name}
