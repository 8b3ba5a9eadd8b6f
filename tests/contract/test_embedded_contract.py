from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from esbridge.engines.base import Engine
from esbridge.engines.embedded import EmbeddedEngine
from tests.contract.contract import EngineContract
from tests.contract.field_values import FieldValuesContract
from tests.contract.model_record import ModelRecordContract
from tests.contract.query_dsl import QueryDslContract
from tests.contract.scoring import ScoringContract
from tests.contract.unusual_writes import UnusualWritesContract


class TestEmbeddedEngine(
    EngineContract, FieldValuesContract, ModelRecordContract, QueryDslContract, ScoringContract, UnusualWritesContract
):
    @pytest.fixture
    def engine(self, tmp_path: Path) -> Iterator[Engine]:
        engine = EmbeddedEngine(tmp_path / "data")
        yield engine
        engine.close()
