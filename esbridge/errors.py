"""The one error hierarchy of esbridge.

Third-party exceptions (opensearch-py, elasticsearch-py, urllib3, aiohttp, ...) are translated into
these at the engine boundary with ``raise ... from exc``, so callers catch esbridge errors only::

    EsbridgeError
    ├── ConfigError                 bad or contradictory settings
    │   └── ModelMismatch           the query model is not the model that made the index's vectors
    ├── DependencyMissing           an optional dependency is not installed (message has the pip hint)
    ├── SourceError                 an input file or folder is missing or unreadable as a whole
    ├── EmbeddingError              embedding texts or the embedding cache failed
    │   └── ModelUnavailable        the embedding model could not be found or loaded
    └── EngineError                 an engine call failed; carries engine URL, index and operation
        ├── EngineUnavailable       the engine could not be reached (refused, DNS, reset)
        │   ├── EngineTimeout       no answer within the timeout
        │   └── TLSError            TLS handshake or certificate verification failed
        ├── AuthenticationError     401: missing or wrong credentials
        ├── AuthorizationError      403: authenticated, but not allowed
        ├── IndexNotFound           404 on an index or alias
        ├── IndexAlreadyExists      the index to create exists
        ├── IndexWriteBlocked       the index refuses writes for now (``esbridge index reindex`` is copying it)
        ├── ReindexTaskRunning      a server-side reindex task was not confirmed cancelled: it may still copy
        ├── IndexUnavailable        no shard of the index could answer (a red index: no active copy)
        ├── Throttled               429: the engine asks to slow down
        ├── RequestRejected         4xx: the engine refused the request as malformed
        ├── UnsupportedFeature      the engine (version, plugin, licence) lacks what was asked
        └── EngineResponseError     5xx or an answer esbridge cannot make sense of

Ctrl-C stays a ``KeyboardInterrupt``; where a run can say what it kept, it raises a subclass
(``IngestInterrupted``, ``ReindexInterrupted``) whose message says so.

Warnings (``warnings.warn``) say that something is probably not what was meant while esbridge goes on::

    EsbridgeWarning
    └── SettingsWarning             a settings source holds something no setting reads
"""

from __future__ import annotations


class EsbridgeError(Exception):
    """Base class of every error esbridge raises on purpose."""


class ConfigError(EsbridgeError):
    """Settings are missing, malformed or contradict each other."""


class AmbiguousAlias(ConfigError):
    """The alias points to several indices: a write would reach only its write index while searches read them all."""


class ReadOnlyIndex(ConfigError):
    """A write was asked of an attached index (one esbridge did not create) without the flag that allows it."""


class DimensionMismatch(ConfigError):
    """The query embedder's vectors do not have the dimension of the index's vector field."""


class ModelMismatch(ConfigError):
    """The model a search would embed the query with is not the model that made the index's vectors.

    ``index_model`` and ``query_model`` are the two models' one-line descriptions; the message names both.
    """

    def __init__(self, message: str, *, index: str, index_model: str, query_model: str) -> None:
        super().__init__(message)
        self.index = index
        self.index_model = index_model
        self.query_model = query_model


class DependencyMissing(EsbridgeError):
    """An optional dependency is needed for what was asked and is not installed."""

    def __init__(self, package: str, extra: str | None = None, purpose: str = "") -> None:
        hint = f"pip install 'esbridge[{extra}]'" if extra else f"pip install {package}"
        what = f" for {purpose}" if purpose else ""
        super().__init__(f"{package} is required{what}; install it with: {hint}")
        self.package = package


class SourceError(EsbridgeError):
    """An input file or folder is missing or cannot be read at all.

    One bad record inside a readable input is not an error: sources yield a ``Problem`` for it and go on.
    """


class EmbeddingError(EsbridgeError):
    """Embedding (or its cache) failed; the message names the model, when one is involved, and the cause.

    ``role`` says which model it is (a re-ranker's cross-encoder fails with these errors too).
    """

    def __init__(self, reason: str, *, model: str | None = None, role: str = "embedding model") -> None:
        self.model = model
        self.reason = reason
        super().__init__(f"{role} {model!r}: {reason}" if model else reason)


