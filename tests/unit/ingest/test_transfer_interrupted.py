"""An `esbridge import` stopped part-way (Ctrl-C) says what it kept and leaves an index that records its model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from esbridge.embeddings.identity import recorded_identity
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.errors import EsbridgeError, ModelMismatch
from esbridge.ingest.transfer import import_chunks
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters

REPO = Path(__file__).resolve().parents[3]
MINILM = {"name": "sentence-transformers/all-MiniLM-L6-v2", "dimension": 3, "pooling": "mean", "normalize": True}
BGE = {"name": "BAAI/bge-small-en-v1.5", "dimension": 3, "pooling": "cls", "normalize": True}


def export_file(path: Path, model: dict[str, object], count: int) -> Path:
    header = {
        "format": "esbridge-export",
        "version": 1,
        "parameters": {"dimension": 3},
        "chunks": count,
        "model": model,
    }
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(header) + "\n")
        for n in range(count):
            chunk = {"_id": f"d{n}#0", "chunk_id": f"d{n}#0", "doc_id": f"d{n}", "body": f"note {n}"}
            out.write(json.dumps({**chunk, "vector": [1.0, n % 7 / 7, 0.5]}) + "\n")
    return path


def written(data_dir: Path) -> int:
    engine = EmbeddedEngine(data_dir)
    try:
        return engine.count("notes")
    except EsbridgeError:  # not created yet
        return 0
    finally:
        engine.close()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
@pytest.mark.parametrize("created_first", [False, True], ids=["new-index", "after-index-create"])
def test_an_interrupted_import_says_what_it_kept_and_its_index_refuses_another_model(
    tmp_path: Path, created_first: bool
) -> None:
    total = 200_000
    source = export_file(tmp_path / "minilm.jsonl", MINILM, total)
    data_dir = tmp_path / "data"
    if created_first:  # `esbridge index create`, then the import
        engine = EmbeddedEngine(data_dir)
        IndexManager(engine, "notes", IndexParameters(dimension=3)).create()
        engine.close()
    env = {**os.environ, "ESBRIDGE_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-m", "esbridge", "import", str(source), "--index", "notes"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while written(data_dir) == 0 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=120)
    finally:
        child.kill()

    assert child.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "chunks were imported into notes and are kept; run the command again" in stderr
    kept = written(data_dir)
    assert 0 < kept < total

    engine = EmbeddedEngine(data_dir)
    try:
        recorded = recorded_identity(engine.get_mapping("notes"), "notes")
        assert recorded is not None and recorded.name == MINILM["name"], "the part-imported index records its model"
        with pytest.raises(ModelMismatch, match="nothing was written"):
            import_chunks(engine, "notes", export_file(tmp_path / "bge.jsonl", BGE, 2))
        assert engine.count("notes") == kept
    finally:
        engine.close()
