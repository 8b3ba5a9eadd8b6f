"""esbridge settings.

Sources, highest precedence first:

1. values passed in code or by CLI flags (``load_settings(url=...)``, ``--url``),
2. environment variables ``ESBRIDGE_*`` (nested sections with ``__``: ``ESBRIDGE_AUTH__PASSWORD``), then the
   short names in ``ENV_SHORTHANDS`` (``ESBRIDGE_FUSION_MODE`` for ``ESBRIDGE_PIPELINE__MODE``,
   ``ESBRIDGE_API_KEYS`` for ``ESBRIDGE_SERVICE__API_KEYS``),
3. the TOML file: ``--config PATH``, else ``$ESBRIDGE_CONFIG``, else ``./esbridge.toml`` if present,
4. the defaults below.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from esbridge.config.connection import AuthSettings, TlsSettings
from esbridge.config.embedding import HASH_CACHE_ENV, MODELS_DIR_ENV
from esbridge.config.embedding import EmbeddingSettings as EmbeddingSettings  # re-exported
from esbridge.config.engine_url import checked_url, credentials_out_of_url, redact_url, warn_if_sent_in_clear
from esbridge.config.environment import nearest_setting, warn_unknown_variables
from esbridge.config.fields import DEFAULT_FIELD_MAP, FieldMap
from esbridge.config.file_secrets import warn_if_readable_by_others
from esbridge.config.mapping import MappingSettings
from esbridge.config.pipeline import PipelineSettings
from esbridge.config.search import SearchSettings
from esbridge.config.service import ServiceSettings
from esbridge.errors import ConfigError
from esbridge.ids import shown_path
from esbridge.text import where_not_utf8

EngineKind = Literal["auto", "opensearch", "elasticsearch", "embedded"]

DEFAULT_CONFIG_FILE = Path("esbridge.toml")
CONFIG_FILE_ENV = "ESBRIDGE_CONFIG"

# The TOML file load_settings reads: a context variable rather than a subclass per file, so that what it returns
# is a plain Settings (its repr, equality with other Settings, pickling).
_TOML_FILE: ContextVar[Path] = ContextVar("esbridge_toml_file", default=DEFAULT_CONFIG_FILE)

# Elasticsearch/OpenSearch index naming rules: lowercase, no \ / * ? " < > | space , #, not starting with - _ +.
_INDEX_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,199}$")


class Settings(BaseSettings):
    """Everything esbridge can be configured with; see the module docstring for precedence."""

    model_config = SettingsConfigDict(
        env_prefix="ESBRIDGE_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        toml_file=DEFAULT_CONFIG_FILE,
        # A pydantic error quotes the input it refused, passwords and API keys included, in every traceback.
        hide_input_in_errors=True,
    )

    url: str | None = Field(default=None, description="engine URL; none selects the embedded engine")
    engine: EngineKind = "auto"
    index: str = Field(default="esbridge", description="index alias that esbridge reads and writes")
    data_dir: Path = Field(
        default=Path("~/.local/share/esbridge"), description="where the embedded engine keeps its database"
    )
    timeout_s: float = Field(default=10.0, gt=0, le=600)
    retries: int = Field(default=3, ge=0, le=20)
    reindex_stall_timeout_s: float = Field(
        default=3600.0,
        gt=0,
        le=86400,
        description="a server-side reindex copy that makes no progress for this long is cancelled",
    )
    auth: AuthSettings = AuthSettings()
    tls: TlsSettings = TlsSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    mapping: MappingSettings = MappingSettings()
    pipeline: PipelineSettings = PipelineSettings()
    service: ServiceSettings = ServiceSettings()
    search: SearchSettings = SearchSettings()
    routing: dict[str, list[str]] = Field(
        default_factory=dict,
        description="category -> keywords; a query naming a category's keywords is searched in that category",
    )

    @field_validator("routing")
    @classmethod
    def _routing_keywords(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for category, keywords in value.items():
            if not category.strip():
                raise ValueError("routing: a category needs a non-empty name")
            blank = [keyword for keyword in keywords if not keyword.strip()]
            if not keywords or blank:
                raise ValueError(f"routing.{category}: give it at least one keyword, none of them blank")
        return value

    fields: dict[str, FieldMap] = Field(
        default_factory=dict,
        description="attached indices (not created by esbridge): index name -> its field map; read-only by default",
    )

    @property
    def field_map(self) -> FieldMap:
        """The fields of ``index``: its ``[fields.<index>]`` table when it is attached, else esbridge's schema."""
        return self.fields.get(self.index, DEFAULT_FIELD_MAP)

    @property
    def index_embedding(self) -> EmbeddingSettings:
        """``embedding``, with the model (and dimension) an attached index's field map names, if it names one."""
        model = self.field_map.model
        if model is None or model == self.embedding.model:
            return self.embedding
        return self.embedding.model_copy(update={"model": model, "dimension": self.field_map.dimension})

    @property
    def attached(self) -> bool:
        """``index`` is an index esbridge did not create, named in ``[fields]``."""
        return self.index in self.fields

    @field_validator("url")
    @classmethod
    def _url_is_http(cls, value: str | None) -> str | None:
        return checked_url(value)

    @field_validator("index")
    @classmethod
    def _index_name(cls, value: str) -> str:
        if not _INDEX_NAME.match(value):
            raise ValueError(
                f"index {value!r} is not a valid index name: use lowercase letters, digits, '.', '_' "
                "or '-', starting with a letter or digit"
            )
        return value

    @model_validator(mode="before")
    @classmethod
    def _credentials_out_of_url(cls, data: Any) -> Any:
        return credentials_out_of_url(data)

    @model_validator(mode="after")
    def _engine_matches_auth(self) -> Settings:
        if self.engine == "elasticsearch" and self.auth.aws_sigv4:
            raise _conflict(
                "auth.aws_sigv4 is for Amazon OpenSearch Service, not Elasticsearch", "engine", "auth.aws_sigv4"
            )
        if self.engine == "opensearch" and self.auth.cloud_id:
            raise _conflict("auth.cloud_id is for Elastic Cloud, not OpenSearch", "engine", "auth.cloud_id")
        if self.engine == "embedded" and self.url:
            raise _conflict("engine 'embedded' takes no url", "engine", "url")
        if self.url and self.auth.cloud_id:
            raise _conflict(
                "url and auth.cloud_id both say which engine to reach: set only one", "url", "auth.cloud_id"
            )
        # torch runs a model's own fp32 weights: an int8 asked for there would be ignored without a word.
        for section, model in (("embedding", self.embedding), ("pipeline.rerank", self.pipeline.rerank)):
            if model.backend == "torch" and model.precision == "int8" and "precision" in model.model_fields_set:
                raise _conflict(
                    f"{section}.precision 'int8' is for backend 'onnx' (ONNX Runtime's quantized weights), and "
                    f"{section}.backend is 'torch', which runs the model's fp32 weights: set backend = 'onnx', or "
                    "remove precision",
                    f"{section}.backend",
                    f"{section}.precision",
                )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            _NamedEnv(settings_cls),
            _ShorthandEnv(settings_cls),
            TomlConfigSettingsSource(settings_cls, toml_file=_TOML_FILE.get()),
        )

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # repr and str: a URL that did not pass the url validator (model_copy, model_construct) may hold secrets.
        for name, value in super().__repr_args__():
            yield name, redact_url(value) if name == "url" and isinstance(value, str) else value

    @property
    def display_url(self) -> str:
        return redact_url(self.url) if self.url else "embedded"

    def redacted(self) -> dict[str, Any]:
        """The settings as plain data, every secret replaced by ``'**********'`` (a URL's query string too)."""
        data = self.model_dump(mode="json")
        return {**data, "url": redact_url(self.url)} if self.url else data


