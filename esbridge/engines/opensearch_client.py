"""How esbridge reaches OpenSearch through opensearch-py: the client's options from esbridge settings, and
opensearch-py's exceptions translated into esbridge errors."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from opensearchpy import exceptions as ox

from esbridge import errors
from esbridge.config.settings import Settings
from esbridge.engines.credentials import basic_auth_headers
from esbridge.engines.errors import connection_reason, from_response, tls_reason


def client_options(settings: Settings, *, async_: bool = False) -> dict[str, Any]:
    """Keyword arguments for ``OpenSearch``/``AsyncOpenSearch`` from esbridge settings."""
    if settings.url is None:
        raise errors.ConfigError("the OpenSearch adapter needs an engine URL (ESBRIDGE_URL or --url)")
    auth = settings.auth
    if auth.api_key is not None:
        raise errors.ConfigError("auth.api_key is an Elasticsearch scheme; use basic auth or aws_sigv4 with OpenSearch")
    if auth.cloud_id is not None:
        raise errors.ConfigError("auth.cloud_id is for Elastic Cloud, not OpenSearch")
    options: dict[str, Any] = {
        "hosts": [settings.url],
        "timeout": settings.timeout_s,
        "max_retries": settings.retries,
        "retry_on_timeout": True,
    }
    if urlsplit(settings.url).scheme == "https":  # urlsplit lowercases the scheme: HTTPS:// is https too
        options.update(use_ssl=True, verify_certs=settings.tls.verify, ssl_show_warn=True)
        for name in ("ca_certs", "client_cert", "client_key"):
            path = getattr(settings.tls, name)
            if path is not None:
                options[name] = str(path)
    if auth.username is not None:
        password = auth.password.get_secret_value() if auth.password else ""
        options["headers"] = basic_auth_headers(auth.username, password)
    elif auth.aws_sigv4:
        options["http_auth"] = _sigv4_auth(settings, async_=async_)
    if async_:
        from opensearchpy import AsyncHttpConnection

        options["connection_class"] = AsyncHttpConnection
    return options


def _sigv4_auth(settings: Settings, *, async_: bool) -> Any:
    try:
        import boto3
    except ImportError as exc:
        raise errors.DependencyMissing("boto3", extra="aws", purpose="AWS SigV4 signing") from exc
    credentials = boto3.Session().get_credentials()
    if credentials is None:
        raise errors.ConfigError("auth.aws_sigv4 is on but boto3 found no AWS credentials")
    region, service = settings.auth.aws_region or "", settings.auth.aws_service
    if async_:
        from opensearchpy import AWSV4SignerAsyncAuth

        return AWSV4SignerAsyncAuth(credentials, region, service)
    from opensearchpy import Urllib3AWSV4SignerAuth

    return Urllib3AWSV4SignerAuth(credentials, region, service)


def translate(
    exc: Exception, *, url: str, operation: str, index: str | None, timeout: str = "no answer in time"
) -> errors.EngineError:
    """The esbridge error for an opensearch-py exception."""
    if isinstance(exc, ox.ConnectionTimeout):
        return errors.EngineTimeout(timeout, url=url, operation=operation, index=index)
    # The async client reports a failed handshake as a ConnectionError around aiohttp's error, an ssl.SSLError.
    if isinstance(exc, ox.SSLError) or (isinstance(exc, ox.ConnectionError) and isinstance(exc.info, ssl.SSLError)):
        return errors.TLSError(tls_reason(str(exc.info or exc)), url=url, operation=operation, index=index)
    if isinstance(exc, ox.ConnectionError):
        return errors.EngineUnavailable(
            f"cannot connect ({connection_reason(str(exc.info or exc))})", url=url, operation=operation, index=index
        )
    if isinstance(exc, ox.TransportError):
        status = exc.status_code if isinstance(exc.status_code, int) else None
        return from_response(status, _error_body(exc), url=url, operation=operation, index=index)
    return errors.EngineResponseError(f"{type(exc).__name__}: {exc}", url=url, operation=operation, index=index)


def _error_body(exc: ox.TransportError) -> Any:
    """The answer's body: parsed in ``info`` by the sync client; the async client leaves the raw text in ``error``."""
    if exc.info is not None:
        return exc.info
    raw = exc.error
    if isinstance(raw, str) and raw.lstrip().startswith("{"):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


class Translating:
    _url: str
    _timeout = "no answer in time"

    @contextmanager
    def _call(self, operation: str, index: str | None = None) -> Iterator[None]:
        try:
            yield
        except ox.OpenSearchException as exc:
            raise translate(exc, url=self._url, operation=operation, index=index, timeout=self._timeout) from exc
