"""Device claims held and released -> one JSON line each in a session's claim log; a log -> who held which device when, and any overlap.

The benchmark lock already keeps two runs off one device; the log is the evidence, written by
every process that claims (each xdist worker appends to the same file under the artifact root).
"held" is written once the lock and claim are ours and "released" just before the lock is let
go, so every logged interval lies inside the time the lock was really held: if logged intervals
of one device overlap, two runs really did hold it at once.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

#: The claim log's file name under the artifact root (`--agentbench-output`).
CLAIM_LOG_NAME = "device-claims.jsonl"

Event = Literal["held", "released"]


def append(path: Path, event: Event, *, serial: str, scope: str, holder: str) -> None:
    """Append one event line (one `write` on an O_APPEND descriptor, so lines of concurrent writers never interleave).

    Args:
        path: The claim log.
        event: `held` or `released`.
        serial: The device serial.
        scope: The adb server's claim scope (the same serial on two servers is two devices).
        holder: Who holds it (the pytest node id of the run).
    """
    line = json.dumps(
        {
            "event": event, "serial": serial, "scope": scope, "holder": holder, "pid": os.getpid(),
            "worker": os.environ.get("PYTEST_XDIST_WORKER", ""), "timeNs": time.time_ns(),
        },
        ensure_ascii=False,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Holding:
    """One device held by one holder from `start_ns` to `end_ns` (None: never released in the log)."""

    device: str
    holder: str
    pid: int
    start_ns: int
    end_ns: int | None


def holdings(lines: Iterable[str]) -> list[Holding]:
    """Pair each `held` with the next `released` of the same device, holder and pid (pure).

    Args:
        lines: The log's lines.

    Returns:
        The holdings in the order they began; `device` is `scope/serial`.

    Raises:
        ValueError: A line that is not a claim-log event, naming its number.
    """
    open_: dict[tuple[str, str, int], Holding] = {}
    done: list[Holding] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
            device = f"{event['scope']}/{event['serial']}"
            key = (device, str(event["holder"]), int(event["pid"]))
            kind, stamp = event["event"], int(event["timeNs"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"claim log line {number}: expected a claim event, got {line.strip()[:120]!r} ({exc})") from None
        if kind == "held":
            open_[key] = Holding(device, key[1], key[2], stamp, None)
        elif kind == "released" and key in open_:
            start = open_.pop(key)
            done.append(Holding(device, start.holder, start.pid, start.start_ns, stamp))
    return sorted(done + list(open_.values()), key=lambda h: h.start_ns)


def overlaps(found: Iterable[Holding]) -> list[str]:
    """One sentence per holding that began while another holding of the same device was still open (pure); none means no device was shared."""
    by_device: dict[str, list[Holding]] = {}
    for holding in found:
        by_device.setdefault(holding.device, []).append(holding)
    problems = []
    for device, items in by_device.items():
        items.sort(key=lambda h: h.start_ns)
        latest: Holding | None = None  # the holding seen so far that ends last (None end: never)
        for holding in items:
            if latest is not None and (latest.end_ns is None or holding.start_ns < latest.end_ns):
                problems.append(f"{device}: {holding.holder} took it while {latest.holder} still held it")
            if latest is None or latest.end_ns is not None and (holding.end_ns is None or holding.end_ns > latest.end_ns):
                latest = holding
    return problems


def read(path: Path) -> list[Holding]:
    """The holdings in a claim log file (empty when there is none)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return holdings(text.splitlines())
