"""Small HTTP servers on 127.0.0.1 for tests: a replayer of recorded engine answers and an auth proxy.

Both run real HTTP, so the engine clients' own code (headers, product checks, retries, parsing)
runs unchanged against them.
"""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from esbridge.engines.base import BulkAction, BulkResult, Engine

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "elasticsearch"

# What an Elasticsearch 8.x/9.x server sends; elasticsearch-py refuses 2xx answers without the product header.
ELASTIC_HEADERS = {
    "X-Elastic-Product": "Elasticsearch",
    "Content-Type": "application/vnd.elasticsearch+json;compatible-with=8",
}


@dataclass(frozen=True)
class Recording:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    source: str = ""


def load_recording(name: str) -> Recording:
    """A recorded exchange from ``tests/fixtures/elasticsearch/<name>.json``."""
    data = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return Recording(
        status=int(data["status"]), body=data.get("body"), headers=dict(ELASTIC_HEADERS), source=data["source"]
    )


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def ndjson(self) -> list[Any]:
        return [json.loads(line) for line in self.body.decode().splitlines() if line.strip()]


def route_elasticsearch_probe(replay: ReplayServer, *, major: int, licence: str) -> None:
    """The recorded answers the adapter's probe asks for: root, local node, health and licence."""
    replay.route("GET", "/", f"info_{major}")
    replay.route("GET", "/_nodes/_local/plugins,settings", f"nodes_info_{major}")
    replay.route("GET", "/_cluster/health", "cluster_health")
    replay.route("GET", "/_license", f"license_{licence}")


class ReplayServer:
    """Answers requests from a route table of recordings and remembers every request it saw."""

    def __init__(self) -> None:
        self.routes: list[tuple[str, re.Pattern[str], Recording]] = []
        self.requests: list[Request] = []
        self._server: ThreadingHTTPServer | None = None

    def route(self, method: str, path_pattern: str, recording: Recording | str) -> None:
        if isinstance(recording, str):
            recording = load_recording(recording)
        self.routes.insert(0, (method, re.compile(f"^{path_pattern}$"), recording))  # method may be "PUT|POST"

    def find(self, method: str, path: str) -> Recording:
        for route_method, pattern, recording in self.routes:
            if method in route_method.split("|") and pattern.match(path):
                return recording
        return Recording(404, {"error": f"no recording for {method} {path}"}, dict(ELASTIC_HEADERS))

    def requests_to(self, method: str, path_pattern: str) -> list[Request]:
        pattern = re.compile(f"^{path_pattern}$")
        return [r for r in self.requests if r.method in method.split("|") and pattern.match(r.path)]

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @contextmanager
    def running(self) -> Iterator[ReplayServer]:
        replay = self

        class Handler(_QuietHandler):
            def handle_any(self) -> None:
                parts = urlsplit(self.path)
                body = self.read_body()
                replay.requests.append(
                    Request(
                        self.command, parts.path, parts.query, {k.lower(): v for k, v in self.headers.items()}, body
                    )
                )
                recording = replay.find(self.command, parts.path)
                payload = b"" if recording.body is None else json.dumps(recording.body).encode()
                self.reply(recording.status, payload, recording.headers)

        with _serving(Handler) as server:
            self._server = server
            yield self


Answer = tuple[int, bytes, dict[str, str]]
Intercept = Callable[[str, str, Mapping[str, str]], "Answer | None"]


