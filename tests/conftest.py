"""Test-wide isolation and the report of engines whose integration cases did not run."""

from __future__ import annotations

import os
from collections import Counter

import pytest

_SKIPPED_BY_ENGINE: Counter[str] = Counter()
ENGINE_IDS = ("opensearch", "elasticsearch", "embedded")


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Unset ESBRIDGE_* settings (test engine URLs excepted) and run from an empty directory."""
    for name in list(os.environ):
        if name.startswith("ESBRIDGE_") and not name.startswith("ESBRIDGE_TEST_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and "integration" in report.keywords:
        for engine in ENGINE_IDS:
            if f"[{engine}" in report.nodeid or f"-{engine}]" in report.nodeid:
                _SKIPPED_BY_ENGINE[engine] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests.integration.engines import unavailable_reason

    for engine, count in sorted(_SKIPPED_BY_ENGINE.items()):
        terminalreporter.write_line(
            f"{engine}: {count} integration case(s) did not run: {unavailable_reason(engine)}", yellow=True
        )
