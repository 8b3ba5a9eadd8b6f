"""The engine URL: what of it is accepted, what of it may be printed, and when it sends credentials in clear."""

from __future__ import annotations

import ipaddress
import warnings
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from esbridge.config.connection import AuthSettings
from esbridge.errors import SettingsWarning

REDACTED = "**********"
"""What stands in a printed URL for its query string or fragment."""

HOW_TO_AUTHENTICATE = (
    "give credentials as auth.username and auth.password (or https://user:password@host:port in url), "
    "or auth.api_key (Elasticsearch)"
)


def redact_url(url: str) -> str:
    """``url`` safe to print and log: without any ``user:password@`` part (everything up to the last '@', which
    also hides a password whose unencoded '/', '?' or '#' keeps urllib from reading it as one), and with a query
    string or fragment replaced by ``REDACTED``: tokens (``?token=``, ``?api_key=``) are put there too. The
    scheme, host, port and path stay readable."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        scheme, rest = "", url
    rest = rest.rpartition("@")[2]
    for mark in ("?", "#"):
        head, found, _ = rest.partition(mark)
        if found:
            rest = f"{head}{mark}{REDACTED}"
    return f"{scheme}{separator}{rest}"


def checked_url(value: str | None) -> str | None:
    """``url`` as a setting: http(s)://host[:port][/path], without credentials (``credentials_out_of_url`` has
    moved them into ``auth``), a query string or a fragment."""
    if value is None or not value.strip():
        return None
    value = value.strip().rstrip("/")
    parts = urlsplit(value)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(f"url must look like http(s)://host:port, got {redact_url(value)!r}")
    if "@" in f"{parts.path}{parts.query}{parts.fragment}":
        # A password holding '/', '?' or '#' ends the host part early, so urllib never sees it as one.
        raise ValueError(
            "url has an '@' after its host part, as when a password in it holds '/', '?' or '#': "
            "percent-encode those (%2F, %3F, %23) or set auth.password instead"
        )
    if parts.query or parts.fragment:
        # opensearch-py and elasticsearch-py build requests from the scheme, host, port and path alone: a token
        # there would never reach the engine, and every request would go out unauthenticated.
        raise ValueError(
            f"url {redact_url(value)!r} has a query string or fragment, which the engine clients never send "
            f"(a token there does not authenticate): remove it and {HOW_TO_AUTHENTICATE}"
        )
    try:
        parts.port  # noqa: B018 - urllib checks the port only when it is read
    except ValueError:
        raise ValueError(f"url has no valid port (a number in 1..65535): {redact_url(value)!r}") from None
    return value


def credentials_out_of_url(data: Any) -> Any:
    """Settings input with ``user:password@`` moved from ``url`` into ``auth``: in a URL it would be echoed in
    every error message."""
    if not isinstance(data, dict) or not isinstance(data.get("url"), str) or "@" not in data["url"]:
        return data  # (without credentials, a url urllib cannot split is left to the url validator to name)
    try:
        parts = urlsplit(data["url"].strip())
    except ValueError:  # an unclosed '[': the url validator names the field and where it was set
        return data
    if parts.username is None:
        return data
    auth = dict(data.get("auth") or {})
    if auth.get("username") or auth.get("api_key") or (parts.password is not None and auth.get("password")):
        raise ValueError("credentials are given both in the URL and in auth settings")
    auth["username"] = unquote(parts.username)
    if parts.password is not None:
        auth["password"] = unquote(parts.password)
    # The host and port as written: reading parts.port here would raise on a bad port before the
    # url validator can name the field.
    netloc = parts.netloc.rpartition("@")[2]
    return {**data, "url": urlunsplit(parts._replace(netloc=netloc)), "auth": auth}


def warn_if_sent_in_clear(url: str | None, auth: AuthSettings) -> None:
    """A ``SettingsWarning`` naming the host when a password or API key would cross the network unencrypted: plain
    http to a host that is not this machine. (SigV4 signs requests without sending its secret.)"""
    if url is None or (auth.username is None and auth.api_key is None):
        return
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme.lower() != "http" or _loopback(host):
        return
    what = "auth.username and auth.password" if auth.username is not None else "auth.api_key"
    warnings.warn(
        f"credentials ({what}) are sent to {host} over plain http, where anyone on the network between can "
        "read them: use https:// in url (tls.ca_certs names a private CA)",
        SettingsWarning,
        stacklevel=3,
    )


def _loopback(host: str) -> bool:
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
