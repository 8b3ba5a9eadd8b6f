"""ProcessEmbedder: the model in a child process, its failures contained and recovered from."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest

from esbridge.embeddings import Embedder
from esbridge.embeddings.identity import identity_of
from esbridge.embeddings.worker import ProcessEmbedder
from esbridge.errors import EmbeddingError, ModelUnavailable
from tests.support.child_embedders import (
    DIE,
    FAIL,
    HANG,
    WHOAMI,
    embedder_of_version,
    embedder_while,
    hash_embedder,
    missing_model,
    pid_embedder,
    vector_of,
)


@pytest.fixture(scope="module")
def worker() -> Iterator[ProcessEmbedder]:
    with ProcessEmbedder(hash_embedder, model="hash-embedder", reply_timeout_s=5) as embedder:
        yield embedder


def test_the_model_runs_in_another_process_and_answers_like_itself(worker: ProcessEmbedder) -> None:
    assert isinstance(worker, Embedder)
    assert worker.pid is not None and worker.pid != os.getpid()
    assert worker.identity == f"hash-embedder@pid{worker.pid}"
    assert (worker.name, worker.dimension, worker.max_tokens) == ("hash-embedder", 4, 8)
    assert worker.embed(["a query", "another"]) == [vector_of("a query"), vector_of("another")]
    assert worker.embed([]) == []
    assert worker.count_tokens("three short words") == 3


def test_concurrent_callers_each_get_their_own_vectors(worker: ProcessEmbedder) -> None:
    texts = [f"query {n}" for n in range(40)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda text: worker.embed([text])[0], texts))
    assert answers == [vector_of(text) for text in texts]


def test_a_model_error_is_reported_and_the_child_keeps_serving(worker: ProcessEmbedder) -> None:
    pid = worker.pid
    with pytest.raises(EmbeddingError, match="ValueError: this text cannot be embedded") as caught:
        worker.embed([FAIL])
    assert caught.value.model == "hash-embedder"
    assert worker.embed(["fine"]) == [vector_of("fine")]
    assert worker.pid == pid


def test_a_dead_child_fails_one_call_and_the_next_call_starts_a_new_one() -> None:
    with ProcessEmbedder(hash_embedder, model="hash-embedder", reply_timeout_s=5) as embedder:
        first = embedder.pid
        assert first is not None
        with pytest.raises(EmbeddingError, match="died"):
            embedder.embed([DIE])
        replacement = embedder.pid
        assert replacement not in (None, first), "a replacement starts at once"
        assert embedder.embed(["again"]) == [vector_of("again")]
        assert embedder.pid == replacement
        assert embedder.identity == f"hash-embedder@pid{replacement}"


def test_a_child_killed_from_outside_is_replaced() -> None:
    with ProcessEmbedder(hash_embedder, model="hash-embedder", reply_timeout_s=5) as embedder:
        first = embedder.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        time.sleep(0.2)
        with pytest.raises(EmbeddingError, match="died"):
            embedder.embed(["lost"])
        assert embedder.embed(["found"]) == [vector_of("found")]
        assert embedder.pid != first


def test_a_hung_child_is_abandoned_after_the_reply_timeout() -> None:
    with ProcessEmbedder(hash_embedder, model="hash-embedder", reply_timeout_s=0.5) as embedder:
        hung = embedder.pid
        started = time.monotonic()
        # 0.5 s plus 0.5 s for the one text
        with pytest.raises(EmbeddingError, match=r"no answer within 1s; it was replaced"):
            embedder.embed([HANG])
        assert time.monotonic() - started < 10
        assert embedder.embed(["after"]) == [vector_of("after")]
        assert embedder.pid != hung


def test_a_model_that_cannot_load_is_model_unavailable_with_the_childs_reason() -> None:
    with pytest.raises(ModelUnavailable, match=r"'missing-model': cannot be loaded from folder /nowhere"):
        ProcessEmbedder(missing_model, model="missing-model")


def test_a_replacement_that_cannot_load_the_model_is_reported_until_one_can(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    with ProcessEmbedder(partial(embedder_while, str(folder)), model="vanishing", reply_timeout_s=5) as embedder:
        assert embedder.load_problem is None
        folder.rmdir()
        with pytest.raises(EmbeddingError, match="died"):
            embedder.embed([DIE])
        with pytest.raises(ModelUnavailable, match="does not exist"):
            embedder.embed(["lost"])
        assert embedder.load_problem == f"embedding model 'vanishing': model folder {folder} does not exist"
        folder.mkdir()
        assert embedder.embed(["found"]) == [vector_of("found")]
        assert embedder.load_problem is None


def test_a_replacement_that_loads_other_weights_is_refused_not_used(tmp_path: Path) -> None:
    """The searcher checked the index against the model the service started with; a replacement child that
    loads other weights (the files were replaced) would embed queries into another space without a word."""
    version = tmp_path / "version"
    version.write_text("a1", encoding="utf-8")
    with ProcessEmbedder(partial(embedder_of_version, str(version)), model="versioned", reply_timeout_s=5) as embedder:
        assert embedder.model_identity.weights == "a1"
        version.write_text("b2", encoding="utf-8")
        with pytest.raises(EmbeddingError, match="died"):
            embedder.embed([DIE])
        with pytest.raises(ModelUnavailable, match=r"weights sha256 b2.*not .*weights sha256 a1.*restart"):
            embedder.embed(["other space"])
        assert embedder.load_problem is not None and "restart" in embedder.load_problem
        assert embedder.model_identity.weights == "a1"
        version.write_text("a1", encoding="utf-8")
        assert embedder.embed(["same space"]) == [vector_of("same space")]
        assert embedder.load_problem is None


def test_close_stops_the_child_and_later_calls_fail() -> None:
    embedder = ProcessEmbedder(hash_embedder, model="hash-embedder")
    pid = embedder.pid
    assert pid is not None
    embedder.close()
    assert embedder.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(EmbeddingError, match="closed"):
        embedder.embed(["too late"])
    embedder.close()  # idempotent


def test_with_two_workers_two_calls_are_answered_side_by_side() -> None:
    with ProcessEmbedder(pid_embedder, model="pid-embedder", workers=2) as embedder:
        assert len(set(embedder.pids)) == 2 and os.getpid() not in embedder.pids
        with ThreadPoolExecutor(max_workers=2) as pool:
            answers = list(pool.map(lambda _: int(embedder.embed([WHOAMI])[0][0]), range(2)))
        assert sorted(answers) == sorted(embedder.pids), "each call had a child of its own"
        assert embedder.embed(["plain"]) == [vector_of("plain")]
    assert embedder.pids == []


@pytest.mark.parametrize(("options", "message"), [({"workers": 0}, "workers"), ({"reply_timeout_s": 0}, "timeouts")])
def test_invalid_options_are_refused_before_any_process_starts(options: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ProcessEmbedder(hash_embedder, model="hash-embedder", **options)  # type: ignore[arg-type]


def test_a_long_input_goes_in_parts_and_keeps_its_order(worker: ProcessEmbedder) -> None:
    texts = [f"document chunk {n}" for n in range(50)]  # more than one call's worth
    assert worker.embed(texts) == [vector_of(text) for text in texts]


def test_a_call_waits_for_a_free_child_no_longer_than_the_reply_timeout() -> None:
    with ProcessEmbedder(hash_embedder, model="hash-embedder", reply_timeout_s=0.5) as embedder:
        with ThreadPoolExecutor(max_workers=1) as pool:
            hung = pool.submit(embedder.embed, [HANG])  # holds the only child for 0.5 s + 0.5 s
            time.sleep(0.1)
            with pytest.raises(EmbeddingError, match=r"every embedding process was busy for 0\.5s"):
                embedder.embed(["queued"])
            with pytest.raises(EmbeddingError, match="no answer"):
                hung.result(timeout=30)
        assert embedder.embed(["served"]) == [vector_of("served")]


def test_close_during_a_call_fails_that_call_as_closed_and_starts_no_replacement() -> None:
    embedder = ProcessEmbedder(hash_embedder, model="hash-embedder", reply_timeout_s=30)
    with ThreadPoolExecutor(max_workers=1) as pool:
        hung = pool.submit(embedder.embed, [HANG])
        time.sleep(0.3)
        embedder.close()
        with pytest.raises(EmbeddingError, match="closed during the call"):
            hung.result(timeout=30)
    assert embedder.pids == []


def test_the_child_ignores_ctrl_c_sent_to_its_process_group(worker: ProcessEmbedder) -> None:
    child = worker.pid
    assert child is not None
    os.kill(child, signal.SIGINT)
    os.kill(child, signal.SIGTERM)
    time.sleep(0.2)
    assert worker.embed(["still here"]) == [vector_of("still here")]
    assert worker.pid == child


def test_the_child_reports_the_identity_of_the_model_it_runs(worker: ProcessEmbedder) -> None:
    assert identity_of(worker) == identity_of(hash_embedder())
    assert identity_of(worker).name == "hash-embedder"
