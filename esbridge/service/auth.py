"""API keys: where they come from, what each may do, and how a request's key is checked.

Keys come from ``service.api_keys`` (``ESBRIDGE_API_KEYS=key1,key2``) and ``service.api_keys_file``: one
key per line, optionally followed by its scopes (``<key> read`` or ``<key> read,write``), ``#`` comments.
A key without scopes may read and write; ``admin`` may do everything, including reloading the keys.
A request presents one as ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``.

Writes always need a key with the ``write`` scope, so a service with no keys configured refuses every
write (403) rather than being open; reads need one with ``read`` when ``ServiceSettings.reads_need_key``.
Keys are compared as SHA-256 digests with ``hmac.compare_digest`` against every configured key, so
neither the time taken nor an early exit tells a caller how close a guess was. Keys never appear in
logs or answers; a keys file that group or others may read or write is refused.

The keys file is read again when its modification time, size or inode changes (checked at most every
``service.keys_check_interval_s`` when a key is checked) and on SIGHUP. A file that went missing drops
its keys (fail closed); one that cannot be used (loose mode, a bad line) keeps the previous keys and
logs why.
"""

from __future__ import annotations

import difflib
import hashlib
import hmac
import logging
import os
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from esbridge.config.service import ServiceSettings
from esbridge.errors import ConfigError
from esbridge.ids import shown_path
from esbridge.line_ends import split_lines
from esbridge.text import where_not_utf8

log = logging.getLogger("esbridge.service")

SCOPES = ("read", "write", "admin")
# A key of fewer characters can be guessed one request at a time (60 a second per address at the default rate).
MIN_KEY_CHARS = 16
UNSCOPED = frozenset({"read", "write"})

# Group or others who can read the file can use its keys; who can write it can add their own.
_SHARED_ACCESS = stat.S_IRGRP | stat.S_IWGRP | stat.S_IROTH | stat.S_IWOTH


@dataclass(frozen=True)
class Grant:
    """An accepted key as the service remembers it: its digest (the bucket of its rate limit) and scopes."""

    digest: bytes
    scopes: frozenset[str]
    short: bool = False  # fewer than MIN_KEY_CHARS characters

    def allows(self, scope: str) -> bool:
        return scope in self.scopes or "admin" in self.scopes

    @property
    def id(self) -> str:
        """A short fingerprint for rate-limit buckets; not a key, not reversible."""
        return self.digest.hex()[:16]


