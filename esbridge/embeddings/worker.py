"""An embedding model in child processes, for processes that serve queries.

In-process, a query's embedding runs in a worker thread but still needs the interpreter lock between
torch operations, so whatever Python the event loop runs meanwhile (sending the BM25 request, parsing
its answer, other requests) delays the embedding, which is the longest step of a hybrid search. In a
child process the model computes while the loop runs; a query pays one pipe round trip instead
(docs/benchmarks.md, issue 4: the embedding's delay inside a search fell from about 1.4 to 0.7 ms, and
the sidecar served 30% more requests per second on 2 cores). ``embed_soon`` sends that request from the
loop's own thread and lets the loop read the answer, so no worker thread has to be woken on either side.

Children are started with ``spawn`` (no inherited locks or torch thread pools); each answers one call
at a time. If one dies, hangs past ``reply_timeout_s`` (plus 0.5 s per text) or cannot load the
model, the call raises an ``EsbridgeError`` (a search then degrades to lexical-only) and a replacement
starts at once, so its model loads before the next call needs it; ``embed_soon`` fails at once while it
loads, rather than keep a search waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import queue
import signal
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any

from esbridge.embeddings.base import Embedder
from esbridge.errors import EmbeddingError, EsbridgeError, ModelUnavailable

EmbedderLoader = Callable[[], Embedder]
"""Builds the model in the child: must be picklable (a module-level function or a ``functools.partial``)."""

_STOP = None
# Added to the reply timeout per text, so a large batch (documents written through the sidecar) is not
# taken for a hung child: about 15 times what a 200-token chunk takes on one core.
_PER_TEXT_S = 0.5
_TEXTS_PER_CALL = 16


def _serve(loader: EmbedderLoader, connection: Connection) -> None:
    """The child's loop: load the model, describe it, then answer requests until told to stop.

    A parent that is gone (closed pipe) ends the loop quietly, whatever the child was doing.
    """
    # Ctrl-C and a service manager's SIGTERM reach the whole process group; the parent decides when
    # the child ends (a stop message, or its end of the pipe closing).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with contextlib.suppress(EOFError, BrokenPipeError, ConnectionResetError):
        _answer(loader, connection)


def _answer(loader: EmbedderLoader, connection: Connection) -> None:
    try:
        model = loader()
    except Exception as exc:  # reported to the parent, which raises it as ModelUnavailable
        connection.send(("error", _describe(exc)))
        return
    description = {
        "name": model.name,
        "identity": model.identity,
        "dimension": model.dimension,
        "max_tokens": model.max_tokens,
    }
    connection.send(("ready", description))
    while (request := connection.recv()) is not _STOP:
        operation, argument = request
        try:
            answer: Any = model.embed(argument) if operation == "embed" else model.count_tokens(argument)
        except Exception as exc:  # the parent raises it as EmbeddingError; the child keeps serving
            connection.send(("error", _describe(exc)))
            continue
        connection.send(("ok", answer))


def _count(argument: Any) -> int:
    return len(argument) if isinstance(argument, list) else 1


def _describe(exc: Exception) -> str:
    if isinstance(exc, EmbeddingError):
        return exc.reason
    return str(exc) if isinstance(exc, EsbridgeError) else f"{type(exc).__name__}: {exc}"


class _Child:
    """One child process and the parent's end of its pipe; not thread-safe (ProcessEmbedder lends it out)."""

    def __init__(self, loader: EmbedderLoader, model: str) -> None:
        self.model = model
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        process = context.Process(target=_serve, args=(loader, child), name="esbridge-embedder", daemon=True)
        try:
            process.start()
        except Exception as exc:  # e.g. OSError, or a loader that cannot be pickled: no model, search degrades
            parent.close()
            raise ModelUnavailable(f"cannot start the embedding process: {exc!r}", model=model) from exc
        finally:
            child.close()
        self.process: Any = process
        self.connection: Connection | None = parent
        self.description: dict[str, Any] | None = None
        """Set once the child has loaded its model (``ready``)."""

    @property
    def pid(self) -> int | None:
        return None if self.connection is None else int(self.process.pid)

    def ready(self, timeout_s: float) -> dict[str, Any]:
        """The model's description once the child has loaded it; ``ModelUnavailable`` otherwise."""
        if self.description is not None:
            return self.description
        connection = self.connection
        if connection is None:
            raise ModelUnavailable("the embedding process is stopped", model=self.model)
        try:
            if not connection.poll(timeout_s):
                raise ModelUnavailable(
                    f"the embedding process did not load the model within {timeout_s:g}s", model=self.model
                )
            status, payload = connection.recv()
        except (EOFError, OSError) as exc:
            self.stop(graceful=False)
            reason = f"the embedding process died while loading the model ({exc!r})"
            raise ModelUnavailable(reason, model=self.model) from exc
        except EsbridgeError:
            self.stop(graceful=False)
            raise
        if status != "ready":
            self.stop(graceful=False)
            raise ModelUnavailable(str(payload), model=self.model)
        description: dict[str, Any] = payload
        self.description = description
        return description

    def send(self, operation: str, argument: Any) -> bool:
        """Hand the child a request; False (and the child stopped) when its pipe is broken."""
        if self.connection is None:
            return False
        try:
            self.connection.send((operation, argument))
        except OSError:
            self.stop(graceful=False)
            return False
        return True

    def loaded(self) -> bool:
        """Whether the model is loaded, without waiting; ``ModelUnavailable`` if the child failed to load it."""
        if self.description is not None:
            return True
        connection = self.connection
        if connection is None:
            raise ModelUnavailable("the embedding process is stopped", model=self.model)
        try:
            answered = connection.poll(0)
        except OSError:
            answered = True  # ready() reads the failure and says why
        if answered:
            self.ready(0)
        return answered

    def call(self, operation: str, argument: Any, timeout_s: float) -> Any:
        connection = self.connection
        if connection is None:
            raise EmbeddingError("the embedding process is stopped", model=self.model)
        try:
            connection.send((operation, argument))
            if not connection.poll(timeout_s):
                self.stop(graceful=False)
                raise EmbeddingError(
                    f"the embedding process gave no answer within {timeout_s:g}s; it was replaced", model=self.model
                )
            status, payload = connection.recv()
        except (EOFError, OSError) as exc:
            self.stop(graceful=False)
            raise EmbeddingError(
                f"the embedding process died ({type(exc).__name__}); a new one is starting", model=self.model
            ) from exc
        except BaseException:
            # Interrupted between request and answer: the answer may still come, and must not be taken
            # for the next call's.
            self.stop(graceful=False)
            raise
        if status == "error":
            raise EmbeddingError(str(payload), model=self.model)
        return payload

    def request_stop(self) -> None:
        """Ask the child to end, without waiting for it (``stop`` waits)."""
        if self.connection is not None:
            with contextlib.suppress(OSError):  # the child may be gone already
                self.connection.send(_STOP)

    def stop(self, *, graceful: bool) -> None:
        if graceful:
            self.request_stop()
        connection, self.connection = self.connection, None
        if connection is None:
            return
        connection.close()
        self.process.join(timeout=5 if graceful else 0.1)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)
        self.process.close()


