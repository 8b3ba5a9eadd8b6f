"""Attaching to indices mapped the way people's own pipelines map them, on both engines.

Strings dynamically mapped (text with a ``.keyword`` multi-field), dates in a format of the index's own
(``dd/MM/yyyy HH:mm``, or one with an optional section recency does not read) or as epoch milliseconds, and a field
map with a misspelt field.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.embeddings.cached import CachedEmbedder
from tests.integration.engines import engine_url
from tests.integration.test_attach import _client

# (engine _id, the pipeline's own id, title, body, tags, status, days old)
NOTES = [
    ("x1", "n-1", "Solar panel kit", "Photovoltaic modules turn sunlight into electricity.", ["energy"], "live", 1),
    ("x2", "n-2", "Wind turbine", "A small turbine makes electricity from wind.", ["energy"], "draft", 2),
    ("x3", "n-3", "Home battery", "Stores solar electricity for the evening.", ["energy"], "live", 90),
    ("x4", "n-4", "Sourdough starter", "Flour and water ferment into a starter.", ["food"], "live", 1),
]


def _vector_mapping(kind: str, dimension: int) -> dict[str, Any]:
    if kind == "opensearch":
        method = {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"}
        return {"type": "knn_vector", "dimension": dimension, "method": method}
    return {"type": "dense_vector", "dims": dimension, "index": True, "similarity": "cosine"}


UNREAD = "yyyy-DDD HH:mm"
"""A format both engines read and recency does not (the day of the year)."""
DATED: dict[str, Callable[[datetime], Any]] = {
    "dd/MM/yyyy HH:mm": lambda moment: moment.strftime("%d/%m/%Y %H:%M"),
    UNREAD: lambda moment: moment.strftime("%Y-%j %H:%M"),
    "epoch_millis": lambda moment: int(moment.timestamp() * 1000),
    "epoch_second": lambda moment: int(moment.timestamp()),
    "date_optional_time": lambda moment: f"{moment.year}-{moment.month}-{moment.day}T{moment.hour}:{moment.minute}Z",
}


@pytest.fixture(params=list(DATED))
def own_mapping(
    request: pytest.FixtureRequest, engine_kind: str, embedder: CachedEmbedder
) -> Iterator[tuple[str, str]]:
    """Strings left to dynamic mapping; the date in the index's own format; a vector."""
    date_format: str = request.param
    client = _client(engine_kind)
    name = f"esbridge-test-attach-own-{uuid.uuid4().hex[:8]}"
    properties = {
        "meta": {"properties": {"updated": {"type": "date", "format": date_format}}},
        "embedding": _vector_mapping(engine_kind, embedder.dimension),
    }
    if engine_kind == "opensearch":
        client.indices.create(
            index=name, body={"settings": {"index": {"knn": True}}, "mappings": {"properties": properties}}
        )
    else:
        client.indices.create(index=name, mappings={"properties": properties})
    now = datetime.now(timezone.utc)
    vectors = embedder.embed([f"{title}\n{body}" for _, _, title, body, *_ in NOTES])
    try:
        for (engine_id, doc_id, title, body, tags, status, days), vector in zip(NOTES, vectors, strict=True):
            moment = now - timedelta(days=days)
            updated = DATED[date_format](moment)
            document = {
                "doc_id": doc_id,
                "title": title,
                "body": body,
                "tags": tags,
                "status": status,
                "meta": {"updated": updated},
                "embedding": list(vector),
            }
            if engine_kind == "opensearch":
                client.index(index=name, id=engine_id, body=document)
            else:
                client.index(index=name, id=engine_id, document=document)
        client.indices.refresh(index=name)
        yield name, date_format
    finally:
        client.indices.delete(index=name, ignore_unavailable=True)
        client.close()


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(main, args)


def _options(engine_kind: str, config: Path) -> list[str]:
    return ["--url", str(engine_url(engine_kind)), "--engine", engine_kind, "--config", str(config)]


def _inspected(engine_kind: str, name: str, tmp_path: Path) -> tuple[Path, list[str]]:
    """The settings file ``index inspect --write`` wrote for ``name``, and the options that read it."""
    config = tmp_path / "esbridge.toml"
    common = _options(engine_kind, config)
    inspected = _run(["index", "inspect", name, "--write", *common])
    assert inspected.exit_code == 0, inspected.output
    return config, common