def _conflict(message: str, *settings: str) -> PydanticCustomError:
    """A check across settings, naming them so that the error can say where each one's value came from."""
    return PydanticCustomError("conflicting_settings", message, {"settings": settings})


_SECTIONS = ("auth", "tls", "embedding", "mapping", "pipeline", "service", "fields")

ENV_SHORTHANDS: dict[str, tuple[str, str]] = {
    "ESBRIDGE_FUSION_MODE": ("pipeline", "mode"),
    "ESBRIDGE_API_KEYS": ("service", "api_keys"),
}
"""Short environment names for settings operators change often -> (section, key)."""

ALSO_READ = frozenset({CONFIG_FILE_ENV, MODELS_DIR_ENV, HASH_CACHE_ENV, *ENV_SHORTHANDS})
"""Environment variables esbridge reads besides its settings' own: never reported as unknown."""


class _ShorthandEnv(PydanticBaseSettingsSource):
    """``ENV_SHORTHANDS``, below the full ``ESBRIDGE_SECTION__KEY`` names and above the TOML file."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for variable, (section, key) in ENV_SHORTHANDS.items():
            value = os.environ.get(variable)
            if value:
                values.setdefault(section, {})[key] = value
        return values


class _EnvVariableError(Exception):
    """An ``ESBRIDGE_*`` variable that could not be decoded; not a ValueError, so pydantic-settings does not
    rewrap it as a SettingsError that names only the top-level field."""

    def __init__(self, variable: str, reason: str) -> None:
        super().__init__(f"environment variable {variable}: {reason}")


class _NamedEnv(EnvSettingsSource):
    """The ``ESBRIDGE_*`` variables; a value that is not the JSON a table or list needs is blamed on its variable."""

    def prepare_field_value(self, field_name: str, field: FieldInfo, value: Any, value_is_complex: bool) -> Any:
        try:
            return super().prepare_field_value(field_name, field, value, value_is_complex)
        except ValueError as exc:
            variable = self._culprit(field_name, field, value) or f"{self.env_prefix}{field_name}".upper()
            # The value itself is not echoed: it may hold a secret.
            raise _EnvVariableError(variable, f"not valid JSON ({exc}); give tables and lists as JSON") from exc

    def _culprit(self, field_name: str, field: FieldInfo, value: Any) -> str | None:
        if value is not None:
            try:
                self.decode_complex_value(field_name, field, value)
            except ValueError:
                return f"{self.env_prefix}{field_name}".upper()
        for name, text in self.env_vars.items():
            try:
                self.explode_env_vars(field_name, field, {name: text})
            except ValueError:
                return name.upper()
        return None


def load_settings(config_file: Path | str | None = None, **overrides: Any) -> Settings:
    """Build settings from every source; ``overrides`` (e.g. CLI flags) win, ``None`` values are ignored.

    An explicitly named config file (argument or ``$ESBRIDGE_CONFIG``) must exist; the default
    ``./esbridge.toml`` is optional. A ``SettingsWarning`` names each ``ESBRIDGE_*`` variable no setting reads,
    a settings file holding secrets that group or others may read, and the host that credentials would reach
    over plain http (not this machine's).
    """
    warn_unknown_variables(os.environ, Settings, also_read=ALSO_READ)
    explicit = config_file if config_file is not None else os.environ.get(CONFIG_FILE_ENV) or None
    path = Path(explicit) if explicit is not None else DEFAULT_CONFIG_FILE
    if explicit is not None and not path.is_file():
        raise ConfigError(f"config file not found: {shown_path(path)}")
    warn_if_readable_by_others(path)

    given = {key: value for key, value in overrides.items() if value is not None}
    reading = _TOML_FILE.set(path)
    try:
        settings = Settings(**given)
    except ValidationError as exc:
        in_file = TomlConfigSettingsSource(Settings, toml_file=path).toml_data if path.is_file() else {}
        raise ConfigError(_describe(exc, path, given, in_file)) from exc
    except _EnvVariableError as exc:
        raise ConfigError(f"invalid settings: {exc}") from exc
    except UnicodeDecodeError as exc:  # a ValueError whose own words give an offset in the file, not a line
        raise ConfigError(f"cannot read config file {shown_path(path)}: {where_not_utf8(exc)}") from exc
    except (OSError, ValueError) as exc:  # unreadable file, malformed TOML
        raise ConfigError(f"cannot read config file {shown_path(path)}: {exc}") from exc
    finally:
        _TOML_FILE.reset(reading)
    warn_if_sent_in_clear(settings.url, settings.auth)
    return settings


def _describe(exc: ValidationError, path: Path, given: dict[str, Any], in_file: dict[str, Any]) -> str:
    """Each error with where its value came from: the config file is named only for values it holds."""
    errors = []
    for error in exc.errors():
        keys = [str(part) for part in error["loc"]]
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            nearest = nearest_setting(Settings, keys)
            message = "unknown setting" + (f"; did you mean {nearest}?" if nearest else "")
        sources = _sources(keys, given, in_file, path)
        if error["type"] == "conflicting_settings":
            sources = [_origin(name.split("."), given, in_file, path) for name in error.get("ctx", {})["settings"]]
        errors.append((f"{'.'.join(keys) or 'settings'}: {message}", sources))
    file_only = f"config file {shown_path(path)}"
    if all(sources == [file_only] for _, sources in errors):
        return f"invalid settings ({file_only}):\n  " + "\n  ".join(line for line, _ in errors)
    lines = [line + (f" ({', '.join(sources)})" if sources else "") for line, sources in errors]
    return "invalid settings:\n  " + "\n  ".join(lines)


def _origin(keys: list[str], given: dict[str, Any], in_file: dict[str, Any], path: Path) -> str:
    """``setting from source``: for one of the settings a check across several names."""
    here = keys[0] in given
    sources = ["a command-line option or load_settings argument"] if here else _sources(keys, given, in_file, path)
    return f"{'.'.join(keys)} from {' and '.join(sources) or 'its default'}"


def _sources(keys: list[str], given: dict[str, Any], in_file: dict[str, Any], path: Path) -> list[str]:
    """Where the value at ``keys`` (or, for a whole section, the values under it) came from, by precedence."""
    if not keys:
        return []  # a check across the whole settings: its message names the settings involved
    if keys[0] in given:
        return []  # passed in code or as a command-line option, which the message names well enough
    environment = {name.upper(): name for name in os.environ if name.upper().startswith("ESBRIDGE_")}
    variables = []
    for depth in range(len(keys), 0, -1):
        name = "ESBRIDGE_" + "__".join(keys[:depth]).upper()
        if name in environment:
            variables.append(environment[name])
            break
    nested = "ESBRIDGE_" + "__".join(keys).upper() + "__"
    variables += [original for upper, original in environment.items() if upper.startswith(nested)]
    whole_section = len(keys) == 1 and keys[0] in _SECTIONS
    if not variables or whole_section:
        variables += [
            name
            for name, (section, key) in ENV_SHORTHANDS.items()
            if name in environment and [section, key][: len(keys)] == keys[:2]
        ]
    sources = [f"environment variable {name}" for name in variables]
    if (not sources or whole_section) and _holds(in_file, keys):
        sources.insert(0, f"config file {shown_path(path)}")
    return sources


def _holds(data: Any, keys: list[str]) -> bool:
    for key in keys:
        if not isinstance(data, dict):
            return True  # the rest of the location names a union member, not a key
        if key not in data:
            return False
        data = data[key]
    return True
