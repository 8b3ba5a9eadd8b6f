"""`esbridge search` with an embedding model whose call never returns: the search answers lexical-only when the
query's embedding time is up, and the command ends at once, saying the model hung, with exit code 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.embeddings.factory import EMBEDDERS
from tests.support.hashing import RECORDS, HashingEmbedder
from tests.support.hung_model_cli import HANG

ROOT = Path(__file__).resolve().parents[2]
ENV = {"ESBRIDGE_EMBEDDING__PROVIDER": "hashing", "ESBRIDGE_EMBEDDING__QUERY_PROCESSES": "0"}


def esbridge(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, **ENV, "ESBRIDGE_PIPELINE__EMBED_TIMEOUT_S": "0.5", "PYTHONPATH": str(ROOT)}
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.hung_model_cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=os.getcwd(),
        timeout=20,
    )
    return done, time.monotonic() - began


@pytest.fixture
def indexed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EMBEDDERS, "hashing", lambda settings: HashingEmbedder())
    records = tmp_path / "records.jsonl"
    records.write_text("\n".join(json.dumps(record) for record in RECORDS), "utf-8")
    monkeypatch.setenv("ESBRIDGE_EMBEDDING__CACHE_DIR", str(tmp_path / "cache"))
    assert CliRunner(env=ENV).invoke(main, ["ingest", str(records), "--index", "notes"]).exit_code == 0


def test_a_search_whose_model_hangs_ends_with_its_lexical_answer_and_an_error_naming_the_model(indexed: None) -> None:
    done, took = esbridge("search", f"sunlight {HANG}", "--index", "notes")
    assert done.returncode == 1, done.stderr
    assert "lexical-only" in done.stdout and "[solar#0]" in done.stdout
    assert (
        "the embedding model hashing-32 hung: the query was not embedded within 0.5s (pipeline.embed_timeout_s) "
        "and its call has still not returned; the answer above is lexical-only"
    ) in done.stderr
    assert took < 15  # the interpreter's start and the index's opening; the model's call is not waited for


def test_a_search_whose_model_answers_exits_0(indexed: None) -> None:
    done, _ = esbridge("search", "sunlight", "--index", "notes", "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["search_mode"] == "hybrid" and answer["results"][0]["id"] == "solar#0"