def test_dynamically_mapped_roles_and_dates_in_the_indexs_own_format(
    engine_kind: str, own_mapping: tuple[str, str], tmp_path: Path
) -> None:
    name, date_format = own_mapping
    config = tmp_path / "esbridge.toml"
    common = _options(engine_kind, config)
    inspected = _run(["index", "inspect", name, "--write", *common])
    assert inspected.exit_code == 0, inspected.output
    assert 'name the sub-field to give one its role: id = "doc_id.keyword"' in inspected.output
    # The operator gives the keyword sub-fields their roles, as the note says.
    with config.open("a", encoding="utf-8") as settings:
        settings.write('id = "doc_id.keyword"\ntags = "tags.keyword"\nstatus = "status.keyword"\n')

    month_ago = (datetime.now(timezone.utc) - timedelta(days=30)).date().isoformat()
    filters = ["--filter", "tags=energy", "--filter", f"modified_after={month_ago}"]
    found = _run(["search", "solar electricity", "--json", "--explain", "--index", name, *filters, *common])
    assert found.exit_code == 0, found.output
    response = json.loads(found.output)
    # The draft is left out (status.keyword), the battery by its date, the starter by its tag; the id is the
    # pipeline's own (read from doc_id, which doc_id.keyword indexes), not the engine's _id.
    assert [hit["doc_id"] for hit in response["results"]] == ["n-1"]
    assert response["search_mode"] == "hybrid"
    multiplier = response["results"][0]["explain"]["recency_multiplier"]
    if date_format != UNREAD:  # index inspect wrote date_format, and recency reads the field in it
        assert multiplier == 1.2 and response["warnings"] == []
    else:  # a format with a part recency does not read leaves the result out, and says so
        assert multiplier == 1.0
        (warning,) = response["warnings"]
        assert warning.startswith(f"recency left out 1 result(s) whose meta.updated is not in its format {date_format}")


def test_a_field_map_without_the_date_format_reads_dates_in_the_mappings_and_a_wrong_one_is_refused(
    engine_kind: str, own_mapping: tuple[str, str], tmp_path: Path
) -> None:
    name, date_format = own_mapping
    config, common = _inspected(engine_kind, name, tmp_path)
    written = config.read_text(encoding="utf-8")
    recorded = f'date_format = "{date_format}"\n'
    assert recorded in written
    # A field map written before date_format existed, or by hand without it.
    config.write_text(
        written.replace(recorded, "") + 'id = "doc_id.keyword"\ntags = "tags.keyword"\nstatus = "status.keyword"\n',
        encoding="utf-8",
    )
    month_ago = (datetime.now(timezone.utc) - timedelta(days=30)).date().isoformat()
    filters = ["--filter", "tags=energy", "--filter", f"modified_after={month_ago}"]
    found = _run(["search", "solar electricity", "--json", "--explain", "--index", name, *filters, *common])
    assert found.exit_code == 0, found.output
    response = json.loads(found.output)
    (first,) = response["results"]
    assert first["doc_id"] == "n-1"
    # The mapping's format is read, as when the field map records it (before: epoch seconds read as milliseconds,
    # a day-old note dated 1970 and given no boost, without a warning).
    if date_format != UNREAD:
        assert first["explain"]["recency_multiplier"] == 1.2
        assert not any("recency" in warning for warning in response["warnings"])
    else:
        assert any(f"is not in its format {date_format}" in warning for warning in response["warnings"])

    wrong = "epoch_millis" if date_format == "epoch_second" else "epoch_second"
    with config.open("a", encoding="utf-8") as settings:
        settings.write(f'date_format = "{wrong}"\n')
    refused = _run(["search", "solar", "--index", name, *common])
    assert refused.exit_code != 0
    assert f"says date_format = '{wrong}', but the index maps meta.updated with the format '{date_format}'" in (
        refused.output
    ), refused.output


def test_a_misspelt_field_in_the_field_map_is_refused_before_any_search(
    engine_kind: str, own_mapping: tuple[str, str], tmp_path: Path
) -> None:
    name, _ = own_mapping
    config, common = _inspected(engine_kind, name, tmp_path)
    with config.open("a", encoding="utf-8") as settings:
        settings.write('tags = "tag.keyword"\n')
    refused = _run(["search", "solar", "--index", name, *common])
    assert refused.exit_code != 0
    assert "not in the index's mapping: tags = 'tag.keyword'" in refused.output, refused.output
    # The text field itself: a terms filter on it would match words, not the tags.
    config.write_text(config.read_text(encoding="utf-8").replace('"tag.keyword"', '"tags"'), encoding="utf-8")
    refused = _run(["search", "solar", "--index", name, *common])
    assert refused.exit_code != 0
    assert "tags = 'tags' (its keyword sub-field: 'tags.keyword')" in refused.output, refused.output


