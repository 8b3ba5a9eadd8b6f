"""API keys: where they come from and how a request's key is checked.

Keys come from ``service.api_keys`` (``ESBRIDGE_API_KEYS=key1,key2``) and ``service.api_keys_file``
(one per line, ``#`` comments). A request presents one as ``Authorization: Bearer <key>`` or
``X-API-Key: <key>``. Writes always need a key, so a service with no keys configured refuses every
write (403) rather than being open; reads need one when ``require_key_for_reads`` is set. Keys are
compared as SHA-256 digests with ``hmac.compare_digest`` against every configured key, so neither the
time taken nor an early exit tells a caller how close a guess was. Keys never appear in logs or answers.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import stat
from pathlib import Path

from esbridge.config.settings import ServiceSettings
from esbridge.errors import ConfigError

log = logging.getLogger("esbridge.service")

# Group or others who can read the file can use its keys; who can write it can add their own.
_SHARED_ACCESS = stat.S_IRGRP | stat.S_IWGRP | stat.S_IROTH | stat.S_IWOTH


class KeyRing:
    def __init__(self, keys: list[str]) -> None:
        self._digests = [_digest(key) for key in keys]

    @classmethod
    def from_settings(cls, service: ServiceSettings) -> KeyRing:
        keys = [key.get_secret_value().strip() for key in service.api_keys]
        if service.api_keys_file is not None:
            keys.extend(read_keys_file(service.api_keys_file))
        ring = cls(keys)
        if service.require_key_for_reads and not ring.configured:
            raise ConfigError("service.require_key_for_reads is set but no API keys are configured")
        return ring

    @property
    def configured(self) -> bool:
        return bool(self._digests)

    def accepts(self, key: str | None) -> bool:
        if key is None or not self._digests:
            return False
        given = _digest(key)
        matched = False
        for digest in self._digests:
            matched |= hmac.compare_digest(given, digest)
        return matched

    def __repr__(self) -> str:
        return f"KeyRing({len(self._digests)} keys)"


def read_keys_file(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the API keys file {path}: {exc}") from exc
    _warn_if_shared(path)
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _warn_if_shared(path: Path) -> None:
    """A warning (never a refusal to start) when the keys file's mode lets group or others at it (POSIX)."""
    if os.name != "posix":
        return
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return
    if mode & _SHARED_ACCESS:
        log.warning(
            "API keys file %s is open to group or others (mode %04o); restrict it with: chmod 600 %s", path, mode, path
        )


def presented_key(authorization: str | None, x_api_key: str | None) -> str | None:
    """The key a request presents: the bearer token, else the X-API-Key header."""
    if authorization:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    if x_api_key and x_api_key.strip():
        return x_api_key.strip()
    return None


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
