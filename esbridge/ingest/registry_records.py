"""The records of a registry source as read, before they become documents (``esbridge.ingest.registry``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StrictStr, field_validator, model_validator

from esbridge.ids import refused_character
from esbridge.ingest.json_lines import IdentifiedRecord, record_id
from esbridge.ingest.jsonl import check_metadata_size, named_line
from esbridge.text import is_blank

EntityType = Literal["mcp_server", "virtual_server", "a2a_agent", "skill"]


def visible_name(value: str, what: str) -> str:
    """``value``, unless it shows nothing (empty, spaces, control or format characters): ``ValueError``."""
    if is_blank(value):
        raise ValueError(f"{what} must not be blank, got {value!r}")
    return value


def id_part(value: str) -> str:
    """``value``, which makes part of a document id (a tool name, a skill id) once stripped, unless that holds a
    character ``esbridge.ids.refused_character`` refuses (its position counted in ``value`` as given):
    ``ValueError``."""
    problem = refused_character(value.strip(), offset=len(value) - len(value.lstrip()))
    if problem is not None:
        raise ValueError(f"makes a document id and {problem}")
    return value


def checked_name(what: str, *, makes_id: bool = False) -> Callable[[str | None], str | None]:
    """The validator of a name ``what`` names (``a tool name``): ``visible_name``, and ``id_part`` when it makes a
    document id; null (an optional one left out) passes."""

    def check(value: str | None) -> str | None:
        if value is None:
            return None
        shown = visible_name(value, what)
        return id_part(shown) if makes_id else shown

    return check


class _Named(BaseModel):
    """A tool or skill: its name makes a document id, so spaces at either end are stripped (``given_name``
    keeps the name as written, for the record's warning), as are those of its other ``STRIPPED`` fields."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    STRIPPED: ClassVar[tuple[str, ...]] = ("name",)

    name: StrictStr = Field(min_length=1)
    description: StrictStr | None = None
    _given: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _stripped(self) -> _Named:
        for field in self.STRIPPED:
            value = getattr(self, field)
            if value is not None and value != value.strip():
                self._given[field] = value
                setattr(self, field, value.strip())
        return self

    @property
    def given_name(self) -> str | None:
        """The name as written, when it had spaces at either end."""
        return self._given.get("name")

    @property
    def line(self) -> str:
        return named_line(self.name, self.description)

    @property
    def key(self) -> str:
        """What its document id ends with (``<server id>/tools/<key>``)."""
        return self.name

    def same_as(self, other: _Named) -> bool:
        """Whether ``other`` gives the same content (the names compared stripped)."""
        return type(self) is type(other) and self.model_dump() == other.model_dump()


class RegistryTool(_Named):
    input_schema: dict[str, Any] | None = Field(default=None, alias="inputSchema")

    # A blank name would make the id "<server id>/tools/ ".
    _visible_name = field_validator("name")(checked_name("a tool name", makes_id=True))


class RegistrySkill(_Named):
    """An A2A skill. Its ``id`` (stable across renames, unlike its name) makes its document id when it has one, so
    it is stripped of spaces at either end as a name is (``given_id`` keeps it as written)."""

    STRIPPED = ("name", "id")

    id: StrictStr | None = None
    tags: list[StrictStr] = []

    _visible_name = field_validator("name")(checked_name("a skill name"))
    _visible_id = field_validator("id")(checked_name("a skill id", makes_id=True))

    @model_validator(mode="after")
    def _name_as_id(self) -> RegistrySkill:
        if self.id is None:
            try:
                id_part(self.given_name or self.name)
            except ValueError as exc:
                raise ValueError(f"its name, standing in for the missing 'id', {exc}") from None
        return self

    @property
    def given_id(self) -> str | None:
        """The id as written, when it had spaces at either end."""
        return self._given.get("id")

    @property
    def key(self) -> str:
        """What its document id ends with (``<agent id>/skills/<key>``): its id, else its name."""
        return self.id if self.id is not None else self.name


_ABSENT_WHEN_NULL = frozenset({"is_enabled", "isEnabled"})
"""Fields whose null counts as absent (their default), as it does for tags, tools, skills and metadata."""


class RegistryRecord(IdentifiedRecord):
    """One line of a registry source; see ``esbridge.ingest.registry``."""

    model_config = ConfigDict(extra="allow")
    ID_FIELDS = ("id", "path")
    CLEANED_FIELDS = ("tags",)

    id: str
    entity_type: EntityType
    name: StrictStr = Field(min_length=1)
    path: StrictStr | None = None
    description: StrictStr | None = None
    tags: list[StrictStr] = Field(default_factory=list)
    is_enabled: bool = True
    status: StrictStr | None = None
    category: StrictStr | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tools: list[RegistryTool] = Field(default_factory=list)
    skills: list[RegistrySkill] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        given = {key: value for key, value in data.items() if not (key in _ABSENT_WHEN_NULL and value is None)}
        if "is_enabled" not in given and "isEnabled" in given:  # as the gateway's A2A agent cards spell it
            given["is_enabled"] = given.pop("isEnabled")
        if given.get("id") is None and isinstance(given.get("path"), str):
            try:  # stored stripped as the path too, so the record's path and id agree
                given["id"] = given["path"] = record_id(given["path"])
            except ValueError as exc:
                raise ValueError(f"field 'path', standing in for the missing 'id': {exc}") from None
        if given.get("id") is None and given.get("path") is None:
            raise ValueError("field 'id' is missing, and there is no 'path' to stand in for it")
        if given.get("entity_type") is None:
            given["entity_type"] = "a2a_agent" if given.get("skills") else "mcp_server"
        for key in ("tags", "tools", "skills"):
            if given.get(key) is None:
                given[key] = []
        if isinstance(given["tags"], str):
            given["tags"] = [tag.strip() for tag in given["tags"].split(",")]
        if given.get("metadata") is None:
            given["metadata"] = {}
        return given

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, value: Any) -> str:
        return record_id(value)

    _visible_name = field_validator("name")(checked_name("a record name"))

    @model_validator(mode="after")
    def _metadata_size(self) -> RegistryRecord:
        # Stored on every chunk of the record's document, as a JSONL record's is, so capped as it is.
        check_metadata_size(self.id, self.model_extra or {}, self.metadata)
        return self

    @property
    def lifecycle_status(self) -> str | None:
        return self.status if self.is_enabled else "disabled"
