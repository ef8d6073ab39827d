"""Epoch seconds + the device's time zone (persist.sys.timezone) -> local wall-clock times, as the phone shows them."""

from __future__ import annotations

import datetime
import zoneinfo

UTC = datetime.timezone.utc


def zone(name: str) -> datetime.tzinfo:
    """The tzinfo for an Olson id; an unknown id (or a machine without tzdata) reads as UTC, as Android does."""
    if not name or name in ("UTC", "GMT", "Etc/UTC"):
        return UTC
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return UTC


def is_known_zone(name: str) -> bool:
    """Whether the id names a real time zone (what `setprop persist.sys.timezone` would accept)."""
    if name in ("UTC", "GMT", "Etc/UTC"):
        return True
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True


def local(epoch: float, zone_name: str) -> datetime.datetime:
    """The wall-clock time at `epoch` in the named zone."""
    return datetime.datetime.fromtimestamp(epoch, zone(zone_name))


def offset_text(epoch: float, zone_name: str) -> str:
    """`GMT+01:00`-style offset, as Clock and Settings print it."""
    offset = local(epoch, zone_name).utcoffset() or datetime.timedelta()
    minutes = int(offset.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    minutes = abs(minutes)
    return f"GMT{sign}{minutes // 60:02d}:{minutes % 60:02d}"
