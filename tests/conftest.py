"""Test-wide isolation and the report of engines whose integration cases did not run."""

from __future__ import annotations

import os
from collections import Counter

import pytest

_SKIPPED: Counter[tuple[str, str]] = Counter()
ENGINE_IDS = ("opensearch", "elasticsearch", "embedded")


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Unset ESBRIDGE_* settings (test engine URLs excepted) and run from an empty directory."""
    for name in list(os.environ):
        if name.startswith("ESBRIDGE_") and not name.startswith("ESBRIDGE_TEST_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not (report.skipped and "integration" in report.keywords):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    for engine in ENGINE_IDS:
        if f"[{engine}" in report.nodeid or f"-{engine}]" in report.nodeid:
            _SKIPPED[(engine, reason.removeprefix("Skipped: "))] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for (engine, reason), count in sorted(_SKIPPED.items()):
        terminalreporter.write_line(f"{engine}: {count} integration case(s) did not run: {reason}", yellow=True)
