"""The ingest report counts the chunks the model embedded apart from those whose vector the embedding cache gave."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.embeddings.factory import EMBEDDERS
from tests.support.hashing import RECORDS, HashingEmbedder


def test_ingest_json_says_how_many_chunks_were_embedded_and_how_many_came_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(EMBEDDERS, "hashing", lambda settings: HashingEmbedder())
    records = tmp_path / "records.jsonl"
    records.write_text("\n".join(json.dumps(record) for record in RECORDS), encoding="utf-8")
    runner = CliRunner(
        env={
            "ESBRIDGE_EMBEDDING__PROVIDER": "hashing",
            "ESBRIDGE_DATA_DIR": str(tmp_path / "data"),
            "ESBRIDGE_EMBEDDING__CACHE_DIR": str(tmp_path / "cache"),
        }
    )

    def counts(index: str) -> tuple[int, int, int]:
        result = runner.invoke(main, ["ingest", str(records), "--index", index, "--json"])
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        return report["chunks_indexed"], report["embedded"], report["from_cache"]

    assert counts("first") == (len(RECORDS), len(RECORDS), 0)
    # Another index, the same texts and model: every vector is the cache's, and the model embedded none.
    assert counts("second") == (len(RECORDS), 0, len(RECORDS))