class KeyRing:
    def __init__(
        self,
        keys: Iterable[str | tuple[str, frozenset[str]]],
        *,
        file: Path | None = None,
        check_interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fixed = [_grant(key) if isinstance(key, str) else _grant(*key) for key in keys]
        self._file = file
        self._file_grants: list[Grant] = []
        self._signature: tuple[int, int, int] | None = None
        self._check_interval_s = check_interval_s
        self._clock = clock
        self._checked_at = clock()
        self._reload_requested = False
        if file is not None:
            self._file_grants = [_grant(key, scopes) for key, scopes in read_keys_file(file)]
            self._signature = _signature(file)

    @classmethod
    def from_settings(cls, service: ServiceSettings) -> KeyRing:
        keys = [key.get_secret_value().strip() for key in service.api_keys]
        ring = cls(keys, file=service.api_keys_file, check_interval_s=service.keys_check_interval_s)
        if service.reads_need_key and not ring.configured:
            why = (
                "service.require_key_for_reads is set"
                if service.require_key_for_reads
                else f"the service listens on {service.host}, not on loopback, so searches and /metrics need a key"
            )
            raise ConfigError(
                f"{why} but no API keys are configured: set ESBRIDGE_API_KEYS or service.api_keys_file "
                "(or service.open_reads = true when the network in front of it is trusted)"
            )
        return ring

    @property
    def configured(self) -> bool:
        return bool(self._fixed or self._file_grants)

    def short_keys_warning(self) -> str | None:
        """What to log at start-up when some keys are short enough to guess (never the keys)."""
        short = sum(grant.short for grant in (*self._fixed, *self._file_grants))
        if not short:
            return None
        return (
            f"{short} of {len(self)} API key(s) have fewer than {MIN_KEY_CHARS} characters, few enough to be guessed "
            "one request at a time; make each with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )

    def __len__(self) -> int:
        return len(self._fixed) + len(self._file_grants)

    def grant(self, key: str | None) -> Grant | None:
        """The grant of ``key``, or None when it is not (or no longer) accepted."""
        self._refresh_if_due()
        if key is None:
            return None
        given = _digest(key)
        found: Grant | None = None
        for grant in (*self._fixed, *self._file_grants):
            if hmac.compare_digest(given, grant.digest):
                found = grant
        return found

    def accepts(self, key: str | None) -> bool:
        return self.grant(key) is not None

    def request_reload(self) -> None:
        """Read the keys file again before the next key check (safe to call from a signal handler)."""
        self._reload_requested = True

    def reload(self) -> int:
        """Read the keys file now; how many keys are accepted afterwards. Raises ConfigError if it cannot be used
        (the previous keys stay); a file that is gone drops its keys."""
        self._reload_requested = False
        self._checked_at = self._clock()
        if self._file is None:
            return len(self)
        if not self._file.exists():
            if self._file_grants:
                log.error("API keys file %s is gone: its keys are no longer accepted", shown_path(self._file))
            self._file_grants, self._signature = [], None
            return len(self)
        grants = [_grant(key, scopes) for key, scopes in read_keys_file(self._file)]
        self._file_grants, self._signature = grants, _signature(self._file)
        log.info("API keys file %s read: %d keys", shown_path(self._file), len(grants))
        return len(self)

    def _refresh_if_due(self) -> None:
        if self._file is None:
            return
        due = self._reload_requested or self._clock() - self._checked_at >= self._check_interval_s
        if not due:
            return
        if not self._reload_requested:
            self._checked_at = self._clock()
            if _signature(self._file) == self._signature:
                return
        try:
            self.reload()
        except ConfigError as exc:
            log.error("%s; the previous keys stay in use", exc)

    def __repr__(self) -> str:
        return f"KeyRing({len(self)} keys)"


def read_keys_file(path: Path) -> list[tuple[str, frozenset[str]]]:
    """The keys of ``path`` with their scopes; ConfigError (naming the line, never a key) for a bad file."""
    _refuse_if_shared(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte order mark (Windows editors) is no part of a key
    except UnicodeDecodeError as exc:  # its own words give an offset in the file, not a line
        raise ConfigError(f"cannot read the API keys file {shown_path(path)}: {where_not_utf8(exc)}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read the API keys file {shown_path(path)}: {exc}") from exc
    keys: list[tuple[str, frozenset[str]]] = []
    for number, line in enumerate(split_lines(text), start=1):
        words = [] if line.lstrip().startswith("#") else line.split()
        if not words:
            continue
        comment = next((at for at, word in enumerate(words) if at and word.startswith("#")), len(words))
        words = words[:comment]
        key, named = words[0], [scope for word in words[1:] for scope in word.split(",") if scope]
        if not printable_ascii(key):
            raise ConfigError(
                f"API keys file {shown_path(path)}, line {number}: the key is not printable ASCII, so no HTTP client "
                "could send it as it is written here (headers carry bytes, read as Latin-1)"
            )
        unknown = sorted(set(named) - set(SCOPES))
        if unknown:
            raise ConfigError(
                f"API keys file {shown_path(path)}, line {number}: unknown scope(s) {', '.join(map(_shown, unknown))} "
                f"(scopes are {', '.join(SCOPES)}, comma-separated after the key)"
            )
        keys.append((key, frozenset(named) or UNSCOPED))
    return keys


def printable_ascii(key: str) -> bool:
    """Whether ``key`` can be sent in a header and read back as written: printable ASCII only."""
    return key.isascii() and key.isprintable()


def _shown(word: str) -> str:
    """An unknown scope as an error may show it: a misspelt scope as it is; any other word is not shown, since it
    may be a key (two keys on a line, or a label before the key)."""
    if difflib.get_close_matches(word, SCOPES, n=1, cutoff=0.6):
        return repr(word)
    return f"<a word of {len(word)} characters, not shown since it may be a key>"


def _refuse_if_shared(path: Path) -> None:
    """A keys file whose mode lets group or others at it is refused (POSIX)."""
    if os.name != "posix":
        return
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError as exc:
        raise ConfigError(f"cannot read the API keys file {shown_path(path)}: {exc}") from exc
    if mode & _SHARED_ACCESS:
        shown = shown_path(path)
        raise ConfigError(
            f"API keys file {shown} is open to group or others (mode {mode:04o}), so its keys cannot be trusted; "
            f"restrict it with: chmod 600 {shown}"
        )


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size, found.st_ino


def presented_key(authorization: str | None, x_api_key: str | None) -> str | None:
    """The key a request presents: the bearer token, else the X-API-Key header."""
    if authorization:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    if x_api_key and x_api_key.strip():
        return x_api_key.strip()
    return None


def _grant(key: str, scopes: frozenset[str] = UNSCOPED) -> Grant:
    return Grant(_digest(key), scopes, short=len(key) < MIN_KEY_CHARS)


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
