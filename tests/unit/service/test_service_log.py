"""``esbridge serve`` writes the service's own log lines to stderr, informational ones included: the docs promise
that the log says how a write that answered 504 ended, and when the keys file was read again."""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from esbridge.service import app as service_app
from esbridge.service.auth import KeyRing
from tests.unit.service.conftest import KEY, service_settings


@pytest.fixture
def loggers_restored() -> Iterator[None]:
    saved = [
        (logger, list(logger.handlers), logger.level, logger.propagate)
        for logger in (logging.getLogger("esbridge"), logging.getLogger("esbridge.access"))
    ]
    sighup = signal.getsignal(signal.SIGHUP) if hasattr(signal, "SIGHUP") else None
    yield
    for logger, handlers, level, propagate in saved:
        logger.handlers, logger.level, logger.propagate = handlers, level, propagate
    if sighup is not None:
        signal.signal(signal.SIGHUP, sighup)


def serve_without_listening(monkeypatch: pytest.MonkeyPatch, log_level: str, **service: object) -> None:
    """``serve`` as ``esbridge serve`` runs it, up to where uvicorn would start listening."""
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)
    service_app.serve(service_settings(**service), log_level=log_level)


def test_informational_service_lines_reach_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], loggers_restored: None
) -> None:
    keys = tmp_path / "keys"
    keys.write_text(f"{KEY} read\n", encoding="utf-8")
    keys.chmod(0o600)
    serve_without_listening(monkeypatch, "info", api_keys_file=keys)
    capfd.readouterr()

    KeyRing([], file=keys).reload()
    logging.getLogger("esbridge.service").info("the upsert that answered 504 has ended (completed)")

    err = capfd.readouterr().err
    assert f"INFO:     API keys file {keys} read: 1 keys" in err
    assert "INFO:     the upsert that answered 504 has ended (completed)" in err
    assert KEY not in err


def test_the_log_level_applies_to_the_service_lines(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], loggers_restored: None
) -> None:
    serve_without_listening(monkeypatch, "warning")
    capfd.readouterr()

    service_log = logging.getLogger("esbridge.service")
    service_log.info("an informational line")
    service_log.error("an error line")

    err = capfd.readouterr().err
    assert "an informational line" not in err
    assert "ERROR:    an error line" in err
