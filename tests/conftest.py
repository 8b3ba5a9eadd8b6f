"""Test-wide isolation and the report of engines whose integration cases did not run."""

from __future__ import annotations

import os
import socket
import threading
from collections import Counter
from collections.abc import Iterator

import pytest

_SKIPPED: Counter[tuple[str, str]] = Counter()
# Engine id -> the prefix of contract-suite classes that test it (tests/contract).
ENGINE_IDS = {"opensearch": "TestOpenSearch", "elasticsearch": "TestElasticsearch", "embedded": "TestEmbedded"}


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Unset ESBRIDGE_* settings (test engine URLs excepted), run from an empty directory, and keep the
    embedded engine's data in a temporary directory, never in the user's."""
    for name in list(os.environ):
        if name.startswith("ESBRIDGE_") and not name.startswith("ESBRIDGE_TEST_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    monkeypatch.setenv("ESBRIDGE_DATA_DIR", str(tmp_path_factory.mktemp("data")))


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A loopback port that accepts connections (the kernel queues them) and never reads or answers: a hung engine."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not (report.skipped and "integration" in report.keywords):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if "cluster" in report.keywords:
        kind = "elasticsearch" if "[elasticsearch" in report.nodeid else "opensearch"
        _SKIPPED[(f"{kind}-cluster", reason.removeprefix("Skipped: "))] += 1
        return
    for engine, class_name in ENGINE_IDS.items():
        if f"[{engine}" in report.nodeid or f"-{engine}]" in report.nodeid or f"::{class_name}" in report.nodeid:
            _SKIPPED[(engine, reason.removeprefix("Skipped: "))] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for (engine, reason), count in sorted(_SKIPPED.items()):
        terminalreporter.write_line(f"{engine}: {count} integration case(s) did not run: {reason}", yellow=True)


@pytest.fixture
def released() -> Iterator[threading.Event]:
    """An event set at the end of the test, so that threads a test double holds until then return."""
    event = threading.Event()
    yield event
    event.set()
