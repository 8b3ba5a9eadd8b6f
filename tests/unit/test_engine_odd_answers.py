"""The engine's identification against a loopback listener that answers ``GET /`` with what no engine answers (a
proxy or another server at the URL): an esbridge error naming what came back, and on the command line one
``Error:`` line with exit code 1, never a traceback. (The Elasticsearch client refuses a server that does not
identify as Elasticsearch before esbridge reads the answer.)"""

from __future__ import annotations

import http.server
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from esbridge import errors
from esbridge.cli import main
from esbridge.config import load_settings
from esbridge.engines.factory import detect
from esbridge.engines.opensearch import OpenSearchEngine
from tests.support.loopback import listening


class _Odd(http.server.BaseHTTPRequestHandler):
    body: ClassVar[bytes] = b""

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    do_GET = do_POST = do_HEAD = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def listener() -> Iterator[str]:
    with listening(_Odd) as url:
        yield url


ROOTS = {
    "an empty body": b"",
    "a list": b"[]",
    "a string": b'"ok"',
    "no version number": b'{"name": "gateway", "version": {}}',
}


def _identify(kind: str, url: str) -> None:
    settings = load_settings(url=url, retries=0, timeout_s=5)
    if kind == "detect":
        detect(settings)
        return
    engine = OpenSearchEngine(settings)
    try:
        engine.probe()
    finally:
        engine.close()


@pytest.mark.parametrize("root", list(ROOTS))
@pytest.mark.parametrize("kind", ["opensearch", "detect"])
def test_a_root_answer_without_a_version_is_an_engine_error_naming_it(
    kind: str, root: str, listener: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_Odd, "body", ROOTS[root])
    with pytest.raises(errors.EngineResponseError, match=r"GET / answered .*not the object with version\.number"):
        _identify(kind, listener)


def test_the_command_line_says_so_in_one_error_line(listener: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_Odd, "body", b"")
    result = CliRunner().invoke(main, ["info", "--url", listener])
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)
    assert f"Error: detect engine failed on {listener}: GET / answered an empty body" in result.output
