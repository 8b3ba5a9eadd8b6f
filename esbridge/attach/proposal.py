"""A field map proposed from an existing index's mapping (``esbridge index inspect``): a pure function.

Fields are sorted into roles by their mapped type (text, keyword, date, vector) and, among fields of one
type, by name (``updated_at`` is the recency date, ``tags`` the tags). What cannot be told from the mapping
(which of two vector fields, the model that made the vectors) is left for the operator to say, and the
proposal lists the fields it did not use.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from esbridge.config.fields import FieldMap
from esbridge.date_patterns import READ_LETTERS
from esbridge.engines.dialect import vector_dimension
from esbridge.mappings.schema import SCHEMA_META_KEY
from esbridge.query.engine_dates import DEFAULT_FORMAT, unread_parts

TEXT_TYPES = frozenset({"text", "match_only_text"})
KEYWORD_TYPES = frozenset({"keyword", "constant_keyword", "wildcard"})
DATE_TYPES = frozenset({"date", "date_nanos"})
VECTOR_TYPES = frozenset({"knn_vector", "dense_vector"})
UNSEARCHED_TEXT_TYPES = frozenset({"search_as_you_type", "flattened", "completion", "annotated_text"})
"""Types holding words that esbridge's BM25 query does not search."""

# Name patterns per role, most telling first; the first keyword (or date, or text) field matching wins.
_ROLES: dict[str, tuple[str, ...]] = {
    "id": (r"^(doc_?id|document_?id|id|uid|uuid|sku|external_?id)$", r"(^|_)id$"),
    "title": (r"^(title|name|heading|subject|headline)$", r"(title|name)$"),
    "path": (r"^(path|url|uri|slug|file_?path)$",),
    "date": (r"(updated|modified|changed|last_?edit)", r"^(date|timestamp|@timestamp|time)$", r"(published|created)"),
    "created": (r"(created|published)",),
    "type": (r"^(type|kind|entity_?type|doc_?type|content_?type)$",),
    "status": (r"^(status|state|lifecycle)$",),
    "category": (r"^(category|categories|section|department)$",),
    "tags": (r"^(tags?|labels?|keywords|topics)$",),
    "links": (r"^(links|related|references|see_?also|linked_?ids)$",),
    "parent": (r"^(parent|parent_?id|server_?id|agent_?id)$",),
}
RUNTIME_UNREAD = "esbridge reads a role's values from the stored documents, which do not hold a runtime field's values"
_DEFAULT_SPACES = {"knn_vector": "l2", "dense_vector": "cosine"}
"""The space a vector mapping that names none has: OpenSearch's k-NN default, Elasticsearch's for float vectors."""
# Text fields a match in weighs more than in long text: a name or title says what the document is about.
_TITLE_BOOST = 2.0


@dataclass(frozen=True)
class VectorInfo:
    name: str
    dimension: int | None
    space: str | None
    engine: str | None


@dataclass(frozen=True)
class Proposal:
    """What ``index inspect`` found in a mapping, and the field map it proposes."""

    fields: FieldMap | None
    """None when the mapping has no text field for BM25"""
    text: list[str]
    keywords: list[str]
    dates: list[str]
    vectors: list[VectorInfo]
    esbridge_schema: bool
    """the index was created by esbridge: it needs no field map"""
    notes: list[str] = field(default_factory=list)


