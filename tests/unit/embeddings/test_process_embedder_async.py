"""ProcessEmbedder.embed_soon: a query's embedding sent from the event loop and read by it, no thread in between."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from esbridge.embeddings.base import embed_soon
from esbridge.embeddings.worker import ProcessEmbedder
from esbridge.errors import EmbeddingError
from tests.support.child_embedders import DIE, FAIL, HANG, WHOAMI, hash_embedder, pid_embedder, vector_of


class NoThreads(ThreadPoolExecutor):
    """An executor that refuses work: installed as the loop's default, it shows no call went to a thread."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.refused = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.refused += 1
        raise RuntimeError("embed_soon used a worker thread")


@pytest.fixture(scope="module")
def worker() -> Iterator[ProcessEmbedder]:
    with ProcessEmbedder(hash_embedder, model="hash-embedder", reply_timeout_s=5) as embedder:
        yield embedder


async def test_the_vectors_come_back_through_the_loop_without_a_worker_thread(worker: ProcessEmbedder) -> None:
    asyncio.get_running_loop().set_default_executor(NoThreads())
    assert await embed_soon(worker, ["a query"]) == [vector_of("a query")]
    assert await worker.embed_soon(["one", "two"]) == [vector_of("one"), vector_of("two")]


async def test_the_child_starts_before_the_caller_yields_to_the_loop() -> None:
    with ProcessEmbedder(pid_embedder, model="pid-embedder") as embedder:
        future = embedder.embed_soon([WHOAMI])  # the child sleeps 0.5 s, then answers
        started = time.monotonic()
        time.sleep(0.6)  # blocks the loop: only a request already sent can be worked on meanwhile
        answer = await future
        assert time.monotonic() - started < 1.0, "the child did the work while the loop was blocked"
        assert int(answer[0][0]) == embedder.pid


async def test_concurrent_calls_each_get_their_own_vectors(worker: ProcessEmbedder) -> None:
    texts = [f"query {n}" for n in range(30)]
    answers = await asyncio.gather(*(worker.embed_soon([text]) for text in texts))
    assert [answer[0] for answer in answers] == [vector_of(text) for text in texts]


async def test_a_model_error_fails_the_call_and_the_child_keeps_serving(worker: ProcessEmbedder) -> None:
    pid = worker.pid
    with pytest.raises(EmbeddingError, match="ValueError: this text cannot be embedded"):
        await worker.embed_soon([FAIL])
    assert await worker.embed_soon(["fine"]) == [vector_of("fine")]
    assert worker.pid == pid


async def test_a_child_that_dies_fails_the_call_and_is_replaced() -> None:
    with ProcessEmbedder(hash_embedder, model="hash-embedder", reply_timeout_s=5) as embedder:
        first = embedder.pid
        with pytest.raises(EmbeddingError, match="died"):
            await embedder.embed_soon([DIE])
        assert embedder.pid not in (None, first)
        assert await _once_loaded(embedder, "again") == [vector_of("again")]


async def test_a_child_killed_while_idle_fails_one_call_at_once_and_is_replaced() -> None:
    with ProcessEmbedder(hash_embedder, model="hash-embedder", reply_timeout_s=5) as embedder:
        first = embedder.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        await asyncio.sleep(0.2)
        with pytest.raises(EmbeddingError, match="died; a new one is starting"):
            await embedder.embed_soon(["lost"])
        assert embedder.pid not in (None, first), "the replacement loads the model from now on"
        assert await _once_loaded(embedder, "found") == [vector_of("found")]


async def test_while_a_replacement_loads_the_model_a_call_fails_at_once() -> None:
    with ProcessEmbedder(hash_embedder, model="hash-embedder", reply_timeout_s=5) as embedder:
        with pytest.raises(EmbeddingError, match="died"):
            await embedder.embed_soon([DIE])
        started = time.monotonic()
        with pytest.raises(EmbeddingError, match="still loading the model"):
            await embedder.embed_soon(["too early"])  # a new process is importing, far from ready
        assert time.monotonic() - started < 0.5, "a search does not wait for a model to load"
        assert await _once_loaded(embedder, "in time") == [vector_of("in time")]


