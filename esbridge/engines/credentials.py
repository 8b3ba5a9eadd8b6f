"""The Authorization header of basic auth, built by esbridge for both engine clients."""

from __future__ import annotations

import base64


def basic_auth_headers(username: str, password: str) -> dict[str, str]:
    """The header that carries ``username:password``, in UTF-8 (RFC 7617's charset, and what the security layers of
    OpenSearch and Elasticsearch decode). Neither client library sends that itself: opensearch-py encodes its
    ``http_auth`` as Latin-1 and elasticsearch-py its ``basic_auth`` as ASCII, so a password with another character
    failed with a bare UnicodeEncodeError or was sent in bytes the server reads as another password; and
    opensearch-py's async connection hands ``http_auth`` to aiohttp's deprecated BasicAuth."""
    token = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
    return {"authorization": f"Basic {token}"}