def flatten(properties: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(dotted name, definition) of every field, objects followed into; multi-fields are not fields of their own."""
    for name, definition in properties.items():
        if not isinstance(definition, Mapping):
            continue
        path = f"{prefix}{name}"
        inner = definition.get("properties")
        if isinstance(inner, Mapping) and definition.get("type") in (None, "object"):
            yield from flatten(inner, f"{path}.")
        else:
            yield path, definition


def vector_info(name: str, definition: Mapping[str, Any]) -> VectorInfo:
    """Dimension, similarity and engine of a ``knn_vector`` (OpenSearch) or ``dense_vector`` (Elasticsearch)."""
    method_value = definition.get("method")
    method: Mapping[str, Any] = method_value if isinstance(method_value, Mapping) else {}
    space = definition.get("similarity") or method.get("space_type") or definition.get("space_type")
    # As each engine's mapping documentation gives the default, which get_mapping leaves out; a knn_vector made
    # from a trained model (model_id) has the model's space, which its mapping does not give.
    if not space and "model_id" not in definition:
        space = _DEFAULT_SPACES.get(str(definition.get("type")))
    engine = method.get("engine")
    return VectorInfo(
        name,
        vector_dimension(definition),
        str(space) if space else None,
        str(engine) if engine else None,
    )


def split_by_analyzer(text: list[str], analyzers: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """The text fields BM25 scores together (those sharing the most common search analyzer) and the rest.

    Fields scored as one (Elasticsearch's ``combined_fields``, BM25F) must share a search analyzer, or the
    engine refuses the query; the others are scored apart, best field wins (the field map's ``exact``).
    """
    counts: dict[str, int] = {}
    for name in text:
        counts[analyzers[name]] = counts.get(analyzers[name], 0) + 1
    common = max(counts, key=lambda analyzer: (counts[analyzer], analyzer == "standard")) if counts else ""
    return [name for name in text if analyzers[name] == common], [name for name in text if analyzers[name] != common]


# parent before id: a tool's server_id names its server, not the tool, though id's names end in _id too.
_KEYWORD_ROLES = ("parent", "id", "path", "type", "status", "category", "tags", "links")


def _unsearchable(definition: Mapping[str, Any]) -> str | None:
    """Why kNN with a float query vector cannot search this vector field, or None when it can."""
    if definition.get("index") is False:
        return "is not indexed for kNN (index: false)"
    kind = str(definition.get("element_type") or definition.get("data_type") or "").lower()  # OpenSearch: BYTE
    if kind in ("byte", "bit", "binary"):
        return f"holds {kind} vectors ({'element_type' if 'element_type' in definition else 'data_type'} {kind})"
    return None


def _keyword_subfield(fields: Mapping[str, Any]) -> str | None:
    """The name of a keyword multi-field among ``fields`` (``keyword`` under dynamic mapping), if any."""
    return next(
        (name for name, sub in fields.items() if isinstance(sub, Mapping) and sub.get("type") in KEYWORD_TYPES), None
    )


def _keyword_role(name: str) -> str | None:
    return next((role for role in _KEYWORD_ROLES if _pick(role, [name])), None)


def _pick(role: str, candidates: list[str]) -> str | None:
    for pattern in _ROLES[role]:
        for name in candidates:
            if re.search(pattern, name.rsplit(".", 1)[-1], re.IGNORECASE):
                return name
    return None


def _pick_exact(role: str, candidates: list[str]) -> str | None:
    """The first top-level field of ``candidates`` the role's first pattern names exactly (``title``, not
    ``file_name``, nor a log's ``host.name``)."""
    pattern = _ROLES[role][0]
    return next((name for name in candidates if re.search(pattern, name, re.IGNORECASE)), None)


def propose(mapping: Mapping[str, Any]) -> Proposal:
    """The field map for an index with ``mapping`` (``{"properties": ...}``, as the engine returns it)."""
    properties = mapping.get("properties") or {}
    meta = mapping.get("_meta") or {}
    by_type: dict[str, list[str]] = {"text": [], "keyword": [], "date": []}
    vectors: list[VectorInfo] = []
    semantic: list[str] = []
    nested: list[str] = []
    analyzers: dict[str, str] = {}
    """Elasticsearch semantic_text fields: the engine embeds documents and queries with their endpoint"""
    subfields: dict[str, Mapping[str, Any]] = {}
    date_formats: dict[str, str] = {}
    unsearchable: dict[str, str] = {}
    kinds: dict[str, str] = {}
    copied: dict[str, list[str]] = {}
    """copy_to targets, with the fields copied into them"""
    other_text: list[str] = []
    for name, definition in flatten(properties):
        kind = definition.get("type")
        subfields[name] = definition.get("fields") or {}
        targets = definition.get("copy_to") or []
        for target in [targets] if isinstance(targets, str) else targets:
            copied.setdefault(str(target), []).append(name)
        if kind in UNSEARCHED_TEXT_TYPES:
            other_text.append(f"{name} ({kind})")
        if kind in TEXT_TYPES:
            by_type["text"].append(name)
            kinds[name] = str(kind)
            analyzers[name] = str(definition.get("search_analyzer") or definition.get("analyzer") or "standard")
        elif kind in KEYWORD_TYPES:
            by_type["keyword"].append(name)
        elif kind in DATE_TYPES:
            by_type["date"].append(name)
            formats = str(definition.get("format") or "")
            if formats and formats != DEFAULT_FORMAT:
                date_formats[name] = formats
        elif kind in VECTOR_TYPES:
            vectors.append(vector_info(name, definition))
            if problem := _unsearchable(definition):
                unsearchable[name] = problem
        elif kind == "semantic_text":
            semantic.append(name)
        elif kind == "nested":
            inner = [f"{name}.{path}" for path, _ in flatten(definition.get("properties") or {})]
            nested.append(
                f"{name} is nested: its fields ({', '.join(inner) or 'none'}) are not searched (esbridge's "
                "queries do not reach into nested documents)"
            )
    text, keywords, dates = by_type["text"], by_type["keyword"], by_type["date"]
    notes: list[str] = []
    is_esbridge = isinstance(meta, Mapping) and SCHEMA_META_KEY in meta
    if is_esbridge:
        notes.append("this index was created by esbridge: search it as it is, without a field map")
    if not text:
        notes.append("no text field: BM25 has nothing to search, so no field map can be proposed")
        return Proposal(None, text, keywords, dates, vectors, is_esbridge, notes + nested)
    title = _pick("title", text)
    roles: dict[str, str | None] = {}
    keyword_title = None if title else _pick_exact("title", keywords)
    if keyword_title:
        notes.append(
            f"{keyword_title} is a keyword field: proposed as the title results show, but BM25 does not search it "
            "(a keyword matches whole values only); give it a text sub-field to have its words searched"
        )
    for keyword_role in _KEYWORD_ROLES:
        roles[keyword_role] = _pick(keyword_role, [name for name in keywords if name not in roles.values()])
    if roles["parent"] and not roles["id"] and _pick("id", [roles["parent"]]):
        notes.append(
            f"{roles['parent']} is proposed as parent (the server or agent a tool or skill belongs to; grouped "
            f'answers read it), not as the document id: if it names each document, set id = "{roles["parent"]}" '
            "and remove parent"
        )
    roles["title"] = title or keyword_title
    roles["date"] = _pick("date", dates) or (dates[0] if dates else None)
    created = _pick("created", dates)
    roles["created"] = created if created != roles["date"] else None
    for name, problem in unsearchable.items():
        notes.append(f"{name} {problem}: esbridge's float query vectors cannot search it, so kNN is off")
    usable = [info for info in vectors if info.name not in unsearchable]
    vector = usable[0] if usable else None
    if len(usable) > 1:
        others = ", ".join(info.name for info in usable[1:])
        notes.append(f"several vector fields: {vector.name if vector else ''} proposed, not {others}; change vector")
    if vector is not None and vector.dimension is None:
        notes.append(f"the mapping gives no dimension for {vector.name}; set dimension")
    if vector is not None and vector.space is None:
        notes.append(f"the mapping gives no space for {vector.name} (a trained model's field); set space")
    engine_side: dict[str, Any] = {}
    if vector is None and semantic:
        engine_side = {"vector": semantic[0], "semantic_text": True, "query_embedding": "engine"}
        notes.append(f"{semantic[0]} is semantic_text: Elasticsearch embeds the queries with its inference endpoint")
    elif vector is not None:
        engine_side = {
            "vector": vector.name,
            "dimension": vector.dimension,
            "space": vector.space,
            "vector_engine": vector.engine,
        }
    grouped, separate = split_by_analyzer(text, analyzers)
    if separate:
        notes.append(f"{', '.join(separate)}: another analyzer than {', '.join(grouped)}; scored separately (exact)")
    boosts = {name: _TITLE_BOOST if name == title else 1.0 for name in grouped}
    exact = {name: _TITLE_BOOST if name == title else 1.0 for name in separate}
    used = {value for value in roles.values() if value}
    unused = [name for name in keywords + dates if name not in used]
    if unused:
        notes.append(f"not used (filter or sort on them in your own queries): {', '.join(unused)}")
    named = {name: role for name in text if _keyword_subfield(subfields[name]) and (role := _keyword_role(name))}
    if named:
        fields_roles = ", ".join(f"{name} ({role})" for name, role in sorted(named.items()))
        first, role = sorted(named.items())[0]
        example = f'{role} = "{first}.{_keyword_subfield(subfields[first])}"'
        notes.append(
            f"{fields_roles}: text with a keyword sub-field, searched as text; the roles are read from keyword "
            f"fields only (name the sub-field to give one its role: {example})"
        )
    flat = [name for name in text if kinds[name] == "match_only_text"]
    if flat:
        notes.append(
            f"{', '.join(flat)}: match_only_text keeps no term frequencies or lengths, so BM25 scores every match "
            "in it alike (a constant); the other fields and kNN tell its matches apart"
        )
    analyzed = [
        f"{name}.{sub} ({spec.get('analyzer') or 'standard'})"
        for name in text
        for sub, spec in subfields[name].items()
        if isinstance(spec, Mapping) and spec.get("type") in TEXT_TYPES
    ]
    if analyzed:
        notes.append(
            f"text sub-fields not searched: {', '.join(analyzed)}; to search one, name it in exact (it has its own "
            "analyzer, so it is scored apart)"
        )
    date_format = date_formats.get(roles["date"] or "")
    unread = unread_parts(date_format)
    if unread:
        notes.append(
            f"{roles['date']} has format {date_format}: recency reads dates in ISO 8601, epoch milliseconds or "
            f"seconds and Java patterns of the letters {READ_LETTERS} only, so it gives documents dated as "
            f"{' or '.join(unread)} no multiplier (date filters work)"
        )
    notes.extend(nested)
    notes.extend(_unread_notes(text, copied, other_text, mapping.get("runtime")))
    fields = FieldMap.model_validate(
        {
            "text": boosts,
            "exact": exact,
            "content": [name for name in text if name != title and name not in copied],
            **engine_side,
            **roles,
            "date_format": date_format,
        }
    )
    return Proposal(fields, text, keywords, dates, vectors, is_esbridge, notes)


def _unread_notes(text: list[str], copied: Mapping[str, list[str]], other_text: list[str], runtime: Any) -> list[str]:
    """Notes on fields the proposal searches but cannot read back, or leaves out although they hold words or values."""
    notes = [
        f"{target} is filled by copy_to from {', '.join(sources)}: searched, but it is not in the stored documents, "
        "so it is not read as content"
        for target, sources in copied.items()
        if target in text
    ]
    if other_text:
        notes.append(f"not searched: {', '.join(other_text)}; BM25 searches text and match_only_text fields only")
    if isinstance(runtime, Mapping) and runtime:
        kinds = ", ".join(
            f"{name} ({spec.get('type')})" if isinstance(spec, Mapping) else name for name, spec in runtime.items()
        )
        notes.append(f"runtime fields are not used: {kinds}; {RUNTIME_UNREAD}")
    return notes


def toml_table(index: str, fields: FieldMap) -> str:
    """``fields`` as the ``[fields.<index>]`` table of a settings file (values left unset are left out)."""
    lines = [f"[fields.{_key(index)}]"]
    for name, value in fields.model_dump(exclude_defaults=True).items():
        lines.append(f"{name} = {_value(value)}")
    return "\n".join(lines) + "\n"


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else _string(name)


def _string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_string(str(key))} = {_value(item)}" for key, item in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")