class ProcessEmbedder:
    """An ``Embedder`` whose model runs in ``workers`` child processes; thread-safe.

    Each child answers one call at a time; a call waits for a free child. The constructor starts the
    children and waits for their models (``ModelUnavailable`` if one cannot load). ``close`` stops them;
    so does leaving a ``with`` block.
    """

    def __init__(
        self,
        loader: EmbedderLoader,
        *,
        model: str,
        workers: int = 1,
        reply_timeout_s: float = 60.0,
        start_timeout_s: float = 300.0,
    ) -> None:
        if reply_timeout_s <= 0 or start_timeout_s <= 0:
            raise ValueError("timeouts must be positive")
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self._model = model
        self._loader = loader
        self._reply_timeout_s = reply_timeout_s
        self._start_timeout_s = start_timeout_s
        self._closed = False
        self._state = threading.Lock()
        """Guards ``_closed`` and ``_children`` against a close racing a replacement."""
        self._free: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._children: list[_Child] = []
        self._in_flight: dict[int, _PendingAnswer] = {}
        """slot -> its call made from an event loop (``embed_soon``), until the loop has read the answer"""
        try:
            for _ in range(workers):  # all start before any is waited for: they load their models in parallel
                self._children.append(_Child(loader, model))
            descriptions = [child.ready(start_timeout_s) for child in self._children]
        except BaseException:
            self._stop_all()
            raise
        self._description = descriptions[0]
        for slot in range(workers):
            self._free.put(slot)

    @property
    def name(self) -> str:
        return str(self._description["name"])

    @property
    def identity(self) -> str:
        return str(self._description["identity"])

    @property
    def dimension(self) -> int:
        return int(self._description["dimension"])

    @property
    def max_tokens(self) -> int:
        return int(self._description["max_tokens"])

    @property
    def pids(self) -> list[int]:
        """The running children's process ids."""
        return [pid for child in self._children if (pid := child.pid) is not None]

    @property
    def pid(self) -> int | None:
        """The first running child's process id, None while none runs."""
        return next(iter(self.pids), None)

    def count_tokens(self, text: str) -> int:
        return int(self._call("count", text))

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        # Long inputs (documents written through the sidecar) go in parts, releasing the child between
        # them, so queries waiting for it are answered in between rather than after the whole batch.
        vectors: list[list[float]] = []
        for start in range(0, len(texts), _TEXTS_PER_CALL):
            vectors.extend(self._call("embed", list(texts[start : start + _TEXTS_PER_CALL])))
        return vectors

    def embed_soon(self, texts: Sequence[str]) -> asyncio.Future[list[list[float]]]:
        """``texts``' vectors as a future of the running event loop, the request already sent.

        A free child gets the texts at once, from the loop's own thread, and the loop reads the answer
        when the pipe becomes readable: no worker thread is woken on the way in or out, so the child
        starts before the caller's next statement (a search sends BM25 next) and the vectors reach the
        loop as soon as they exist. A search cannot wait for a model to load, so while a replacement
        child loads, or when the free child turns out dead, the future fails at once (the search answers
        lexical-only) and the replacement keeps loading. With every child busy, or more texts than one
        call takes, the call runs in a worker thread like ``embed``. Cancelling the future does not stop
        the child; its answer is read and dropped when it comes (or when another call needs the child,
        should the loop have closed first).
        """
        loop = asyncio.get_running_loop()
        batch = list(texts)
        if self._closed:
            return _failed(loop, EmbeddingError("the embedder is closed", model=self._model))
        if len(batch) > _TEXTS_PER_CALL:
            return loop.run_in_executor(None, self.embed, batch)
        self._reclaim_orphans()
        try:
            slot = self._free.get_nowait()
        except queue.Empty:
            return loop.run_in_executor(None, self.embed, batch)
        try:
            child = self._loaded_child(slot)
            if not child.send("embed", batch):
                raise EmbeddingError("the embedding process died; a new one is starting", model=self._model)
            timeout_s = self._reply_timeout_s + _PER_TEXT_S * len(batch)
            pending = _PendingAnswer(self, slot, child, loop, timeout_s)
        except EsbridgeError as exc:
            self._release(slot, self._children[slot])
            return _failed(loop, exc)
        except BaseException:
            self._children[slot].stop(graceful=False)  # an answer may come, and must not be taken for the next call's
            self._release(slot, self._children[slot])
            raise
        with self._state:
            self._in_flight[slot] = pending
        return pending.future

    def _loaded_child(self, slot: int) -> _Child:
        """The slot's child if it has its model now; ``EmbeddingError`` at once while a new one loads it."""
        child = self._child_in(slot)
        if not child.loaded():
            raise EmbeddingError("a new embedding process is still loading the model", model=self._model)
        if child.description is not None:
            self._description = child.description
        return child

    def _release(self, slot: int, child: _Child) -> None:
        """The slot's call is over: a child that died or hung is replaced now, then the slot is free again."""
        with self._state:
            self._in_flight.pop(slot, None)
        try:
            if child.connection is None:
                with contextlib.suppress(EsbridgeError):
                    self._child_in(slot)
        finally:
            self._free.put(slot)

    def _reclaim_orphans(self) -> None:
        """Free the slots of loop-side calls whose event loop closed before their answer came."""
        with self._state:
            orphans = [pending for pending in self._in_flight.values() if pending.loop.is_closed()]
        for pending in orphans:
            pending.drain()

    def close(self) -> None:
        with self._state:
            self._closed = True
            in_flight = list(self._in_flight.values())
        for pending in in_flight:
            pending.abandon_soon()
        self._stop_all()

    def __enter__(self) -> ProcessEmbedder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def _call(self, operation: str, argument: Any) -> Any:
        if self._closed:
            raise EmbeddingError("the embedder is closed", model=self._model)
        self._reclaim_orphans()
        try:
            slot = self._free.get(timeout=self._reply_timeout_s)
        except queue.Empty:
            raise EmbeddingError(
                f"every embedding process was busy for {self._reply_timeout_s:g}s", model=self._model
            ) from None
        try:
            child = self._child_in(slot)
            self._description = child.ready(self._start_timeout_s)  # waits only while a new child loads
            try:
                return child.call(operation, argument, self._reply_timeout_s + _PER_TEXT_S * _count(argument))
            except EmbeddingError as exc:
                if self._closed:
                    raise EmbeddingError("the embedder was closed during the call", model=self._model) from exc
                raise
            finally:
                if child.connection is None:
                    # It died or hung: its replacement loads the model now, not when the next call comes.
                    with contextlib.suppress(EsbridgeError):
                        self._child_in(slot)
        finally:
            self._free.put(slot)

    def _child_in(self, slot: int) -> _Child:
        """The slot's child, a new one if it has stopped; never started once the embedder is closed."""
        with self._state:
            if self._closed:
                raise EmbeddingError("the embedder is closed", model=self._model)
            child = self._children[slot]
            if child.connection is None:
                child = self._children[slot] = _Child(self._loader, self._model)
            return child

    def _stop_all(self) -> None:
        with self._state:
            children = list(self._children)
        for child in children:  # all are asked first, so they end side by side
            child.request_stop()
        for child in children:
            child.stop(graceful=True)


