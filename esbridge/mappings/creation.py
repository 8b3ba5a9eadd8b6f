"""Creating an index once, even when the client library sends the request twice.

opensearch-py and elasticsearch-py send a request again when its answer does not come within ``timeout_s``
(``retry_on_timeout``); a busy cluster can take longer than that to create an index. The engine made the index on
the first request and refuses the second as a duplicate. The request carries a token in the index's ``_meta`` so
that an index this request made is told apart from one another client made.
"""

from __future__ import annotations

import contextlib
import secrets
from typing import Any

from esbridge import errors
from esbridge.engines.base import Engine

CREATION_KEY = "esbridge_creation"
"""The ``_meta`` key of a create request's token, there until the index is known to be this request's."""


def create_once(engine: Engine, name: str, body: dict[str, Any]) -> None:
    """Create ``name`` with ``body``. One that existed already is not this request's (``IndexAlreadyExists``)
    unless it carries this request's token. When the engine's answer is lost (Ctrl-C, a time-out) it may have made
    the index all the same, so it is deleted rather than left behind empty."""
    token = secrets.token_hex(8)
    mappings = body.get("mappings") or {}
    meta = dict(mappings.get("_meta") or {})
    marked = {**body, "mappings": {**mappings, "_meta": {**meta, CREATION_KEY: token}}}
    try:
        engine.create_index(name, marked)
    except errors.IndexAlreadyExists:
        if not _created_with(engine, name, token):
            raise
    except BaseException:
        with contextlib.suppress(errors.EsbridgeError):
            engine.delete_index(name, missing_ok=True)
        raise
    with contextlib.suppress(errors.EsbridgeError):  # the token left behind does no harm
        engine.put_meta(name, meta)


def _created_with(engine: Engine, name: str, token: str) -> bool:
    try:
        return (engine.get_mapping(name).get("_meta") or {}).get(CREATION_KEY) == token
    except errors.EsbridgeError:
        return False