async def _once_loaded(embedder: ProcessEmbedder, text: str, timeout_s: float = 60.0) -> list[list[float]]:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return await embedder.embed_soon([text])
        except EmbeddingError as exc:
            if "still loading" not in str(exc) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def test_a_hung_child_is_replaced_after_the_reply_timeout() -> None:
    with ProcessEmbedder(hash_embedder, model="hash-embedder", reply_timeout_s=0.5) as embedder:
        hung = embedder.pid
        started = time.monotonic()
        with pytest.raises(EmbeddingError, match=r"no answer within 1s; it was replaced"):
            await embedder.embed_soon([HANG])
        assert time.monotonic() - started < 10
        assert await _once_loaded(embedder, "after") == [vector_of("after")]
        assert embedder.pid != hung


async def test_a_cancelled_call_leaves_no_answer_behind_for_the_next_call() -> None:
    with ProcessEmbedder(pid_embedder, model="pid-embedder") as embedder:
        slow = embedder.embed_soon([WHOAMI])
        await asyncio.sleep(0.1)
        slow.cancel()
        # The child is still busy with the cancelled call: this one waits for it, then gets its own vector.
        assert await embedder.embed_soon(["next"]) == [vector_of("next")]
        assert await embedder.embed_soon(["and the next"]) == [vector_of("and the next")]


async def test_a_timed_out_wait_does_not_replace_the_child() -> None:
    with ProcessEmbedder(pid_embedder, model="pid-embedder") as embedder:
        pid = embedder.pid
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(embedder.embed_soon([WHOAMI]), timeout=0.1)
        assert await embedder.embed_soon(["later"]) == [vector_of("later")]
        assert embedder.pid == pid, "a search's own time limit is not the child's fault"


def test_a_call_whose_loop_closed_before_the_answer_does_not_hold_the_child() -> None:
    with ProcessEmbedder(pid_embedder, model="pid-embedder", reply_timeout_s=5) as embedder:

        async def leave_early() -> None:
            embedder.embed_soon([WHOAMI])  # answered after 0.5 s, when this loop is gone

        asyncio.run(leave_early())
        started = time.monotonic()
        assert embedder.embed(["from a thread"]) == [vector_of("from a thread")]
        assert asyncio.run(_embed_soon(embedder, "from a new loop")) == [vector_of("from a new loop")]
        assert time.monotonic() - started < 3, "the orphaned answer was drained, not waited out to the timeout"


async def _embed_soon(embedder: ProcessEmbedder, text: str) -> list[list[float]]:
    return await embedder.embed_soon([text])


async def test_closing_the_embedder_fails_a_call_in_flight_at_once() -> None:
    embedder = ProcessEmbedder(hash_embedder, model="hash-embedder", reply_timeout_s=30)
    hung = embedder.embed_soon([HANG])
    await asyncio.sleep(0.1)
    embedder.close()
    # Not "no answer within 30s": the call is failed as soon as the embedder closes.
    with pytest.raises(EmbeddingError, match="closed during the call"):
        await hung
    assert embedder.pids == []


async def test_long_inputs_and_a_closed_embedder_take_the_thread_path() -> None:
    with ProcessEmbedder(hash_embedder, model="hash-embedder", reply_timeout_s=5) as embedder:
        texts = [f"chunk {n}" for n in range(40)]  # more than one call's worth
        assert await embedder.embed_soon(texts) == [vector_of(text) for text in texts]
    with pytest.raises(EmbeddingError, match="closed"):
        await embedder.embed_soon(["too late"])


async def test_a_model_without_embed_soon_runs_in_a_worker_thread() -> None:
    class InProcess:
        name = identity = "in-process"
        dimension, max_tokens = 4, 8

        def count_tokens(self, text: str) -> int:
            return 1

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return [vector_of(text) for text in texts]

    assert await embed_soon(InProcess(), ["plain"]) == [vector_of("plain")]
    executor = NoThreads()
    asyncio.get_running_loop().set_default_executor(executor)
    with pytest.raises(RuntimeError, match="worker thread"):
        await embed_soon(InProcess(), ["plain"])
    assert executor.refused == 1