def _failed(loop: asyncio.AbstractEventLoop, error: EsbridgeError) -> asyncio.Future[list[list[float]]]:
    future: asyncio.Future[list[list[float]]] = loop.create_future()
    future.set_exception(error)
    return future


class _PendingAnswer:
    """A request sent to a child from an event loop; the loop reads the answer when the pipe is readable."""

    def __init__(
        self, owner: ProcessEmbedder, slot: int, child: _Child, loop: asyncio.AbstractEventLoop, timeout_s: float
    ) -> None:
        connection = child.connection
        if connection is None:
            raise EmbeddingError("the embedding process is stopped", model=child.model)
        self.future: asyncio.Future[list[list[float]]] = loop.create_future()
        self.loop = loop
        self._owner, self._slot, self._child, self._connection = owner, slot, child, connection
        self._timeout_s = timeout_s
        self._deadline = time.monotonic() + timeout_s
        self._done = False
        self._fd = connection.fileno()  # kept: a closed Connection no longer tells it
        loop.add_reader(self._fd, self._answer)
        self._timer = loop.call_later(timeout_s, self._expire)

    def drain(self) -> None:
        """Outside the (closed) loop: wait out the answer and drop it, or replace a child that gives none."""
        if self._done:
            return
        self._done = True
        try:
            if self._connection.poll(max(0.0, self._deadline - time.monotonic())):
                self._connection.recv()
            else:
                self._child.stop(graceful=False)
        except (EOFError, OSError):
            self._child.stop(graceful=False)
        finally:
            self._owner._release(self._slot, self._child)

    def abandon_soon(self) -> None:
        """Fail the call as closed, in its loop's thread (now if that is this thread); nothing once the loop is gone."""
        if self.loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self._abandon()
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed in between
                self.loop.call_soon_threadsafe(self._abandon)

    def _abandon(self) -> None:
        if not self._finish():
            return
        self._owner._release(self._slot, self._child)
        self._settle(EmbeddingError("the embedder was closed during the call", model=self._child.model))

    def _answer(self) -> None:
        if not self._finish():
            return
        try:
            status, payload = self._connection.recv()
        except (EOFError, OSError) as exc:
            self._child.stop(graceful=False)
            reason = f"the embedding process died ({type(exc).__name__}); a new one is starting"
            self._settle(EmbeddingError(reason, model=self._child.model))
        else:
            self._settle(EmbeddingError(str(payload), model=self._child.model) if status == "error" else payload)
        finally:
            self._owner._release(self._slot, self._child)

    def _expire(self) -> None:
        if not self._finish():
            return
        self._child.stop(graceful=False)
        self._owner._release(self._slot, self._child)
        reason = f"the embedding process gave no answer within {self._timeout_s:g}s; it was replaced"
        self._settle(EmbeddingError(reason, model=self._child.model))

    def _finish(self) -> bool:
        """Stop watching the pipe and the clock; False when the call was already settled another way."""
        if self._done:
            return False
        self._done = True
        self.loop.remove_reader(self._fd)
        self._timer.cancel()
        return True

    def _settle(self, outcome: list[list[float]] | EmbeddingError) -> None:
        if self.future.cancelled():
            return
        if isinstance(outcome, EmbeddingError):
            self.future.set_exception(outcome)
        else:
            self.future.set_result(outcome)
