"""Index templates on OpenSearch and Elasticsearch: the template a data stream's or an alias's rollovers take
their next index's mapping from, read and written whole (``IndexTemplates`` in ``esbridge.engines.base``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from esbridge import errors

# Read with the template but refused by a put of it (Elasticsearch reports when a template was made and changed).
_READ_ONLY = ("created_date", "created_date_millis", "modified_date", "modified_date_millis")


@dataclass(frozen=True)
class AliasTemplate:
    """The composable index template an alias's next index (``next_index``, rolled over from ``write_index``)
    would be made from: ``template``, or None with ``refusal`` saying why none can carry a model record."""

    write_index: str
    next_index: str
    template: str | None
    refusal: str | None = None
    matched: bool = True
    """whether any template matches the next index's name (so a rollover makes it from one)"""


def next_index_name(write_index: str) -> str:
    """The name a rollover gives the index after ``write_index``: both engines count up a name ending in
    ``-<digits>`` (six digits at least)."""
    found = re.fullmatch(r"(.*)-(\d+)", write_index)
    return f"{found.group(1)}-{int(found.group(2)) + 1:06d}" if found else write_index


def _matches(pattern: str, name: str) -> bool:
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), name) is not None


def _matching(answer: Mapping[str, Any], key: str, name: str) -> list[tuple[str, Mapping[str, Any]]]:
    found = []
    for entry in answer.get(key) or []:
        body = entry.get("index_template") or {}
        if any(_matches(pattern, name) for pattern in body.get("index_patterns") or []):
            found.append((str(entry.get("name")), body))
    return found


def choose_alias_template(
    alias: str, write_index: str, composable: Mapping[str, Any], legacy: Mapping[str, Any]
) -> AliasTemplate:
    """Which template of ``composable`` (a ``GET _index_template`` answer) the engine makes ``alias``'s next index
    from: the one of highest priority whose ``index_patterns`` match its name. A template matching every index
    (``*``) or legacy templates (``GET _template``: merged by order) are named in ``refusal``, not chosen."""
    name = next_index_name(write_index)
    looked = f"the next index of alias {alias} ({name}, rolled over from write index {write_index})"
    matching = sorted(_matching(composable, "index_templates", name), key=lambda m: -int(m[1].get("priority") or 0))
    if not matching:
        older = {key: body for key, body in legacy.items() if any(_matches(p, name) for p in body["index_patterns"])}
        refusal = f"no composable index template (GET _index_template) matches {looked}"
        if older:
            refusal += (
                f"; legacy templates (GET _template) do: {', '.join(sorted(older))}, which the engine merges by "
                "order; record-model records only in a composable template: make one for these indices, or put the "
                "record into those templates' mappings._meta.esbridge_model yourself"
            )
        return AliasTemplate(write_index, name, None, refusal, matched=bool(older))
    (first, body), *others = matching
    priority = int(body.get("priority") or 0)
    tied = [other for other, rest in others if int(rest.get("priority") or 0) == priority]
    if tied:
        return AliasTemplate(
            write_index,
            name,
            None,
            f"index templates {', '.join([first, *tied])} all match {looked} with priority {priority}: which one "
            "makes it is ambiguous",
        )
    patterns = [str(pattern) for pattern in body.get("index_patterns") or []]
    if any(set(pattern) <= {"*"} for pattern in patterns):
        return AliasTemplate(
            write_index,
            name,
            None,
            f"index template {first} makes {looked}, but it matches every index ({', '.join(patterns)}): a model "
            "recorded there would be claimed for every new index; make a template for these indices "
            f'(index_patterns ["{alias}-*"], a higher priority)',
        )
    return AliasTemplate(write_index, name, first)


def engine_agrees(chosen: AliasTemplate, simulated: Mapping[str, Any]) -> AliasTemplate:
    """``chosen`` when a ``POST _index_template/_simulate_index/<next index>`` answer agrees that its template
    makes the next index (it lists the other matching templates as ``overlapping``, not the one used); else a
    refusal saying the engine chose otherwise."""
    overlapping = sorted(str(entry.get("name")) for entry in simulated.get("overlapping") or [])
    if simulated.get("template") and chosen.template not in overlapping:
        return chosen
    return AliasTemplate(
        chosen.write_index,
        chosen.next_index,
        None,
        f"index template {chosen.template} is the one of highest priority whose index_patterns match "
        f"{chosen.next_index}, the next index of the alias, but POST _index_template/_simulate_index/"
        f"{chosen.next_index} does not make it from that template (overlapping: {', '.join(overlapping) or 'none'})",
    )


