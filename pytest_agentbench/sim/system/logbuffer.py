"""Log lines written by apps and the system -> logd's ring buffers -> `logcat` output in Android's formats."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from .clock import local

PRIORITIES = "VDIWEFS"  # verbose .. fatal, then silent (only in filter specs)
BUFFERS = ("main", "system", "crash", "events", "radio")
DEFAULT_BUFFERS = ("main", "system", "crash")
_CAPACITY = 20000


@dataclass(frozen=True)
class LogEntry:
    """One log record: when (epoch s), who (pid, tid, uid), priority letter, tag, message and buffer."""

    time: float
    pid: int
    tid: int
    uid: int
    priority: str
    tag: str
    message: str
    buffer: str = "main"


class LogBuffer:
    """logd's buffers: a bounded list of entries; `clear` empties the named buffers."""

    def __init__(self) -> None:
        self._entries: deque[LogEntry] = deque(maxlen=_CAPACITY)

    def write(self, entry: LogEntry) -> None:
        self._entries.append(entry)

    def entries(self, buffers: tuple[str, ...] = DEFAULT_BUFFERS) -> list[LogEntry]:
        return [entry for entry in self._entries if entry.buffer in buffers]

    def clear(self, buffers: tuple[str, ...] = DEFAULT_BUFFERS) -> None:
        kept = [entry for entry in self._entries if entry.buffer not in buffers]
        self._entries.clear()
        self._entries.extend(kept)


@dataclass(frozen=True)
class FilterSpec:
    """`TAG:PRIO ...` filter expressions plus the default for tags they do not name (`*:PRIO`)."""

    tags: tuple[tuple[str, str], ...] = ()
    default: str = "V"

    def admits(self, entry: LogEntry) -> bool:
        threshold = self.default
        for tag, priority in self.tags:
            if tag == entry.tag:
                threshold = priority
        if threshold == "S":
            return False
        return PRIORITIES.index(entry.priority) >= PRIORITIES.index(threshold)


def parse_filters(specs: list[str], *, silent_default: bool) -> FilterSpec:
    """Parse `TAG`, `TAG:I`, `*:S` expressions as logcat does; raises ValueError for a bad priority."""
    tags: list[tuple[str, str]] = []
    default = "S" if silent_default else "V"
    for spec in specs:
        for part in spec.split():
            tag, _, priority = part.partition(":")
            priority = (priority or "V").upper()[:1]
            if priority not in PRIORITIES:
                raise ValueError(f"Invalid filter expression '{part}'")
            if tag == "*":
                default = priority
            else:
                tags.append((tag, priority))
    return FilterSpec(tuple(tags), default)


def format_entry(entry: LogEntry, fmt: str, zone_name: str) -> str:
    """One entry in a `-v` format: threadtime (default), brief, time, tag, process, thread, raw or long."""
    stamp = local(entry.time, zone_name)
    time_text = stamp.strftime("%m-%d %H:%M:%S") + f".{stamp.microsecond // 1000:03d}"
    lines = entry.message.split("\n")
    if fmt == "long":
        return f"[ {time_text} {entry.pid:5d}:{entry.tid:5d} {entry.priority}/{entry.tag:<8} ]\n{entry.message}\n\n"
    prefix = {
        "brief": f"{entry.priority}/{entry.tag:<8}({entry.pid:5d}): ",
        "tag": f"{entry.priority}/{entry.tag:<8}: ",
        "process": f"{entry.priority}({entry.pid:5d}) ",
        "thread": f"{entry.priority}({entry.pid:5d}:{entry.tid:5d}) ",
        "raw": "",
        "time": f"{time_text} {entry.priority}/{entry.tag:<8}({entry.pid:5d}): ",
    }.get(fmt, f"{time_text} {entry.pid:5d} {entry.tid:5d} {entry.priority} {entry.tag:<8}: ")
    suffix = f"  ({entry.tag})" if fmt == "process" else ""
    # A multi-line message prints one prefixed line per line, as logcat does.
    return "".join(f"{prefix}{line}{suffix}\n" for line in lines)


FORMATS = ("threadtime", "brief", "time", "tag", "process", "thread", "raw", "long")
# `-v` modifiers logcat accepts beside a format; the sim prints plain text whatever they ask.
MODIFIERS = ("color", "descriptive", "epoch", "monotonic", "printable", "uid", "usec", "UTC", "year", "zone", "nsec")


def render(entries: list[LogEntry], *, fmt: str, zone_name: str, filters: FilterSpec, regex: re.Pattern[str] | None,
           pid: int | None, tail: int | None, max_count: int | None) -> str:
    """The text `logcat -d` prints for these entries: buffer banners, then each admitted entry."""
    chosen = [entry for entry in entries if filters.admits(entry) and (pid is None or entry.pid == pid)
              and (regex is None or regex.search(entry.message))]
    if tail is not None:
        chosen = chosen[-tail:] if tail else []
    if max_count is not None:
        chosen = chosen[:max_count]
    out: list[str] = []
    seen: set[str] = set()
    for entry in chosen:
        if entry.buffer not in seen:
            seen.add(entry.buffer)
            out.append(f"--------- beginning of {entry.buffer}\n")
        out.append(format_entry(entry, fmt, zone_name))
    return "".join(out)
