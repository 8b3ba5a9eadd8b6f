from __future__ import annotations

import json

from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import load_settings
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.mappings.schema import IndexParameters, render_index


def test_mapping_show_on_the_embedded_engine_prints_the_body_its_indices_are_created_with() -> None:
    engine = EmbeddedEngine.from_settings(load_settings())
    try:
        expected = render_index(engine.dialect, IndexParameters())
    finally:
        engine.close()
    for args in ([], ["--engine", "embedded"]):
        result = CliRunner().invoke(main, ["mapping", "show", *args])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout) == expected
