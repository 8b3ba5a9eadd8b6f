"""``mode: "native"`` with a fusion no engine can run on the embedded engine: the error names that engine and what
to do, not the engines it is not."""

from __future__ import annotations

import anyio
import pytest

from esbridge.config.pipeline import PipelineSettings
from esbridge.engines.capabilities import Capabilities
from esbridge.errors import ConfigError
from esbridge.query.native.choice import choose_native

EMBEDDED = Capabilities(distribution="embedded", version="1", url="embedded:///tmp/x", knn=True)


async def _embedded() -> Capabilities:
    return EMBEDDED


def test_native_mode_on_the_embedded_engine_names_it_and_what_to_do() -> None:
    async def choose() -> object:
        return await choose_native("native", PipelineSettings(), "qpp", {}, {}, capabilities=_embedded)

    with pytest.raises(ConfigError) as refused:
        anyio.run(choose)
    message = str(refused.value)
    assert "embedded engine has no server-side fusion" in message
    assert "use mode 'auto' or 'client'" in message
    assert "OpenSearch" not in message and "Elasticsearch" not in message
