"""An embedding model in child processes, for processes that serve queries.

In-process, a query's embedding runs in a worker thread but still needs the interpreter lock between
torch operations, so whatever Python the event loop runs meanwhile (sending the BM25 request, parsing
its answer, other requests) delays the embedding, which is the longest step of a hybrid search. In a
child process the model computes while the loop runs; a query pays one pipe round trip instead
(docs/benchmarks.md, end-to-end latency per mode: the embedding's delay inside a search fell from about
1.4 to 0.7 ms, and the sidecar served 30% more requests per second on 2 cores).

Children are started with ``spawn`` (no inherited locks or torch thread pools); each answers one call
at a time. If one dies, hangs past ``reply_timeout_s`` (plus 0.5 s per text) or cannot load the
model, the call raises an ``EsbridgeError`` (a search then degrades to lexical-only) and a replacement
starts at once, so its model loads before the next call needs it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import queue
import signal
import threading
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any

from esbridge.embeddings.base import Embedder, model_profile
from esbridge.embeddings.identity import ModelIdentity, identity_of
from esbridge.embeddings.profiles import PLAIN, ModelProfile
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
        "prompts": model_profile(model),
        "model_identity": identity_of(model),
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
        self._load_problem: str | None = None
        self._state = threading.Lock()
        """Guards ``_closed`` and ``_children`` against a close racing a replacement."""
        self._free: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._children: list[_Child] = []
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
    def prompts(self) -> ModelProfile:
        profile = self._description.get("prompts")
        return profile if isinstance(profile, ModelProfile) else PLAIN

    @property
    def model_identity(self) -> ModelIdentity:
        identity = self._description["model_identity"]
        assert isinstance(identity, ModelIdentity)
        return identity

    @property
    def load_problem(self) -> str | None:
        """Why the latest child to load the model could not (a replacement, after one died); None once one has."""
        return self._load_problem

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

    def close(self) -> None:
        with self._state:
            self._closed = True
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
        try:
            slot = self._free.get(timeout=self._reply_timeout_s)
        except queue.Empty:
            raise EmbeddingError(
                f"every embedding process was busy for {self._reply_timeout_s:g}s", model=self._model
            ) from None
        try:
            child = self._child_in(slot)
            try:
                description = child.ready(self._start_timeout_s)  # waits only while a new child loads
                self._same_model(description, child)
            except ModelUnavailable as exc:
                self._load_problem = str(exc)
                raise
            self._description, self._load_problem = description, None
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

    def _same_model(self, description: dict[str, Any], child: _Child) -> None:
        """A replacement child must run the model the first ones loaded: searchers checked the index against
        that one (``model_identity``), so other weights (its files replaced meanwhile) are stopped, not used."""
        started, loaded = self.model_identity, description["model_identity"]
        if loaded == started:
            return
        child.stop(graceful=True)
        raise ModelUnavailable(
            f"the embedding process loaded {loaded.describe()}, not {started.describe()}, which this process "
            "started with and checked the index against (its files changed); restart it to use the new model",
            model=self._model,
        )

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
