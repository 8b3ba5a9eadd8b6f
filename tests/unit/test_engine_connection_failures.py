"""Every cluster adapter against loopback listeners: an HTTPS one with a self-signed certificate (verification is on
by default, a certificate it cannot verify is a TLSError naming the cause, tls.ca_certs makes it trusted) and one
that never answers (the timeout says how long it waited)."""

from __future__ import annotations

import asyncio
import http.server
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from esbridge import errors
from esbridge.config import Settings, load_settings
from esbridge.engines.elasticsearch import AsyncElasticsearchEngine, ElasticsearchEngine
from esbridge.engines.factory import detect
from esbridge.engines.opensearch import AsyncOpenSearchEngine, OpenSearchEngine
from tests.support.certificates import self_signed
from tests.support.loopback import listening

EMPTY_SEARCH = {"took": 1, "timed_out": False, "hits": {"total": {"value": 0, "relation": "eq"}, "hits": []}}


class _Answer(http.server.BaseHTTPRequestHandler):
    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps(EMPTY_SEARCH).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("x-elastic-product", "Elasticsearch")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def tls_listener(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    cert, key = self_signed(tmp_path_factory.mktemp("tls"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://elastic:topsecret@127.0.0.1:{server.server_address[1]}", cert
    finally:
        server.shutdown()
        server.server_close()


def search_with(kind: str, settings: Settings) -> None:
    """One search through the adapter ``kind``, which raises what the adapter makes of a failure."""
    if kind == "opensearch":
        engine = OpenSearchEngine(settings)
        try:
            engine.search("notes", {"query": {"match_all": {}}})
        finally:
            engine.close()
    elif kind == "elasticsearch":
        es_engine = ElasticsearchEngine(settings)
        try:
            es_engine.search("notes", {"query": {"match_all": {}}})
        finally:
            es_engine.close()
    elif kind == "detect":
        detect(settings)
    else:
        asyncio.run(_search_async(kind, settings))


async def _search_async(kind: str, settings: Settings) -> None:
    engine = AsyncOpenSearchEngine(settings) if kind == "async-opensearch" else AsyncElasticsearchEngine(settings)
    try:
        await engine.search("notes", {"query": {"match_all": {}}})
    finally:
        await engine.close()


KINDS = ["opensearch", "elasticsearch", "async-opensearch", "async-elasticsearch"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_certificate_that_cannot_be_verified_is_a_tls_error(kind: str, tls_listener: tuple[str, Path]) -> None:
    url, _ = tls_listener
    settings = load_settings(url=url, retries=0, timeout_s=5)
    with pytest.raises(errors.TLSError) as refused:
        search_with(kind, settings)
    message = str(refused.value)
    assert "certificate verify failed" in message.lower()
    assert "tls.ca_certs" in message  # what to do about it
    assert "topsecret" not in message
    assert message.startswith(f"search failed on {settings.display_url}")


@pytest.mark.parametrize("kind", KINDS)
def test_a_ca_bundle_makes_the_certificate_trusted(kind: str, tls_listener: tuple[str, Path]) -> None:
    url, cert = tls_listener
    search_with(kind, load_settings(url=url, retries=0, timeout_s=5, tls={"ca_certs": str(cert)}))


@pytest.fixture(scope="module")
def plain_http_listener() -> Iterator[str]:
    """The answering listener without TLS, addressed as https://: the mistake of a wrong scheme."""
    with listening(_Answer, scheme="https") as url:
        yield url


@pytest.mark.parametrize("kind", [*KINDS, "detect"])
def test_an_https_url_to_a_plain_http_server_says_so(kind: str, plain_http_listener: str) -> None:
    with pytest.raises(errors.TLSError, match=r"plain HTTP.*http://"):
        search_with(kind, load_settings(url=plain_http_listener, retries=0, timeout_s=5))


@pytest.fixture
def silent_listener() -> Iterator[str]:
    """A loopback port that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()


@pytest.mark.parametrize("kind", [*KINDS, "detect"])
def test_a_timeout_says_how_long_it_waited_and_which_settings_say_so(kind: str, silent_listener: str) -> None:
    settings = load_settings(url=silent_listener, retries=1, timeout_s=0.3)
    expected = r"no answer within 0\.3 s, 2 attempts \(settings timeout_s, retries\)"
    with pytest.raises(errors.EngineTimeout, match=expected):
        search_with(kind, settings)


@pytest.mark.parametrize("kind", KINDS)
def test_a_certificate_for_another_host_says_so_rather_than_blaming_the_ca(
    kind: str, tls_listener: tuple[str, Path]
) -> None:
    url, cert = tls_listener  # the certificate lists 127.0.0.1 only
    settings = load_settings(
        url=url.replace("127.0.0.1", "localhost"), retries=0, timeout_s=5, tls={"ca_certs": str(cert)}
    )
    with pytest.raises(errors.TLSError) as refused:
        search_with(kind, settings)
    assert "tls.ca_certs" not in str(refused.value)
    assert "host name or address its certificate lists" in str(refused.value)


class _CutOff(http.server.BaseHTTPRequestHandler):
    """Answers with a proxy's cookie among headers it never finishes, then closes: a proxy or node that dies mid-way."""

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.wfile.write(b"HTTP/1.1 200 OK\r\nSet-Cookie: AWSALB=cookie-of-the-proxy; Path=/\r\nContent-Le")
        self.wfile.flush()
        self.close_connection = True

    do_GET = do_POST = do_HEAD = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize("kind", KINDS)
def test_an_answer_cut_off_in_its_headers_is_reported_without_them(kind: str) -> None:
    with listening(_CutOff) as url, pytest.raises(errors.EngineError) as failed:
        search_with(kind, load_settings(url=url, retries=0, timeout_s=5))
    message = str(failed.value)
    assert "cookie-of-the-proxy" not in message  # the service would show it to every caller
    assert isinstance(failed.value, errors.EngineUnavailable)
    assert "an answer cut off after its headers (HTTP 200)" in message


class _CutOffAfterProduct(_CutOff):
    """As an engine that dies mid-way through its headers: its product header and content type are in."""

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.wfile.write(
            b"HTTP/1.1 200 OK\r\nX-elastic-product: Elasticsearch\r\ncontent-type: application/json\r\nContent-Le"
        )
        self.wfile.flush()
        self.close_connection = True

    do_GET = do_POST = do_HEAD = _answer


@pytest.mark.parametrize("kind", ["opensearch", "elasticsearch"])
def test_a_sync_answer_cut_off_in_its_headers_is_not_read_as_an_empty_body(kind: str) -> None:
    """An empty body read as the answer made the index behind an alias "found 0" and a search a TypeError."""
    with listening(_CutOffAfterProduct) as url, _sync_engine(kind, url) as engine:
        for call in (
            lambda: engine.get_mapping("notes"),
            lambda: engine.alias_targets("notes"),
            lambda: engine.search("notes", {"query": {"match_all": {}}}),
        ):
            with pytest.raises(
                errors.EngineUnavailable,
                match=r"cannot connect \(an answer cut off after its headers \(HTTP 200\)\)$",
            ):
                call()
        assert engine.index_exists("notes")  # a HEAD answer has no body to lose


@contextmanager
def _sync_engine(kind: str, url: str) -> Iterator[OpenSearchEngine | ElasticsearchEngine]:
    settings = load_settings(url=url, retries=0, timeout_s=5)
    engine = OpenSearchEngine(settings) if kind == "opensearch" else ElasticsearchEngine(settings)
    try:
        yield engine
    finally:
        engine.close()


def test_engine_detection_reads_an_answer_cut_off_in_its_headers_as_unavailable() -> None:
    """``engine = auto`` (the default) asks GET / first: its empty body read as the answer blamed another server."""
    with listening(_CutOffAfterProduct) as url, pytest.raises(errors.EngineUnavailable) as failed:
        detect(load_settings(url=url, retries=0, timeout_s=5))
    assert str(failed.value).endswith("cannot connect (an answer cut off after its headers (HTTP 200))")


class _NoContent(_CutOff):
    """A whole answer without a body, as HTTP lets 204 be: no Content-Length, nothing after the headers."""

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.wfile.write(b"HTTP/1.1 204 No Content\r\nX-elastic-product: Elasticsearch\r\n\r\n")
        self.wfile.flush()

    do_GET = do_POST = do_DELETE = do_HEAD = _answer


@pytest.mark.parametrize("kind", ["opensearch", "elasticsearch"])
def test_an_answer_that_has_no_body_by_definition_is_not_read_as_cut_off(kind: str) -> None:
    with listening(_NoContent) as url, _sync_engine(kind, url) as engine:
        client: Any = engine._client  # (the transport itself: no adapter call expects a 204)
        answer = client.transport.perform_request("DELETE", "/notes/_doc/a")
        if kind == "opensearch":
            assert answer == ""
        else:
            assert (answer.meta.status, answer.body) == (204, None)
