"""Scalar values as a cluster takes them: numbers within their type's range, strings that are UTF-8 text."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from typing import Any

log = logging.getLogger(__name__)

_WHOLE = {"byte": 2**7, "short": 2**15, "integer": 2**31, "long": 2**63}
"""Whole-number types and their limit: a value (a fraction too) must lie in [-limit, limit - 1]."""
_OVERFLOW = {"half_float": 65520.0, "float": 3.4028235677973366e38}
"""Half a step above the type's largest value: a value from here on is infinite in the type."""


def unpaired_surrogate(text: str) -> str | None:
    """Why ``text`` is not UTF-8 text (it holds an unpaired surrogate, as a string cut inside an emoji does)."""
    try:
        text.encode()
    except UnicodeEncodeError as exc:
        return f"unpaired surrogate U+{ord(text[exc.start]):04X} at character {exc.start}, which is not UTF-8 text"
    return None


def unpaired_in(request: Any) -> str | None:
    """Why a request holds a string that is not UTF-8 text (as a key or a value, at any depth), naming the string;
    None when it holds none. The full-text index and SQLite cannot take such a string."""
    pending = [request]
    while pending:
        value = pending.pop()
        kind = type(value)
        if kind in _PLAIN:  # (most of a search body: the numbers of a query vector, sizes, boosts)
            continue
        if kind is str or isinstance(value, str):
            if not value.isascii() and (problem := unpaired_surrogate(value)) is not None:
                return f"{value[:100]!r} holds an {problem}"
        elif kind is dict or isinstance(value, Mapping):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif (kind is list or isinstance(value, list)) and not _PLAIN.issuperset(map(type, value)):
            pending.extend(value)
    return None


_PLAIN = frozenset({float, int, bool, type(None)})


MAX_TERM_BYTES = 32766
"""Lucene's longest term, in UTF-8 bytes: a cluster refuses a document whose keyword value is longer (an immense
term) unless the field's ``ignore_above`` leaves the value unindexed."""


def immense_term(text: str) -> str | None:
    """Why ``text`` is too long for a term (a keyword value), or None."""
    if len(text) * 4 <= MAX_TERM_BYTES:  # (no character takes more than 4 bytes)
        return None
    size = len(text.encode())
    if size <= MAX_TERM_BYTES:
        return None
    return f"a value of {size} UTF-8 bytes starting {text[:20]!r}"


def text_only(documents: Iterable[tuple[int, str, Mapping[str, Any]]], where: str) -> list[Any]:
    """``documents`` (row, ``_id``, source) without those holding a string that is not UTF-8 text, which tantivy
    cannot take: a document written before such strings were refused. Each one left out is logged, named."""
    kept = []
    for document in documents:
        pending: list[Any] = [document[2]]
        while pending:
            value = pending.pop()
            if isinstance(value, str):
                if not value.isascii() and (problem := unpaired_surrogate(value)) is not None:
                    log.warning(
                        "document %r is left out of %s: it holds an %s, written before esbridge refused such "
                        "strings; write it again or delete it",
                        document[1],
                        where,
                        problem,
                    )
                    break
            elif isinstance(value, (dict, list)):
                pending.extend(value.values() if isinstance(value, dict) else value)
        else:
            kept.append(document)
    return kept


def check_number(kind: str, item: Any) -> None:
    """Raise ValueError unless a cluster takes ``item`` for a field of ``kind``: a number, or a string of one (not in
    forms only Python reads, ``1_000``), within the type's range and finite (a whole-number type takes ``NaN``). An
    empty string is taken as no value, as a cluster takes it (neither indexes it)."""
    if isinstance(item, (bool, Mapping, list)) or (type(item) is str and "_" in item):
        raise ValueError(item)
    if item == "":
        return
    number = item
    if type(item) is str:
        try:
            number = int(item)
        except ValueError:
            number = float(item)
    limit = _WHOLE.get(kind)
    if limit is not None:
        if number == number and not -limit <= number <= limit - 1:  # (NaN, unequal to itself, passes)
            raise ValueError(item)
    elif not math.isfinite(float(number)) or abs(number) >= _OVERFLOW.get(kind, math.inf):
        raise ValueError(item)
