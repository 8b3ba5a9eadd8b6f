"""A year, or a year and month, given as a date: its first moment, as the engines read such a date field.

OpenSearch and Elasticsearch read ``"2024"`` and ``"2024-05"`` in a date field as the first day of that year or
month, and so does recency. Taken as epoch seconds, as the sources take other numbers, ``created: 2024`` would be
33 minutes into 1970.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

_YEAR_OR_MONTH = re.compile(r"([0-9]{4})(?:-([0-9]{2}))?")
# An integer date of four digits is a year; below 1000 it is left to the epoch reading (``created: 0``).
_FIRST_YEAR_AS_NUMBER = 1000


def year_or_month(value: Any) -> datetime | None:
    """``2024``, ``"2024"`` or ``"2024-05"`` as the first moment of that year or month in UTC.

    None for anything else, a month or year that does not exist (``"2024-13"``, ``"0000"``) included.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if not _FIRST_YEAR_AS_NUMBER <= value <= 9999:
            return None
        value = str(value)
    if not isinstance(value, str):
        return None
    match = _YEAR_OR_MONTH.fullmatch(value.strip())
    if match is None:
        return None
    year, month = int(match.group(1)), int(match.group(2) or 1)
    if year < 1 or not 1 <= month <= 12:
        return None
    return datetime(year, month, 1, tzinfo=timezone.utc)


def is_year_or_month(value: Any) -> bool:
    """Whether ``value`` is written as a year or a year and month, possible or not (``"0000"``, ``"2024-13"``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _FIRST_YEAR_AS_NUMBER <= value <= 9999
    return isinstance(value, str) and _YEAR_OR_MONTH.fullmatch(value.strip()) is not None
