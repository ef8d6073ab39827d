"""relay.jsonl (what the harness's MCP relay carried) -> a typed RelayLog: declared servers, listed tools, every tools/call.

The hub (`run/relay_hub.py`) writes the file; the audit takes these records as the evidence of
tool calls, shell use and device use (`audit/verdict.py`, `audit/crosscheck.py`). Reading is the
only I/O here; the records are frozen.

The file is split on LF (`b"\\n"`) alone, never `str.splitlines()`: the hub writes ASCII JSON, so
no character of an agent's argument (U+2028, U+0085, a form feed) can end a record early, and a
log written before the hub escaped them (raw UTF-8 inside JSON strings) still reads whole.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

#: Result statuses of a call: the server answered (`ok`, `error` = `isError`), answered with a
#: JSON-RPC error (`rpc-error`), or never answered before its connection ended (`no-response`).
CALL_STATUSES = ("ok", "error", "rpc-error", "no-response")


@dataclass(frozen=True)
class RelayCall:
    """One `tools/call` the relay carried to a server the harness started.

    `name`, `input`, `result_text` and `is_error` mirror `audit.transcript.ToolCall`, so the
    audit's checks read either kind: `result_text` is "" once the server answered, None when it
    never did. `request_id` is the agent's JSON-RPC id; `server_id` the id the hub gave the
    request on its way to the server (None in logs written before the hub re-framed).
    """

    server: str
    tool: str
    arguments: Mapping[str, Any]
    request_id: Any
    status: str
    error: str | None = None
    error_text: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    start_monotonic: float | None = None
    end_monotonic: float | None = None
    connection: int | None = None
    server_id: int | None = None

    @property
    def name(self) -> str:
        """The agent-side full name, `mcp__<server>__<tool>`."""
        return f"mcp__{self.server}__{self.tool}"

    @property
    def input(self) -> Mapping[str, Any]:
        return self.arguments

    @property
    def result_text(self) -> str | None:
        return None if self.status == "no-response" else (self.error_text or self.error or "")

    @property
    def is_error(self) -> bool:
        return self.status in ("error", "rpc-error")

    @property
    def seconds(self) -> float | None:
        """How long the server took, as the hub saw it."""
        if self.start_monotonic is None or self.end_monotonic is None:
            return None
        return self.end_monotonic - self.start_monotonic


@dataclass(frozen=True)
class RelayRefusal:
    """A line the relay did not forward: from the agent (refused, answered with a JSON-RPC error) or from a server (dropped)."""

    server: str
    direction: str
    reason: str
    method: str | None = None
    tool: str | None = None
    request_id: Any = None
    connection: int | None = None


@dataclass(frozen=True)
class RelayLog:
    """Everything the relay recorded for one run.

    Attributes:
        declared_servers: The server names the agent's MCP config declares (the hub's header).
        listed_tools: Server -> the tool names it listed through the relay (absent: never listed).
        calls: Every `tools/call`, in the order the requests reached the hub.
        refusals: The lines the relay did not forward, in order (docs/relay.md).
        connections: How many relay connections were made (one per server start).
        server_failures: Why a declared server could not be started, per failed connection.
        problems: Lines that did not parse (the file is the harness's own, so this is damage).
        unavailable: Why there is no log at all (None when there is one).
        started: Server -> how many connections started its process (`connect` records).
        hub_errors: Faults of the hub's own that ended one direction of a connection (`relay-error`).
    """

    declared_servers: tuple[str, ...] = ()
    listed_tools: Mapping[str, frozenset[str]] = field(default_factory=lambda: MappingProxyType({}))
    calls: tuple[RelayCall, ...] = ()
    refusals: tuple[RelayRefusal, ...] = ()
    connections: int = 0
    server_failures: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    unavailable: str | None = None
    started: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    hub_errors: tuple[str, ...] = ()

    @property
    def start_failures(self) -> dict[str, tuple[str, ...]]:
        """Server -> why the hub could not start it, per connection that failed to (from `server_failures`)."""
        found: dict[str, list[str]] = {}
        for failure in self.server_failures:
            name, _, reason = failure.partition(": ")
            found.setdefault(name, []).append(reason)
        return {name: tuple(reasons) for name, reasons in found.items()}


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _call(record: Mapping[str, Any]) -> RelayCall:
    status = record.get("status")
    arguments = record.get("arguments")
    return RelayCall(
        server=str(record.get("server", "")),
        tool=str(record.get("tool", "")),
        arguments=arguments if isinstance(arguments, dict) else {},
        request_id=record.get("id"),
        status=status if status in CALL_STATUSES else "no-response",
        error=record.get("error") if isinstance(record.get("error"), str) else None,
        error_text=record.get("errorText") if isinstance(record.get("errorText"), str) else None,
        started_at=_float(record.get("startedAt")),
        ended_at=_float(record.get("endedAt")),
        start_monotonic=_float(record.get("startMonotonic")),
        end_monotonic=_float(record.get("endMonotonic")),
        connection=record.get("connection") if isinstance(record.get("connection"), int) else None,
        server_id=record.get("serverId") if isinstance(record.get("serverId"), int) else None,
    )


def _unanswered(record: Mapping[str, Any]) -> RelayCall:
    """A `request` record whose `call` record was never written (the hub ended first): a call with no answer."""
    return _call({**record, "status": "no-response", "startedAt": record.get("wall"), "startMonotonic": record.get("monotonic")})


def _refusal(record: Mapping[str, Any]) -> RelayRefusal:
    def text(key: str) -> str | None:
        return record.get(key) if isinstance(record.get(key), str) else None

    return RelayRefusal(server=str(record.get("server", "")), direction=str(record.get("direction", "")),
                        reason=str(record.get("reason", "")), method=text("method"), tool=text("tool"),
                        request_id=record.get("id"),
                        connection=record.get("connection") if isinstance(record.get("connection"), int) else None)


def parse_relay_lines(lines: list[str] | list[bytes]) -> RelayLog:
    """Relay log lines (already split on LF) -> RelayLog (pure; see `read_relay_log`)."""
    declared: tuple[str, ...] = ()
    refusals: list[RelayRefusal] = []
    requested: dict[tuple[Any, Any], Mapping[str, Any]] = {}
    answered: set[tuple[Any, Any]] = set()
    listed: dict[str, set[str]] = {}
    calls: list[RelayCall] = []
    failures: list[str] = []
    problems: list[str] = []
    connections = 0
    started: dict[str, int] = {}
    hub_errors: list[str] = []
    saw_header = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode("utf-8") if isinstance(line, bytes) else line)
        except ValueError as exc:  # UnicodeDecodeError is one
            problems.append(f"line {number}: {exc}")
            continue
        if not isinstance(record, dict):
            problems.append(f"line {number}: not a JSON object")
            continue
        event = record.get("event")
        if event == "hub":
            saw_header = True
            servers = record.get("servers")
            declared = tuple(str(name) for name in servers) if isinstance(servers, dict) else ()
        elif event == "connect":
            connections += 1
            started[str(record.get("server", ""))] = started.get(str(record.get("server", "")), 0) + 1
        elif event == "server-failed":
            failures.append(f"{record.get('server')}: {record.get('reason')}")
        elif event == "tools/list":
            tools = record.get("tools") if isinstance(record.get("tools"), list) else []
            listed.setdefault(str(record.get("server", "")), set()).update(str(tool) for tool in tools)
        elif event == "call":
            calls.append(_call(record))
            if "serverId" in record:
                answered.add((record.get("connection"), record.get("serverId")))
        elif event == "request" and record.get("method") == "tools/call":
            requested[(record.get("connection"), record.get("serverId"))] = record
        elif event == "refused":
            refusals.append(_refusal(record))
        elif event == "relay-error":
            hub_errors.append(f"{record.get('server')} connection {record.get('connection')}, {record.get('direction')}: "
                              f"{record.get('error')}")
    calls.extend(_unanswered(record) for key, record in requested.items() if key not in answered)
    if not saw_header:
        return RelayLog(problems=tuple(problems), unavailable="the relay log has no header (the hub never started)")
    calls.sort(key=lambda call: call.start_monotonic if call.start_monotonic is not None else float("inf"))
    return RelayLog(
        declared_servers=declared,
        listed_tools=MappingProxyType({name: frozenset(tools) for name, tools in listed.items()}),
        calls=tuple(calls),
        refusals=tuple(refusals),
        connections=connections,
        server_failures=tuple(failures),
        problems=tuple(problems),
        started=MappingProxyType(started),
        hub_errors=tuple(hub_errors),
    )


def read_relay_log(path: Path) -> RelayLog:
    """Read a run's relay log; a missing or unreadable file is a RelayLog whose `unavailable` says why."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return RelayLog(unavailable=f"the relay log {Path(path).name} cannot be read: {exc.strerror or exc}")
    return parse_relay_lines(data.split(b"\n"))
