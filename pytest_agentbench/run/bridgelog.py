"""The sandbox's model bridge -> model-bridge.jsonl (every connection it opened to the model host, failed or not, and every refusal) -> a typed BridgeLog.

The bridge (`run/netbridge.py`) is the confined agent's only way to its model host, and a thread of
the harness's own process: what it records is the harness's evidence of whether the model host
could be reached, which the audit needs before it may blame the harness for an API error the
agent's stream reports (`audit/causes.py`). One JSON object per line, ASCII only, read back by
`\\n` alone, so no byte of the agent's can split or join a record:

* `bridge`: the endpoints the run allows (written first);
* `connect`: one connection the bridge opened upstream for the agent: `endpoint`, `via`
  (`forward` for a loopback endpoint, `proxy` for a CONNECT tunnel), `ok`, the `error` when it
  failed, and `open`: how many of the agent's connections were in flight at that moment;
* `refused`: a CONNECT to a host the run does not need (the agent's attempt, never a fault).

Writing and reading are the only I/O here; the records are frozen.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

#: The bridge log's file name in the run directory.
BRIDGE_LOG_NAME = "model-bridge.jsonl"


class BridgeLogWriter:
    """model-bridge.jsonl: one ASCII JSON line per event, written under a lock and flushed at once."""

    def __init__(self, path: Path, endpoints: list[str]) -> None:
        self._handle: IO[str] = open(path, "a", encoding="ascii")
        self._lock = threading.Lock()
        self.write({"event": "bridge", "endpoints": list(endpoints)})

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps({**record, "wall": time.time(), "monotonic": time.monotonic()}, ensure_ascii=True, default=str) + "\n"
        with self._lock:
            if not self._handle.closed:
                self._handle.write(line)
                self._handle.flush()

    def close(self) -> None:
        with self._lock:
            self._handle.close()


@dataclass(frozen=True)
class BridgeConnect:
    """One upstream connection the bridge opened (or could not open) for the agent."""

    endpoint: str
    via: str
    ok: bool
    error: str | None
    open: int
    monotonic: float


@dataclass(frozen=True)
class BridgeLog:
    """Everything the model bridge recorded for one run.

    Attributes:
        endpoints: The endpoints the run allowed (the header).
        connects: Every upstream connection attempt, in the order they completed.
        refused: CONNECT targets the bridge refused (hosts the run does not need).
        problems: Lines that did not parse.
        unavailable: Why there is no record at all (None when there is one).
    """

    endpoints: tuple[str, ...] = ()
    connects: tuple[BridgeConnect, ...] = ()
    refused: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    unavailable: str | None = None

    @property
    def failures(self) -> tuple[BridgeConnect, ...]:
        return tuple(connect for connect in self.connects if not connect.ok)


def parse_bridge_lines(lines: list[str]) -> BridgeLog:
    """Bridge log lines -> BridgeLog (pure; see `read_bridge_log`)."""
    endpoints: tuple[str, ...] = ()
    connects: list[BridgeConnect] = []
    refused: list[str] = []
    problems: list[str] = []
    saw_header = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
            continue
        if not isinstance(record, dict):
            problems.append(f"line {number}: not a JSON object")
            continue
        event = record.get("event")
        if event == "bridge":
            saw_header = True
            raw = record.get("endpoints")
            endpoints = tuple(str(item) for item in raw) if isinstance(raw, list) else ()
        elif event == "connect":
            error = record.get("error")
            opened = record.get("open")
            moment = record.get("monotonic")
            connects.append(BridgeConnect(
                endpoint=str(record.get("endpoint", "")), via=str(record.get("via", "")), ok=record.get("ok") is True,
                error=error if isinstance(error, str) else None,
                open=opened if isinstance(opened, int) and not isinstance(opened, bool) else 0,
                monotonic=float(moment) if isinstance(moment, (int, float)) and not isinstance(moment, bool) else 0.0,
            ))
        elif event == "refused":
            refused.append(str(record.get("target", "")))
    if not saw_header:
        return BridgeLog(problems=tuple(problems), unavailable="the model bridge's log has no header")
    return BridgeLog(endpoints=endpoints, connects=tuple(sorted(connects, key=lambda c: c.monotonic)),
                     refused=tuple(refused), problems=tuple(problems))


def read_bridge_log(path: Path) -> BridgeLog:
    """Read a run's model bridge log; a missing or unreadable file is a BridgeLog whose `unavailable` says why."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return BridgeLog(unavailable=f"the model bridge's log {Path(path).name} cannot be read: {exc.strerror or exc}")
    # Split on LF alone: the file is ASCII, and no other character may end a record.
    return parse_bridge_lines(data.decode("ascii", errors="replace").split("\n"))
