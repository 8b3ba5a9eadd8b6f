"""How the sidecar reads a document id from a request path (``DELETE /v1/documents/{doc_id}``): the whole rest of
the path, as given when a document holds exactly that id, else trimmed as an upsert of that id stores it.

A delete takes ids an upsert refuses or trims (``esbridge.ids.refused_character``): documents written
before the refusal, or restored by ``esbridge import``, hold them, and must stay removable. Answers show such an
id escaped (``esbridge.ids.shown_escaped``)."""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from starlette.convertors import PathConvertor, register_url_convertor


class DocumentId(PathConvertor):
    """The rest of the path, line breaks included: an upsert takes an id holding one (``%0A`` in the path), and
    Starlette's ``path`` (``.*``) stops at it, so the delete would answer 404 for an unknown route."""

    regex = r"[\s\S]*"


register_url_convertor("document_id", DocumentId())


_DOCUMENTS_PATH = b"/v1/documents/"


def path_ids(raw_path: bytes | None, doc_id: str) -> list[str]:
    """The ids a delete's path may name, the first found to be deleted, or ``ValueError``: the id as given
    (``esbridge import`` restores ids with spaces at either end, and older versions stored them), then trimmed as an
    upsert of it stores it.

    ``doc_id`` is the path as the server decoded it, where bytes that are not UTF-8 became U+FFFD, so
    ``raw_path`` is checked: such an id is refused rather than looked up as another one."""
    if raw_path is not None:
        decoded = unquote_to_bytes(raw_path)
        try:
            decoded.decode("utf-8")
        except UnicodeDecodeError as exc:
            start = decoded.find(_DOCUMENTS_PATH)
            at = exc.start - start - len(_DOCUMENTS_PATH) if start >= 0 else exc.start
            raise ValueError(
                f"is not UTF-8 (byte 0x{decoded[exc.start]:02x} at byte {at} of the id); percent-encode the id's "
                "UTF-8 bytes"
            ) from None
    trimmed = doc_id.strip()
    if not trimmed:
        raise ValueError("must not be empty")
    return list(dict.fromkeys((doc_id, trimmed)))
