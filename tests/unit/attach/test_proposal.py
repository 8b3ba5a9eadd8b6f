"""``index inspect``'s proposal from real-shaped mappings, and writing it into a settings file."""

from __future__ import annotations

from pathlib import Path

import pytest

from esbridge import errors
from esbridge.attach.guard import check_dimension, check_fields, refuse_write
from esbridge.attach.proposal import propose, toml_table
from esbridge.attach.settings_file import write_field_map
from esbridge.config import load_settings
from esbridge.config.fields import FieldMap

# As OpenSearch 3 returns it for a catalogue written by someone else's pipeline.
OPENSEARCH_CATALOGUE = {
    "properties": {
        "name": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
        "body": {"type": "text"},
        "sku": {"type": "keyword"},
        "labels": {"type": "keyword"},
        "state": {"type": "keyword"},
        "meta": {"properties": {"updated": {"type": "date"}, "created": {"type": "date"}}},
        "price": {"type": "float"},
        "embedding": {
            "type": "knn_vector",
            "dimension": 384,
            "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"},
        },
    }
}
# As Elasticsearch 9 returns a docs index.
ELASTICSEARCH_DOCS = {
    "properties": {
        "title": {"type": "text"},
        "content": {"type": "text"},
        "section": {"type": "keyword"},
        "paper_id": {"type": "keyword"},
        "published": {"type": "date"},
        "vec": {"type": "dense_vector", "dims": 8, "index": True, "similarity": "cosine"},
    }
}


def test_a_catalogue_mapping_gets_its_text_vector_date_and_keyword_roles() -> None:
    proposal = propose(OPENSEARCH_CATALOGUE)
    fields = proposal.fields
    assert fields is not None
    assert fields.text == {"name": 2.0, "body": 1.0}
    assert (fields.vector, fields.dimension, fields.space, fields.vector_engine) == (
        "embedding",
        384,
        "cosinesimil",
        "lucene",
    )
    assert (fields.id, fields.title, fields.tags, fields.status) == ("sku", "name", "labels", "state")
    assert (fields.date, fields.created) == ("meta.updated", "meta.created")
    assert fields.content == ["body"]
    assert proposal.keywords == ["sku", "labels", "state"]  # name.raw is a multi-field, not a field


def test_an_elasticsearch_docs_mapping_gets_dense_vector_dims_and_similarity() -> None:
    fields = propose(ELASTICSEARCH_DOCS).fields
    assert fields is not None
    assert fields.text == {"title": 2.0, "content": 1.0}
    assert (fields.vector, fields.dimension, fields.space) == ("vec", 8, "cosine")
    assert (fields.category, fields.date, fields.links) == ("section", "published", None)
    assert fields.id == "paper_id"


def test_text_fields_with_another_analyzer_are_scored_separately() -> None:
    mapping = {
        "properties": {
            "title": {"type": "text", "analyzer": "english"},
            "content": {"type": "text", "analyzer": "english"},
            "code": {"type": "text", "analyzer": "whitespace"},
        }
    }
    proposal = propose(mapping)
    assert proposal.fields is not None
    assert (proposal.fields.text, proposal.fields.exact) == ({"title": 2.0, "content": 1.0}, {"code": 1.0})
    assert any("code: another analyzer" in note for note in proposal.notes)


def test_a_semantic_text_field_is_searched_with_the_engines_embedding() -> None:
    fields = propose({"properties": {"title": {"type": "text"}, "content": {"type": "semantic_text"}}}).fields
    assert fields is not None
    assert (fields.vector, fields.semantic_text, fields.query_embedding) == ("content", True, "engine")


def test_a_mapping_without_text_fields_proposes_nothing_and_says_why() -> None:
    proposal = propose({"properties": {"v": {"type": "knn_vector", "dimension": 3}}})
    assert proposal.fields is None
    assert "no text field" in proposal.notes[0]


def test_an_esbridge_index_is_recognised() -> None:
    proposal = propose({"_meta": {"esbridge_schema": 1}, "properties": {"body": {"type": "text"}}})
    assert proposal.esbridge_schema


