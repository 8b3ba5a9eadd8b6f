"""An `esbridge import` stopped part-way: by Ctrl-C, the count it says was kept is what the index holds, as the
write under way when the interrupt arrives finishes first; by an engine gone, no write follows the failed one."""

from __future__ import annotations

import _thread
import functools
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.engines.base import BulkAction, BulkResult
from esbridge.engines.bulk import BulkWriter, RetryPolicy
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import EngineUnavailable
from esbridge.ingest import transfer

NAMES = ("a", "b", "c", "d")
HEADER = {"format": "esbridge-export", "version": 1, "parameters": {"dimension": 3}, "chunks": len(NAMES)}


def one_chunk_a_bulk_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An export of four chunks, imported one chunk a bulk request."""
    source = tmp_path / "export.jsonl"
    chunks = [{"_id": f"{name}#0", "chunk_id": f"{name}#0", "doc_id": name, "body": name} for name in NAMES]
    source.write_text("\n".join(json.dumps(line) for line in [HEADER, *chunks]) + "\n", encoding="utf-8")
    monkeypatch.setattr(transfer, "BulkWriter", functools.partial(BulkWriter, max_actions=1))
    return source


def test_ctrl_c_during_an_import_says_how_many_chunks_the_index_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = one_chunk_a_bulk_request(tmp_path, monkeypatch)
    bulk = EmbeddedEngine.bulk
    calls = 0

    def bulk_then_ctrl_c(self: EmbeddedEngine, index: str, actions: Sequence[BulkAction]) -> BulkResult:
        nonlocal calls
        result = bulk(self, index, actions)
        calls += 1
        if calls == 2:  # Ctrl-C arrives once the engine has stored the second chunk
            _thread.interrupt_main()
        return result

    monkeypatch.setattr(EmbeddedEngine, "bulk", bulk_then_ctrl_c)
    data = tmp_path / "data"
    result = CliRunner().invoke(main, ["import", str(source), "--index", "notes"], env={"ESBRIDGE_DATA_DIR": str(data)})

    assert result.exit_code == 130, result.output
    said = re.search(r"interrupted: (\d+) chunks were imported into notes and are kept", result.stderr)
    assert said is not None, result.stderr
    monkeypatch.setattr(EmbeddedEngine, "bulk", bulk)
    engine = EmbeddedEngine(data)
    try:
        engine.refresh("notes")
        assert int(said.group(1)) == engine.count("notes")
    finally:
        engine.close()


def test_an_engine_gone_mid_import_stops_it_saying_how_many_chunks_were_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = one_chunk_a_bulk_request(tmp_path, monkeypatch)
    bulk = EmbeddedEngine.bulk
    calls = 0

    def bulk_then_gone(self: EmbeddedEngine, index: str, actions: Sequence[BulkAction]) -> BulkResult:
        nonlocal calls
        calls += 1
        if calls > 2:
            raise EngineUnavailable("connection refused", url="embedded:test", operation="bulk")
        return bulk(self, index, actions)

    monkeypatch.setattr(EmbeddedEngine, "bulk", bulk_then_gone)
    engine = EmbeddedEngine(tmp_path / "data")
    try:
        with pytest.raises(EngineUnavailable, match="writes stopped after 2 chunk writes"):
            transfer.import_chunks(engine, "notes", source, retry=RetryPolicy(attempts=1))
    finally:
        engine.close()
    assert calls == 3, "no write after the one that found the engine gone"
