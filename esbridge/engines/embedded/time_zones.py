"""A range query's ``time_zone`` as the clusters read it (``java.time.ZoneId.of``): ``Z``, an offset (``+01``,
``+0100``, ``+01:00``, ``-5``, to seconds), ``UTC``, ``GMT`` or ``UT`` alone or before an offset (``UTC+01:00``),
or a region of the time zone database (``Europe/Paris``, case as written), read with Python's ``zoneinfo`` from
the system's database, daylight saving time included.

A date without an offset is read in the zone: a local time that daylight saving skips counts as that time moved
on by the gap (02:30 in Paris on the day clocks go forward is 03:30+02:00), and one it repeats as the earlier
of the two (its summer offset), as ``java.time`` resolves them; ``zoneinfo`` with ``fold=0`` resolves both so.
"""

from __future__ import annotations

import functools
import re
import zoneinfo
from datetime import datetime, timedelta, timezone, tzinfo

_OFFSET = re.compile(
    r"[+-](?:(?P<h1>[0-9]{1,2})|(?P<h2>[0-9]{2}):(?P<m2>[0-9]{2})(?::(?P<s2>[0-9]{2}))?"
    r"|(?P<h3>[0-9]{2})(?P<m3>[0-9]{2})(?P<s3>[0-9]{2})?)"
)
_PREFIXES = ("UTC", "GMT", "UT")
_JAVA_UNKNOWN = frozenset({"EST", "MST", "HST", "ROC", "Factory", "localtime"})
"""Names in the system's database that ``java.time`` does not know (OpenSearch 3.6 refuses each of them)."""


@functools.cache
def _regions() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones()) - _JAVA_UNKNOWN


def _offset(text: str) -> timezone:
    """``+h``, ``+hh``, ``+hh:mm``, ``+hhmm``, ``+hh:mm:ss`` or ``+hhmmss`` (or ``-``), as ``ZoneOffset.of``."""
    found = _OFFSET.fullmatch(text)
    if found is None:
        raise ValueError(f"Invalid ID for ZoneOffset, invalid format: {text}")
    parts = found.groupdict()
    hours, minutes, seconds = (
        int(next((parts[f"{name}{n}"] for n in "123" if parts.get(f"{name}{n}")), 0)) for name in "hms"
    )
    if hours > 18:
        raise ValueError(f"Zone offset hours not in valid range: value {hours} is not in the range -18 to 18")
    if minutes > 59 or seconds > 59 or (hours == 18 and minutes + seconds):
        raise ValueError(f"Zone offset not in valid range: {text}")
    total = timedelta(hours=hours, minutes=minutes, seconds=seconds)
    return timezone(-total if text[0] == "-" else total)


def time_zone(name: object) -> tzinfo:
    """The zone ``name`` names; ValueError in the words of the clusters when it names none."""
    if not isinstance(name, str):
        raise ValueError(f"time_zone must be a string, got {name!r}")
    if len(name) <= 1 or name[0] in "+-":
        return timezone.utc if name == "Z" else _offset(name)
    for prefix in _PREFIXES:
        if name == prefix:
            return timezone.utc
        if name.startswith(prefix) and name[len(prefix)] in "+-":
            try:
                return _offset(name[len(prefix) :])
            except ValueError:
                raise ValueError(f"Invalid ID for offset-based ZoneId: {name}") from None
    if name in _regions():
        return zoneinfo.ZoneInfo(name)
    raise ValueError(f"Unknown time-zone ID: {name}")


class OutsideZoneYears(ValueError):
    """A date the clusters read in a time zone, but Python's ``zoneinfo`` cannot: outside the years 1 to 9999."""


def utc_seconds(local: int, zone: tzinfo) -> int:
    """Seconds since the epoch of ``local`` (seconds since 1970-01-01T00:00 on the zone's clock), as ``java.time``
    resolves a local time in a gap or an overlap."""
    if isinstance(zone, timezone):
        return local - int(zone.utcoffset(None).total_seconds())
    try:
        moment = datetime(1970, 1, 1) + timedelta(seconds=local)
    except OverflowError:
        raise OutsideZoneYears("a date outside the years 1 to 9999 cannot be read in a time zone") from None
    offset = moment.replace(tzinfo=zone, fold=0).utcoffset()
    return local - int(offset.total_seconds()) if offset is not None else local
