"""A thread's engine calls end by its deadline (``esbridge.engines.call_deadline``), however long the client's own
timeout and retries would wait, on both synchronous cluster adapters: what a sidecar write to a hung engine needs."""

from __future__ import annotations

import time

import pytest

from esbridge import errors
from esbridge.config import load_settings
from esbridge.engines.base import BulkAction, Engine
from esbridge.engines.call_deadline import DeadlinePassed, engine_calls_until
from esbridge.engines.elasticsearch import ElasticsearchEngine
from esbridge.engines.opensearch import OpenSearchEngine


def _engine(kind: str, url: str) -> Engine:
    settings = load_settings(url=url, retries=3, timeout_s=5)  # the client alone would wait 4 x 5 s
    return OpenSearchEngine(settings) if kind == "opensearch" else ElasticsearchEngine(settings)


@pytest.mark.parametrize("kind", ["opensearch", "elasticsearch"])
def test_a_call_to_a_hung_engine_ends_at_the_threads_deadline(kind: str, silent_url: str) -> None:
    engine = _engine(kind, silent_url)
    began = time.monotonic()
    with engine_calls_until(lambda: began + 0.5), pytest.raises(DeadlinePassed):
        engine.bulk("notes", [BulkAction("index", "a#0", {"text": "x"})])
    assert time.monotonic() - began < 2


@pytest.mark.parametrize("kind", ["opensearch", "elasticsearch"])
def test_without_a_deadline_the_clients_own_timeout_applies(kind: str, silent_url: str) -> None:
    settings = load_settings(url=silent_url, retries=0, timeout_s=0.3)
    engine = OpenSearchEngine(settings) if kind == "opensearch" else ElasticsearchEngine(settings)
    later = engine_calls_until(lambda: time.monotonic() + 60)  # a later deadline leaves the client's timeout
    with later, pytest.raises(errors.EngineTimeout, match=r"no answer within 0\.3 s"):
        engine.search("notes", {"query": {"match_all": {}}})
    with pytest.raises(errors.EngineTimeout, match=r"no answer within 0\.3 s"):
        engine.search("notes", {"query": {"match_all": {}}})