def alias_write_index(answer: Mapping[str, Any], alias: str) -> str | None:
    """The index a ``GET _alias/<alias>`` answer names as ``alias``'s write index (the one flagged
    ``is_write_index``, or the only one when none is flagged) when a rollover would name the next one by counting
    up (``<prefix>-<digits>``, as ILM, ISM and a rollover without a new name need); else None."""
    flags = {
        index: ((entry.get("aliases") or {}).get(alias) or {}).get("is_write_index") for index, entry in answer.items()
    }
    flagged = [index for index, flag in flags.items() if flag]
    written = flagged[0] if flagged else next(iter(flags)) if len(flags) == 1 and None in flags.values() else None
    return written if written is not None and re.fullmatch(r".*-\d+", written) else None


def legacy_patterns(answer: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A ``GET _template`` answer's templates by name, each with its ``index_patterns``."""
    return {name: {"index_patterns": list(body.get("index_patterns") or [])} for name, body in answer.items()}


def is_data_stream(name: str, indices: Iterable[str]) -> bool:
    """Whether ``indices``, those behind ``name``, are a data stream's backing indices, which both engines name
    ``.ds-<stream>-...``."""
    indices = list(indices)
    return bool(indices) and all(index.startswith(f".ds-{name}-") for index in indices)


def stream_template(answer: Mapping[str, Any], name: str) -> str | None:
    """The ``template`` a ``GET _data_stream/<name>`` answer names for stream ``name``: the composable template
    that matches the stream's name now, which its next rollover takes the new backing index's mapping from."""
    for stream in answer.get("data_streams") or []:
        if stream.get("name") == name:
            template = stream.get("template")
            return str(template) if template else None
    return None


def template_body(answer: Mapping[str, Any], name: str, *, url: str) -> dict[str, Any]:
    """The body of template ``name`` from a ``GET _index_template/<name>`` answer, as a put of it takes it."""
    for entry in answer.get("index_templates") or []:
        if entry.get("name") == name:
            body = dict(entry.get("index_template") or {})
            return {key: value for key, value in body.items() if key not in _READ_ONLY}
    raise errors.IndexNotFound(
        f"no index template named {name!r}", url=url, operation="read index template", index=name
    )


def not_a_stream(exc: errors.EngineError) -> bool:
    """Whether ``GET _data_stream/<name>`` failed because ``name`` is no data stream (404), or the engine has no
    data streams (a build without the module: "no handler found")."""
    return exc.status == 404 or "no handler found" in str(exc)


class _Templates:
    """``IndexTemplates`` through either client; they differ in how an answer comes (``_answer``)."""

    _url: str
    _client: Any

    def _call(self, operation: str, index: str | None = None) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _answer(self, answer: Any) -> Mapping[str, Any]:
        raise NotImplementedError

    def alias_targets(self, alias: str) -> list[str]:
        raise NotImplementedError

    def data_stream_template(self, name: str) -> str | None:
        if self.alias_targets(name):  # asked about an alias, OpenSearch answers 400, not an empty list
            return None
        try:
            with self._call("read data stream", name):
                answer = self._answer(self._client.indices.get_data_stream(name=name))
        except errors.EngineError as exc:
            if not_a_stream(exc):
                return None
            raise
        return stream_template(answer, name)

    def alias_template(self, alias: str) -> AliasTemplate | None:
        if not self.alias_targets(alias):
            return None
        with self._call("read alias", alias):
            written = alias_write_index(self._answer(self._client.indices.get_alias(name=alias)), alias)
        if written is None:
            return None
        with self._call("read index templates"):
            composable = self._answer(self._client.indices.get_index_template())
            legacy = self._answer(self._client.indices.get_template())
        chosen = choose_alias_template(alias, written, composable, legacy_patterns(legacy))
        if chosen.template is None:
            return chosen
        with self._call("simulate index", chosen.next_index):
            simulated = self._answer(self._client.indices.simulate_index_template(name=chosen.next_index))
        return engine_agrees(chosen, simulated)

    def get_index_template(self, name: str) -> dict[str, Any]:
        with self._call("read index template", name):
            answer = self._answer(self._client.indices.get_index_template(name=name))
        return template_body(answer, name, url=self._url)

    def put_index_template(self, name: str, body: Mapping[str, Any]) -> None:
        with self._call("update index template", name):
            self._client.indices.put_index_template(name=name, body=dict(body))

    def resolved_template_mappings(self, name: str) -> dict[str, Any]:
        with self._call("simulate index template", name):
            answer = self._answer(self._client.indices.simulate_template(name=name))
        return dict((answer.get("template") or {}).get("mappings") or {})


class OpenSearchTemplates(_Templates):
    """``IndexTemplates`` through opensearch-py, which answers with the body itself."""

    def _answer(self, answer: Any) -> Mapping[str, Any]:
        return dict(answer)


class ElasticsearchTemplates(_Templates):
    """``IndexTemplates`` through elasticsearch-py, which wraps the body in an ``ObjectApiResponse``."""

    def _answer(self, answer: Any) -> Mapping[str, Any]:
        return dict(answer.body)
