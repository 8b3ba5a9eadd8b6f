from __future__ import annotations

import json

from click.testing import CliRunner

from esbridge.cli import main
from esbridge.cli.info import render
from esbridge.engines import Capabilities


def test_render_lists_every_fact_aligned() -> None:
    text = render(
        Capabilities(
            distribution="opensearch",
            version="3.3.2",
            url="http://127.0.0.1:9200",
            cluster_name="local",
            health="green",
            knn=True,
            plugins={"opensearch-knn": "3.3.2"},
            native_hybrid={"hybrid_query": False, "z_score": False},
            notes=["neural-search plugin absent"],
        )
    )
    lines = text.splitlines()
    assert lines[0] == "Engine          opensearch 3.3.2"
    assert "Cluster         local (health: green)" in lines
    assert "Vector search   yes" in lines
    assert "Plugins         opensearch-knn 3.3.2" in lines
    assert "  hybrid_query  no" in lines
    assert "Note            neural-search plugin absent" in lines


def test_info_without_an_engine_url_probes_the_embedded_engine() -> None:
    result = CliRunner().invoke(main, ["info", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["distribution"] == "embedded"
    assert data["knn"] is True
    assert not any(data["native_hybrid"].values())


def test_invalid_settings_are_reported_at_the_edge() -> None:
    result = CliRunner().invoke(main, ["info", "--url", "ftp://nowhere"])
    assert result.exit_code == 1
    assert "url must look like http(s)://host:port" in result.output


def test_an_empty_index_is_not_said_to_predate_model_records() -> None:
    # A new index, or one whose first ingest was stopped before any write, records no model yet.
    assert CliRunner().invoke(main, ["index", "create", "--index", "fresh"]).exit_code == 0
    result = CliRunner().invoke(main, ["info", "--index", "fresh"])
    assert result.exit_code == 0, result.output
    assert "not recorded yet: the index is empty" in result.output
    assert "predates model records" not in result.output
    data = json.loads(CliRunner().invoke(main, ["info", "--index", "fresh", "--json"]).output)
    assert (data["index"]["model"], data["index"]["empty"]) == (None, True)