def test_the_written_table_reads_back_as_the_same_field_map(tmp_path: Path) -> None:
    fields = propose(OPENSEARCH_CATALOGUE).fields
    assert fields is not None
    path = tmp_path / "esbridge.toml"
    path.write_text('url = "http://127.0.0.1:9200"\n\n[pipeline]\nfusion = "rrf"\n', encoding="utf-8")
    write_field_map(path, "products", fields)
    settings = load_settings(path, index="products")
    assert settings.field_map == fields
    assert settings.pipeline.fusion == "rrf" and settings.url == "http://127.0.0.1:9200"
    assert "[fields.products]" in toml_table("products", fields)


def test_an_existing_table_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "esbridge.toml"
    original = "[fields.products]\ntext = { body = 1.0 }\n"
    path.write_text(original, encoding="utf-8")
    with pytest.raises(errors.ConfigError, match=r"already has a \[fields\.products\] table"):
        write_field_map(path, "products", FieldMap(text={"name": 1.0}))
    assert path.read_text(encoding="utf-8") == original


def test_a_write_into_an_attached_index_is_refused_naming_the_flag() -> None:
    with pytest.raises(errors.ReadOnlyIndex, match="--write-attached"):
        refuse_write("products", attached=True, allowed=False, what="ingest into")
    refuse_write("products", attached=True, allowed=True, what="ingest into")
    refuse_write("notes", attached=False, allowed=False, what="ingest into")


def test_the_query_dimension_is_checked_against_the_mapping() -> None:
    fields = FieldMap(text={"body": 1.0}, vector="embedding", dimension=384)
    check_dimension("products", fields, OPENSEARCH_CATALOGUE, 384)
    with pytest.raises(errors.DimensionMismatch, match=r"makes 768-dimensional vectors.*384-dimensional"):
        check_dimension("products", fields, OPENSEARCH_CATALOGUE, 768)
    with pytest.raises(errors.DimensionMismatch, match="says embedding has dimension 8"):
        check_dimension("products", fields.model_copy(update={"dimension": 8}), OPENSEARCH_CATALOGUE, 384)
    with pytest.raises(errors.ConfigError, match="not in the index's mapping"):
        check_dimension("products", fields.model_copy(update={"vector": "vec"}), OPENSEARCH_CATALOGUE, 384)
    with pytest.raises(errors.ConfigError, match="is a float field, not a vector field"):
        check_dimension("products", fields.model_copy(update={"vector": "price"}), OPENSEARCH_CATALOGUE, 384)


def test_a_date_field_in_a_format_recency_cannot_read_is_named_in_a_note() -> None:
    own = {"type": "date", "format": "EEEE, dd MMMM yyyy HH:mm"}
    proposal = propose({"properties": {"body": {"type": "text"}, "updated": own}})
    assert "updated has format EEEE, dd MMMM yyyy HH:mm: recency reads dates in ISO 8601" in " ".join(proposal.notes)
    default = {"type": "date", "format": "strict_date_optional_time||epoch_millis"}
    assert not any(
        "format" in note for note in propose({"properties": {"body": {"type": "text"}, "updated": default}}).notes
    )


@pytest.mark.parametrize(
    ("vector", "said"),
    [
        ({"type": "dense_vector", "dims": 8, "index": False}, "is not indexed for kNN (index: false)"),
        ({"type": "dense_vector", "dims": 8, "element_type": "byte"}, "holds byte vectors (element_type byte)"),
        (
            {"type": "knn_vector", "dimension": 8, "data_type": "BINARY"},
            "holds binary vectors (data_type binary)",
        ),  # as OpenSearch says it
    ],
)
def test_a_vector_field_float_queries_cannot_search_is_not_proposed(vector: dict[str, object], said: str) -> None:
    # Proposed, every search would fail its kNN on the engine; left out, kNN is off and details.off says so.
    proposal = propose({"properties": {"body": {"type": "text"}, "emb": vector}})
    assert proposal.fields is not None and proposal.fields.vector is None
    assert f"emb {said}: esbridge's float query vectors cannot search it, so kNN is off" in proposal.notes


