"""The engine contract on live clusters (scripts/engines up): OpenSearch always, Elasticsearch when
ESBRIDGE_TEST_ELASTICSEARCH_URL is set. In CI an unreachable OpenSearch fails, never skips."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from esbridge.config import load_settings
from esbridge.engines import Engine, connect
from tests.contract.contract import EngineContract
from tests.contract.field_values import FieldValuesContract
from tests.contract.model_record import ModelRecordContract
from tests.contract.query_dsl import QueryDslContract
from tests.contract.scoring import ScoringContract
from tests.contract.unusual_writes import UnusualWritesContract
from tests.integration.engines import engine_url, require_live

pytestmark = pytest.mark.integration


def live_engine(kind: str) -> Engine:
    require_live(kind)
    return connect(load_settings(url=engine_url(kind), engine=kind, timeout_s=30))


class TestOpenSearchEngine(
    EngineContract, FieldValuesContract, ModelRecordContract, QueryDslContract, ScoringContract, UnusualWritesContract
):
    @pytest.fixture
    def engine(self) -> Iterator[Engine]:
        engine = live_engine("opensearch")
        yield engine
        engine.close()


class TestElasticsearchEngine(
    EngineContract,
    FieldValuesContract,
    ModelRecordContract,
    QueryDslContract,
    ScoringContract,
    UnusualWritesContract,
):
    @pytest.fixture
    def engine(self) -> Iterator[Engine]:
        engine = live_engine("elasticsearch")
        yield engine
        engine.close()
