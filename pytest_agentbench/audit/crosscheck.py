"""The transcript's claimed MCP calls + the relay log -> the claims the log does not back, first one first (pure).

The transcript is the agent's word; the relay log (`run/relaylog.py`) is what the harness's relay
carried. A claim fails when:

* `reused-id`: its tool_use id was used by an earlier tool_use (any tool, Bash included);
* `undeclared-server`: it names an MCP server the agent's config does not declare;
* `unknown-tool`: it names a tool its server did not list through the relay;
* `never-received`: no call with that server, tool and arguments reached the server (each
  relayed call backs one claim);
* `status`: the transcript shows a success the server answered with an error.

Claims that claim nothing are not checked: a tool_use without a tool_result (the run ended
first), and an error result Claude Code made itself without reaching a server (a permission
denial listed in the result event, or a `<tool_use_error>`: an unknown tool, invalid input).
Calls the server received but the transcript does not show are not mismatches: the verdict
counts the relay's calls either way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pytest_agentbench.audit.transcript import ToolCall
    from pytest_agentbench.run.relaylog import RelayCall, RelayLog

MismatchKind = Literal["reused-id", "undeclared-server", "unknown-tool", "never-received", "status"]
#: How Claude Code marks an error result it made itself (the call never left the client).
CLIENT_SIDE_ERROR = "<tool_use_error>"
_ARGUMENT_CHARS = 160


@dataclass(frozen=True)
class Mismatch:
    """One transcript claim the relay log does not back.

    Attributes:
        kind: Which rule it broke (see the module docstring).
        call_id: The claim's tool_use id.
        tool: The claimed full tool name (`mcp__agentbench__tapOn`, `Bash`).
        line: The transcript line of the tool_use, when known.
        detail: A sentence naming the claim and what the log says.
    """

    kind: MismatchKind
    call_id: str
    tool: str
    line: int | None
    detail: str


def split_mcp_name(name: str) -> tuple[str, str] | None:
    """`mcp__<server>__<tool>` -> (server, tool); None for a name that is not an MCP tool's."""
    if not name.startswith("mcp__"):
        return None
    server, separator, tool = name[len("mcp__"):].partition("__")
    return (server, tool) if separator and server and tool else None


def _shown(call: ToolCall) -> str:
    arguments = json.dumps(call.input, ensure_ascii=False, sort_keys=True)
    if len(arguments) > _ARGUMENT_CHARS:
        arguments = arguments[: _ARGUMENT_CHARS - 1] + "…"
    where = f" (transcript line {call.use_line})" if call.use_line is not None else ""
    return f"{call.name}({arguments}) with tool_use id {call.id!r}{where}"


def claims_nothing(call: ToolCall, denied_ids: frozenset[str]) -> bool:
    """A tool_use with no result, or an error result Claude Code made itself: no claim that a server ran it."""
    if call.result_text is None:
        return True
    return call.is_error and (call.id in denied_ids or call.result_text.lstrip().startswith(CLIENT_SIDE_ERROR))


def _match(call: ToolCall, server: str, tool: str, relayed: Sequence[RelayCall], used: list[bool]) -> tuple[int | None, bool]:
    """The relayed call that backs a claim (same server, tool and arguments), preferring one whose status agrees.

    Returns:
        (index or None, whether a call with the same server and tool exists at all).
    """
    same_tool = False
    fallback = None
    for index, candidate in enumerate(relayed):
        if used[index] or candidate.server != server or candidate.tool != tool:
            continue
        same_tool = True
        if dict(candidate.arguments) != dict(call.input):
            continue
        if candidate.is_error == call.is_error or candidate.status == "no-response":
            return index, True
        fallback = index if fallback is None else fallback
    return fallback, same_tool


def mismatches(calls: Iterable[ToolCall], relay: RelayLog, *, denied_ids: Iterable[str] = ()) -> list[Mismatch]:
    """Every transcript claim the relay log does not back, in transcript order.

    Args:
        calls: The transcript's tool calls, every tool_use block (`Transcript.tool_calls`).
        relay: The run's relay log.
        denied_ids: tool_use ids the result event lists as permission denials.

    Returns:
        The mismatches; empty when the transcript and the log agree.
    """
    denied = frozenset(denied_ids)
    relayed = relay.calls
    used = [False] * len(relayed)
    seen: dict[str, ToolCall] = {}
    found: list[Mismatch] = []
    for call in calls:
        if call.id in seen:
            found.append(Mismatch("reused-id", call.id, call.name, call.use_line,
                                  f"{_shown(call)} reuses the id of an earlier tool_use, {_shown(seen[call.id])}"))
            continue
        seen[call.id] = call
        parts = split_mcp_name(call.name)
        if parts is None or claims_nothing(call, denied):
            continue
        server, tool = parts
        if server not in relay.declared_servers:
            declared = ", ".join(relay.declared_servers) or "none"
            found.append(Mismatch("undeclared-server", call.id, call.name, call.use_line,
                                  f"{_shown(call)} names the MCP server {server!r}, which the run's config does not declare (declared: {declared})"))
            continue
        listed = relay.listed_tools.get(server)
        if listed is not None and tool not in listed:
            found.append(Mismatch("unknown-tool", call.id, call.name, call.use_line,
                                  f"{_shown(call)} names a tool the {server} server does not have"))
            continue
        index, same_tool = _match(call, server, tool, relayed, used)
        if index is None:
            why = "with these arguments" if same_tool else "at all"
            found.append(Mismatch("never-received", call.id, call.name, call.use_line,
                                  f"{_shown(call)} never reached the {server} server ({tool} was not relayed {why})"))
            continue
        used[index] = True
        backing = relayed[index]
        if not call.is_error and backing.is_error:
            found.append(Mismatch("status", call.id, call.name, call.use_line,
                                  f"{_shown(call)} shows a success, but the server answered with an error ({backing.status})"))
    return found


def first_mismatch(calls: Iterable[ToolCall], relay: RelayLog, *, denied_ids: Iterable[str] = ()) -> Mismatch | None:
    """The first transcript claim the relay log does not back, or None (see `mismatches`)."""
    found = mismatches(calls, relay, denied_ids=denied_ids)
    return found[0] if found else None