def test_fields_the_map_names_are_checked_against_the_mapping() -> None:
    # The engines match nothing on an unmapped field: a misspelt field would score, filter or exclude silently.
    fields = FieldMap(text={"body": 1.0, "name": 2.0}, date="meta.updated", tags="labels", id="name.raw")
    check_fields("products", fields, OPENSEARCH_CATALOGUE)  # a multi-field (name.raw) is a field of the mapping
    misspelt = fields.model_copy(update={"text": {"bdy": 1.0, "name": 2.0}, "tags": "lables", "status": "meta"})
    with pytest.raises(errors.ConfigError) as refused:
        check_fields("products", misspelt, OPENSEARCH_CATALOGUE)
    assert "not in the index's mapping: text 'bdy', status = 'meta', tags = 'lables'" in str(refused.value)


def test_a_role_matched_by_whole_value_on_a_text_field_is_refused_naming_its_keyword_sub_field() -> None:
    # tags=Solar Energy as a terms filter on analyzed text matches no document: refused, not silently empty.
    fields = FieldMap(text={"body": 1.0}, tags="name", status="body")
    with pytest.raises(errors.ConfigError) as refused:
        check_fields("products", fields, OPENSEARCH_CATALOGUE)
    message = str(refused.value)
    assert "status = 'body', tags = 'name' (its keyword sub-field: 'name.raw')" in message
    check_fields("products", fields.model_copy(update={"tags": "name.raw", "status": "state"}), OPENSEARCH_CATALOGUE)


_WRITE_UNDER_A_SIZE_LIMIT = """
import resource, signal, sys
from pathlib import Path
from esbridge.attach.settings_file import write_field_map
from esbridge.config.fields import FieldMap
from esbridge.errors import ConfigError
path = Path(sys.argv[1])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size + 10, resource.RLIM_INFINITY))
try:
    write_field_map(path, "products", FieldMap(text={"name": 2.0, "body": 1.0}))
except ConfigError as exc:
    print(exc)
"""