class ForwardingProxy:
    """A reverse proxy to a real engine; ``intercept`` may answer a request itself instead.

    ``intercept(method, path, headers)`` returns ``(status, body, headers)`` to answer, or None to forward.
    """

    def __init__(self, upstream: str, intercept: Intercept) -> None:
        self.upstream = urlsplit(upstream)
        self.intercept = intercept
        self.forwarded = 0
        self.intercepted = 0
        self.stopped = False
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        """Stop listening: later connections are refused, and open ones closed unanswered, as by an engine that
        went away."""
        assert self._server is not None
        self.stopped = True
        self._server.shutdown()
        self._server.server_close()

    @contextmanager
    def running(self) -> Iterator[ForwardingProxy]:
        proxy = self

        class Handler(_QuietHandler):
            def handle_any(self) -> None:
                body = self.read_body()
                if proxy.stopped:
                    self.close_connection = True
                    return
                answer = proxy.intercept(self.command, self.path, dict(self.headers.items()))
                if answer is not None:
                    proxy.intercepted += 1
                    self.reply(*answer)
                    return
                proxy.forwarded += 1
                upstream = http.client.HTTPConnection(
                    proxy.upstream.hostname or "127.0.0.1", proxy.upstream.port, timeout=60
                )
                forwarded = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "authorization")}
                if proxy.upstream.username is not None:
                    login = f"{unquote(proxy.upstream.username)}:{unquote(proxy.upstream.password or '')}"
                    forwarded["Authorization"] = "Basic " + base64.b64encode(login.encode()).decode()
                upstream.request(self.command, self.path, body=body or None, headers=forwarded)
                response = upstream.getresponse()
                headers = {
                    name: value
                    for name, value in response.getheaders()
                    if name.lower() not in ("content-length", "transfer-encoding", "connection")
                }
                self.reply(response.status, response.read(), headers)
                upstream.close()

        with _serving(Handler) as server:
            self._server = server
            yield self


def requiring_basic_auth(username: str, password: str, *, flavour: str) -> Intercept:
    """Refuse requests without these credentials the way the engine's security layer does."""
    expected = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()
    if flavour == "elasticsearch":
        reason = f"unable to authenticate user [{username}]"
        error = {"root_cause": [{"type": "security_exception", "reason": reason}], "type": "security_exception"}
        refusal: Answer = (
            401,
            json.dumps({"error": {**error, "reason": reason}, "status": 401}).encode(),
            {**ELASTIC_HEADERS, "WWW-Authenticate": 'Basic realm="security" charset="UTF-8"'},
        )
    else:
        refusal = (
            401,
            b"Unauthorized",
            {"Content-Type": "text/plain; charset=UTF-8", "WWW-Authenticate": 'Basic realm="OpenSearch Security"'},
        )

    def intercept(method: str, path: str, headers: Mapping[str, str]) -> Answer | None:
        given = next((value for name, value in headers.items() if name.lower() == "authorization"), None)
        return None if given == expected else refusal

    return intercept


def busy_for(requests: int, *, path_contains: str = "_bulk") -> Intercept:
    """Answer the first ``requests`` matching requests with 429, as an engine with a full write queue does."""
    remaining = [requests]
    body = {
        "error": {
            "root_cause": [{"type": "es_rejected_execution_exception", "reason": "rejected execution (queue full)"}],
            "type": "es_rejected_execution_exception",
            "reason": "rejected execution (queue full)",
        },
        "status": 429,
    }

    def intercept(method: str, path: str, headers: Mapping[str, str]) -> Answer | None:
        if path_contains in path and remaining[0] > 0:
            remaining[0] -= 1
            return 429, json.dumps(body).encode(), {**ELASTIC_HEADERS, "Content-Type": "application/json"}
        return None

    return intercept


class _QuietHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        return body

    def handle_any(self) -> None:
        raise NotImplementedError

    def reply(self, status: int, payload: bytes, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def do_GET(self) -> None:
        self.handle_any()

    def do_POST(self) -> None:
        self.handle_any()

    def do_PUT(self) -> None:
        self.handle_any()

    def do_DELETE(self) -> None:
        self.handle_any()

    def do_HEAD(self) -> None:
        self.handle_any()


@contextmanager
def _serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class GoesAwayAfter:
    """The engine behind ``proxy``, which stops listening once ``bulks`` bulk requests were answered."""

    def __init__(self, engine: Engine, proxy: ForwardingProxy, bulks: int) -> None:
        self._engine, self._proxy, self._left = engine, proxy, bulks

    def bulk(self, index: str, actions: Sequence[BulkAction]) -> BulkResult:
        result = self._engine.bulk(index, actions)
        self._left -= 1
        if self._left == 0:
            self._proxy.stop()
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


@contextmanager
def listening(handler: type[BaseHTTPRequestHandler], *, scheme: str = "http") -> Iterator[str]:
    """``handler`` answering on a free port of 127.0.0.1, in a thread; the base URL, under ``scheme``, while it runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
