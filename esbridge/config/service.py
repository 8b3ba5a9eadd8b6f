"""The ``[service]`` settings: the HTTP sidecar's address, keys, limits, freshness and logs."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode

from esbridge.ids import shown_path


def host_name(entry: str) -> str:
    """An ``allowed_hosts`` entry as the Host check compares it: lower case, no trailing dot, an IPv6 address without
    brackets; ``*.example.com`` stands for every name under ``example.com``. Anything else is refused, saying why."""
    name = entry.strip().lower().removesuffix(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    problem = None
    if not name or name == "*" or name == "*.":
        problem = "names no host (a Host check that lets every name through guards against nothing)"
    elif "://" in name or "/" in name:
        problem = "is a URL: give the host name alone (search.example.com)"
    elif ":" in name and not _is_ip(name):
        problem = "has a port: give the host name alone (the check ignores the port)"
    elif not _is_ip(name):
        labels = name.removeprefix("*.").split(".")
        if "*" in name.removeprefix("*.") or not all(_LABEL.fullmatch(label) for label in labels):
            problem = "is not a host name (letters, digits and hyphens in dot-separated labels, or *.domain)"
    if problem is not None:
        raise ValueError(f"service.allowed_hosts entry {entry!r} {problem}")
    return name


_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)  # secrets stay out of errors


def _comma_list(value: Any) -> Any:
    """A comma-separated string (as environment variables give lists) or a JSON list, as a list."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        import json

        try:
            return json.loads(text)
        except ValueError as exc:
            raise ValueError(f"not a JSON list: {exc}") from None
    return [part.strip() for part in text.split(",") if part.strip()]


class ServiceSettings(_Section):
    """The HTTP sidecar (``esbridge serve``): where it listens, who may call it, and its limits."""

    host: str = Field(default="127.0.0.1", description="listen address; loopback unless told otherwise")
    port: int = Field(default=8088, ge=0, le=65535)
    api_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list, description="accepted API keys; env ESBRIDGE_API_KEYS=key1,key2"
    )
    api_keys_file: Path | None = Field(default=None, description="a file with one API key per line (# comments)")
    require_key_for_reads: bool = Field(default=False, description="searches and metrics need a key on loopback too")
    open_reads: bool = Field(
        default=False, description="searches and metrics need no key even on a non-loopback host (trusted network)"
    )
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="host names a request's Host header may name besides loopback ones (the DNS rebinding check)",
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list, description="none: CORS off")
    max_body_bytes: int = Field(default=1_048_576, ge=1024, le=256 * 1024 * 1024)
    max_query_chars: int = Field(default=1024, ge=1, le=4096)
    max_top_n: int = Field(default=50, ge=1, le=1000)
    max_documents: int = Field(default=100, ge=1, le=10_000, description="documents a POST /v1/documents writes")
    request_timeout_s: float = Field(default=30.0, gt=0, le=600, description="after this a request answers 504")
    retry_after_s: int = Field(default=5, ge=1, le=3600, description="Retry-After of 503 answers")
    shutdown_timeout_s: float = Field(default=30.0, gt=0, le=600, description="grace for in-flight requests")
    source: str = Field(default="api", min_length=1, description="the source label of documents written over HTTP")
    max_concurrency: int = Field(default=4, ge=1, le=1024, description="requests to /v1/* processed at once")
    max_queue: int = Field(default=8, ge=0, le=100_000, description="requests waiting for a slot; more get 429")
    queue_timeout_s: float = Field(default=2.0, gt=0, le=600, description="longest wait for a slot before 429")
    max_connections_per_client: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="connections open at once per client address; none: 4 x (max_concurrency + max_queue)",
    )
    rate_limit_per_s: float = Field(default=60.0, ge=0, le=1e6, description="per key (or client) token bucket; 0: off")
    rate_limit_burst: int = Field(default=120, ge=1, le=1_000_000, description="the bucket's size")
    refresh: Literal["false", "wait_for", "true"] = Field(
        default="wait_for", description="when an answered write is visible to searches (the engine's refresh policy)"
    )
    wait_for_max_s: float = Field(default=5.0, gt=0, le=120, description="wait_for forces a refresh after this")
    write_cancel_grace_s: float = Field(default=2.0, ge=0, le=60, description="a timed-out write's time to stop")
    keys_check_interval_s: float = Field(default=1.0, ge=0, le=3600, description="keys file modification checks")
    access_log: bool = Field(default=True, description="one JSON line per request on the esbridge.access logger")
    log_queries: bool = Field(default=False, description="access log lines carry the search query text")

    @field_validator("api_keys", "cors_origins", "allowed_hosts", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return _comma_list(value)

    @field_validator("allowed_hosts")
    @classmethod
    def _host_names(cls, value: list[str]) -> list[str]:
        return [host_name(entry) for entry in value]

    @field_validator("api_keys")
    @classmethod
    def _no_blank_keys(cls, value: list[SecretStr]) -> list[SecretStr]:
        if any(not key.get_secret_value().strip() for key in value):
            raise ValueError("API keys must not be blank")
        if any(not (text := key.get_secret_value().strip()).isascii() or not text.isprintable() for key in value):
            raise ValueError(
                "API keys must be printable ASCII: headers carry bytes, read as Latin-1, so no HTTP client could "
                "send another key as it is written"
            )
        return value

    @field_validator("refresh", mode="before")
    @classmethod
    def _refresh_word(cls, value: Any) -> Any:
        # TOML gives `refresh = true` as a boolean; the engines' parameter is the word.
        return str(value).lower() if isinstance(value, bool) else value

    @field_validator("api_keys_file")
    @classmethod
    def _home(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @model_validator(mode="after")
    def _keys_file_exists(self) -> ServiceSettings:
        if self.api_keys_file is not None and not self.api_keys_file.is_file():
            problem = "is a folder, not a file" if self.api_keys_file.is_dir() else "not found"
            raise ValueError(f"service.api_keys_file {problem}: {shown_path(self.api_keys_file)}")
        return self

    @property
    def loopback(self) -> bool:
        """Whether ``host`` is a loopback address (only this machine can connect)."""
        if self.host.lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host.strip("[]")).is_loopback
        except ValueError:
            return False

    @property
    def connections_per_client(self) -> int:
        """``max_connections_per_client``, else as many as bodies may arrive at once per client: 4 x (the requests
        the service runs and queues)."""
        if self.max_connections_per_client is not None:
            return self.max_connections_per_client
        return 4 * (self.max_concurrency + self.max_queue)

    @property
    def checks_host(self) -> bool:
        """Whether a request's ``Host`` must name loopback or an allowed host (``esbridge.service.hosts``): where
        reads need no key on loopback, and wherever ``allowed_hosts`` lists names."""
        return bool(self.allowed_hosts) or (self.loopback and not self.reads_need_key)

    @property
    def reads_need_key(self) -> bool:
        """Searches and metrics need a key: when asked to, and on any non-loopback host unless opened."""
        return self.require_key_for_reads or not (self.loopback or self.open_reads)