def test_a_write_that_fails_midway_leaves_the_settings_file_whole_and_its_mode_kept(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    path = tmp_path / "esbridge.toml"
    before = 'url = "http://elastic:secret@127.0.0.1:9201"\n\n[pipeline]\nfusion = "rrf"\n'
    path.write_text(before, encoding="utf-8")
    path.chmod(0o600)
    done = subprocess.run(
        [sys.executable, "-c", _WRITE_UNDER_A_SIZE_LIMIT, str(path)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )
    assert "it is unchanged" in done.stdout, done.stdout + done.stderr
    assert path.read_text(encoding="utf-8") == before
    assert [file.name for file in tmp_path.iterdir()] == ["esbridge.toml"]
    write_field_map(path, "products", FieldMap(text={"name": 2.0, "body": 1.0}))
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_settings(path, index="products").field_map == FieldMap(text={"name": 2.0, "body": 1.0})


def test_nested_fields_are_named_as_not_searched() -> None:
    # A nested object's text is invisible to esbridge's queries: the proposal says so instead of leaving it out.
    reviews = {"type": "nested", "properties": {"text": {"type": "text"}, "stars": {"type": "integer"}}}
    proposal = propose({"properties": {"name": {"type": "text"}, "reviews": reviews}})
    assert proposal.fields is not None and proposal.fields.text == {"name": 2.0}
    assert any("reviews is nested" in note and "reviews.text" in note for note in proposal.notes), proposal.notes
    only_nested = propose({"properties": {"reviews": reviews}})
    assert only_nested.fields is None
    assert any("reviews is nested" in note for note in only_nested.notes), only_nested.notes
    assert only_nested.notes[0].startswith("no text field"), "index inspect --write names the first note as the reason"


def test_text_fields_named_for_a_keyword_role_are_named_in_a_note() -> None:
    # A dynamically mapped index: every string is text with a .keyword sub-field, so no id, tags or status role.
    dynamic = {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}}
    mapping = {"properties": dict.fromkeys(("title", "body", "doc_id", "tags", "status", "related"), dynamic)}
    proposal = propose(mapping)
    assert proposal.fields is not None and proposal.fields.tags is None
    (note,) = [note for note in proposal.notes if "keyword sub-field" in note]
    assert note.startswith("doc_id (id), related (links), status (status), tags (tags): text"), note
    assert note.endswith('(name the sub-field to give one its role: id = "doc_id.keyword")'), note


@pytest.mark.parametrize(
    ("own", "unread"),
    [
        ("epoch_second", None),
        ("date_optional_time||epoch_second", None),
        ("epoch_millis", None),
        ("yyyy-MM-dd HH:mm:ss||epoch_millis", None),
        ("dd/MM/yyyy HH:mm", None),
        ("yyyy/MM/dd||epoch_millis", None),
        ("EEE, dd MMM yyyy||epoch_millis", None),
        ("yyyy-MM-dd[ HH:mm]||dd.MM.yyyy", None),
        ("EEEE, dd MMMM yyyy||epoch_millis", "EEEE, dd MMMM yyyy"),
        ("yyyy-DDD||dd.MM.yyyy", "yyyy-DDD"),
    ],
)
def test_a_date_field_in_its_own_format_is_read_in_it(own: str, unread: str | None) -> None:
    proposal = propose({"properties": {"body": {"type": "text"}, "updated": {"type": "date", "format": own}}})
    assert proposal.fields is not None and proposal.fields.date_format == own
    said = [note for note in proposal.notes if "format" in note]
    note = (
        f"updated has format {own}: recency reads dates in ISO 8601, epoch milliseconds or seconds and Java "
        f"patterns of the letters y, u, M (MMM: Jan), d, E (Mon), H, m, s, S, X and Z, with optional sections [...] "
        f"only, so it gives documents dated as {unread} no "
        "multiplier (date filters work)"
    )
    assert said == ([] if unread is None else [note])
    default = propose({"properties": {"body": {"type": "text"}, "updated": {"type": "date"}}})
    assert default.fields is not None and default.fields.date_format is None


@pytest.mark.parametrize("parent", ["server_id", "parent_id", "parent", "agent_id", "meta.serverId"])
def test_the_field_naming_a_tools_server_or_a_skills_agent_is_proposed_as_parent(parent: str) -> None:
    keyword = {"type": "keyword"}
    properties: dict[str, object] = {"name": {"type": "text"}, "tool_id": keyword, "kind": keyword}
    if parent.startswith("meta."):
        properties["meta"] = {"properties": {parent.removeprefix("meta."): keyword}}
    else:
        properties[parent] = keyword
    proposal = propose({"properties": properties})
    assert proposal.fields is not None
    assert (proposal.fields.parent, proposal.fields.id, proposal.fields.type) == (parent, "tool_id", "kind")
    assert not [note for note in proposal.notes if "not used" in note or "parent" in note], proposal.notes
    assert f'parent = "{parent}"' in toml_table("catalog", proposal.fields)


def test_a_parent_field_is_not_also_the_document_id_and_a_note_says_how_to_make_it_one() -> None:
    # server_id alone once became the id: every tool of a server would have been one document.
    proposal = propose({"properties": {"name": {"type": "text"}, "server_id": {"type": "keyword"}}})
    assert proposal.fields is not None
    assert (proposal.fields.parent, proposal.fields.id) == ("server_id", None)
    assert (
        "server_id is proposed as parent (the server or agent a tool or skill belongs to; grouped answers read it), "
        'not as the document id: if it names each document, set id = "server_id" and remove parent'
    ) in proposal.notes
    for name in ("owner", "server"):  # a plain server is often a host name, not a tool's server
        unrelated = propose({"properties": {"body": {"type": "text"}, name: {"type": "keyword"}}})
        assert unrelated.fields is not None and unrelated.fields.parent is None, name