RERANKER_ROLE = "re-ranker"
"""``EmbeddingError``'s ``role`` for the cross-encoder of ``[pipeline.rerank]``."""


class ModelUnavailable(EmbeddingError):
    """The embedding model could not be found or loaded; search can still go lexical-only."""


EMBEDDED_URL_PREFIX = "embedded:"
"""The embedded engine's ``url`` is this and its data directory."""


class EngineError(EsbridgeError):
    """An engine call failed.

    The message always names the operation, the engine URL (credentials removed) and, when one is
    involved, the index, so an operator can tell which of several clusters and indices misbehaved.
    """

    def __init__(
        self,
        reason: str,
        *,
        url: str,
        operation: str,
        index: str | None = None,
        status: int | None = None,
    ) -> None:
        self.reason = reason
        self.url = url
        self.operation = operation
        self.index = index
        self.status = status
        where = f"{url}, index {index!r}" if index else url
        # The embedded engine gives its errors the status OpenSearch would, so callers treat both alike,
        # but it answers no HTTP request.
        over_http = not url.startswith(EMBEDDED_URL_PREFIX)
        code = f" (HTTP {status})" if status is not None and over_http else ""
        super().__init__(f"{operation} failed on {where}{code}: {reason}")


class EngineUnavailable(EngineError):
    """The engine could not be reached at all."""


class EngineTimeout(EngineUnavailable):
    """The engine did not answer within the configured timeout."""


class TLSError(EngineUnavailable):
    """The TLS handshake or certificate verification failed."""


class AuthenticationError(EngineError):
    """The engine rejected the credentials (HTTP 401)."""


class AuthorizationError(EngineError):
    """The credentials are valid but lack a privilege (HTTP 403)."""


class IndexNotFound(EngineError):
    """The index or alias does not exist (HTTP 404)."""


class IndexAlreadyExists(EngineError):
    """The index to be created already exists."""


class IndexWriteBlocked(EngineError):
    """The index refused writes because of its write block, which ``esbridge index reindex`` sets while it copies."""


class ReindexTaskRunning(EngineError):
    """A server-side reindex task, given up on, could not be confirmed cancelled: it may still write into its
    destination. ``task_id`` names it; ``interrupted``: Ctrl-C stopped the wait for it."""

    def __init__(
        self, reason: str, *, task_id: str, interrupted: bool, url: str, operation: str, index: str | None = None
    ) -> None:
        super().__init__(reason, url=url, operation=operation, index=index)
        self.task_id = task_id
        self.interrupted = interrupted


class IndexUnavailable(EngineError):
    """No shard of the index could answer (HTTP 503, all shards failed): the index is red, its shards have no
    active copy because the nodes holding them are down or the shards could not be allocated."""


class Throttled(EngineError):
    """The engine asked the client to slow down (HTTP 429)."""


class RequestRejected(EngineError):
    """The engine refused the request as malformed or invalid (HTTP 4xx)."""


class UnsupportedFeature(EngineError):
    """The engine's version, plugins or licence lack a feature that was asked for."""


class EngineResponseError(EngineError):
    """The engine failed (HTTP 5xx) or answered something esbridge cannot interpret."""


class IngestInterrupted(KeyboardInterrupt):
    """Ctrl-C during an ingest, once the write in flight has finished; the message says what was kept."""


class ReindexInterrupted(KeyboardInterrupt):
    """Ctrl-C during ``esbridge index reindex``; the message says where the alias points, what became of the new
    version and of the old one's write block, and what to run next."""


class EsbridgeWarning(UserWarning):
    """Base class of every warning esbridge gives on purpose; the command line prints them as ``warning:`` lines."""


class SettingsWarning(EsbridgeWarning):
    """A settings source holds something no setting reads, e.g. an unknown ``ESBRIDGE_*`` variable."""