def _aliased(client: Any, engine_kind: str, stem: str, tag_types: tuple[str, str]) -> list[str]:
    """Two indices behind the alias ``stem``, each with one document, mapping ``tags`` as ``tag_types`` say."""
    names = [f"{stem}-a", f"{stem}-b"]
    for name, tags in zip(names, tag_types, strict=True):
        mappings = {"properties": {"body": {"type": "text"}, "tags": {"type": tags}}}
        document = {"body": f"solar power in {name[-1]}", "tags": "energy"}
        if engine_kind == "opensearch":
            client.indices.create(index=name, body={"mappings": mappings})
            client.index(index=name, id=name[-1], body=document, refresh=True)
        else:
            client.indices.create(index=name, mappings=mappings)
            client.index(index=name, id=name[-1], document=document, refresh=True)
    actions = [{"add": {"index": name, "alias": stem}} for name in names]
    if engine_kind == "opensearch":
        client.indices.update_aliases(body={"actions": actions})
    else:
        client.indices.update_aliases(actions=actions)
    return names


@pytest.mark.parametrize("tag_types", [("keyword", "text"), ("keyword", "keyword")])
def test_an_alias_over_several_indices_is_searched_when_they_map_alike_and_refused_naming_what_differs(
    engine_kind: str, tmp_path: Path, tag_types: tuple[str, str]
) -> None:
    client = _client(engine_kind)
    stem = f"esbridge-test-attach-alias-{uuid.uuid4().hex[:8]}"
    names: list[str] = []
    try:
        names = _aliased(client, engine_kind, stem, tag_types)
        config = tmp_path / "esbridge.toml"
        common = _options(engine_kind, config)
        config.write_text("", encoding="utf-8")
        inspected = _run(["index", "inspect", stem, "--write", *common])
        if tag_types[0] != tag_types[1]:
            refused = f"covers 2 indices ({', '.join(names)}) whose mappings differ: tags ({names[0]}: keyword, "
            assert inspected.exit_code != 0 and refused in inspected.output, inspected.output
            config.write_text(f'[fields."{stem}"]\ntext = {{ body = 1.0 }}\ntags = "tags"\n', encoding="utf-8")
            searched = _run(["search", "solar", "--index", stem, *common])
            assert searched.exit_code != 0 and refused in searched.output, searched.output
            return
        assert inspected.exit_code == 0, inspected.output
        assert 'tags = "tags"' in config.read_text(encoding="utf-8")
        searched = _run(["search", "solar", "--filter", "tags=energy", "--json", "--index", stem, *common])
        assert searched.exit_code == 0, searched.output
        assert sorted(hit["doc_id"] for hit in json.loads(searched.output)["results"]) == ["a", "b"]
    finally:
        for name in names:
            client.indices.delete(index=name, ignore_unavailable=True)
        client.close()


def test_byte_vectors_are_not_proposed_so_searches_have_knn_off_not_failing(engine_kind: str, tmp_path: Path) -> None:
    # Both engines refuse a float query vector on byte vectors: proposed, every kNN would fail.
    client = _client(engine_kind)
    name = f"esbridge-test-attach-bytes-{uuid.uuid4().hex[:8]}"
    document = {"body": "solar electricity for the roof", "embedding": [1, 2, 3, 4]}
    try:
        if engine_kind == "opensearch":
            method = {"name": "hnsw", "engine": "lucene", "space_type": "l2"}
            vector = {"type": "knn_vector", "dimension": 4, "data_type": "byte", "method": method}
            mappings = {"properties": {"body": {"type": "text"}, "embedding": vector}}
            client.indices.create(index=name, body={"settings": {"index": {"knn": True}}, "mappings": mappings})
            client.index(index=name, id="1", body=document, refresh=True)
        else:
            vector = {"type": "dense_vector", "dims": 4, "element_type": "byte", "similarity": "l2_norm"}
            client.indices.create(index=name, mappings={"properties": {"body": {"type": "text"}, "embedding": vector}})
            client.index(index=name, id="1", document=document, refresh=True)
        common = _options(engine_kind, tmp_path / "esbridge.toml")
        inspected = _run(["index", "inspect", name, "--write", *common])
        assert inspected.exit_code == 0, inspected.output
        assert "embedding holds byte vectors" in inspected.output
        found = _run(["search", "solar", "--json", "--index", name, *common])
        assert found.exit_code == 0, found.output
        response = json.loads(found.output)
        assert (response["search_mode"], response["warnings"]) == ("lexical-only", [])
        assert response["details"]["off"]["knn"] == "no vector field is mapped"
        assert [hit["id"] for hit in response["results"]] == ["1"]
    finally:
        client.indices.delete(index=name, ignore_unavailable=True)
        client.close()
