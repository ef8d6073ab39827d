"""Transcript claims x relay records -> the first mismatch, both sides: lies fail with a named reason, honest runs (errored calls included) pass."""

from __future__ import annotations

import json
from types import MappingProxyType

import pytest

from pytest_agentbench.audit.crosscheck import first_mismatch, mismatches
from pytest_agentbench.audit.transcript import ToolCall, parse_lines
from pytest_agentbench.run.relaylog import RelayCall, RelayLog, parse_relay_lines

DEVICE = {"device": "emulator-5554"}
TOOLS = MappingProxyType({"agentbench": frozenset({"observe", "tapOn", "listDevices"})})


def claim(call_id: str, name: str, arguments: dict | None = None, *, result: str | None = "ok", error: bool = False) -> ToolCall:
    return ToolCall(id=call_id, name=name, input=dict(DEVICE if arguments is None else arguments), result_text=result,
                    is_error=error, use_line=1)


def relayed(tool: str, arguments: dict | None = None, status: str = "ok", server: str = "agentbench") -> RelayCall:
    return RelayCall(server=server, tool=tool, arguments=dict(DEVICE if arguments is None else arguments), request_id=1, status=status)


def log(*calls: RelayCall, listed=TOOLS) -> RelayLog:
    return RelayLog(declared_servers=("agentbench",), listed_tools=listed, calls=calls, connections=1)


OBSERVE = "mcp__agentbench__observe"
TAP = "mcp__agentbench__tapOn"

HONEST = {
    "agree": ([claim("a", OBSERVE), claim("b", TAP, {"text": "Go", **DEVICE})],
              log(relayed("observe"), relayed("tapOn", {"text": "Go", **DEVICE}))),
    "an errored call on both sides": ([claim("a", TAP, {"text": "Nope", **DEVICE}, result="no element", error=True)],
                                      log(relayed("tapOn", {"text": "Nope", **DEVICE}, status="error"))),
    "a JSON-RPC error shown as an error result": ([claim("a", OBSERVE, result="MCP error -32602", error=True)],
                                                  log(relayed("observe", status="rpc-error"))),
    "parallel calls relayed in another order": ([claim("a", TAP, {"text": "A", **DEVICE}), claim("b", TAP, {"text": "B", **DEVICE})],
                                                log(relayed("tapOn", {"text": "B", **DEVICE}), relayed("tapOn", {"text": "A", **DEVICE}))),
    "a call with no result yet (the run ended)": ([claim("a", OBSERVE, result=None)], log()),
    "Claude Code's own 'no such tool' error": ([claim("a", "mcp__agentbench__fly", result="<tool_use_error>Error: No such tool available: "
                                                "mcp__agentbench__fly</tool_use_error>", error=True)], log()),
    "a permission denial": ([claim("denied", TAP, result="Claude requested permissions to use it", error=True)], log()),
    "Claude Code's own tools are not MCP claims": ([claim("a", "Read", {"file_path": "/x"})], log()),
    "more relayed than claimed (the log is the evidence)": ([claim("a", OBSERVE)], log(relayed("listDevices", {}), relayed("observe"))),
    "a server that listed nothing": ([claim("a", OBSERVE)], log(relayed("observe"), listed=MappingProxyType({}))),
    "the same call twice, backed twice": ([claim("a", OBSERVE), claim("b", OBSERVE)], log(relayed("observe"), relayed("observe"))),
}


@pytest.mark.parametrize("case", list(HONEST), ids=list(HONEST))
def test_honest_transcripts_match(case: str) -> None:
    calls, relay = HONEST[case]
    assert first_mismatch(calls, relay, denied_ids={"denied"}) is None


LIES = {
    "a call the server never received": (
        [claim("a", OBSERVE)], log(), "never-received", "never reached the agentbench server (observe was not relayed at all)"),
    "a call with other arguments than the server got": (
        [claim("a", TAP, {"text": "Pay", **DEVICE})], log(relayed("tapOn", {"text": "Look", **DEVICE})),
        "never-received", "(tapOn was not relayed with these arguments)"),
    "one relayed call backs one claim only": (
        [claim("a", OBSERVE), claim("b", OBSERVE)], log(relayed("observe")), "never-received", "'b'"),
    "a tool no server has": ([claim("a", "mcp__agentbench__shell", {"command": "id"})], log(), "unknown-tool",
                             "names a tool the agentbench server does not have"),
    "a server the config does not declare": (
        [claim("a", "mcp__phone__shell", {"command": "id"})], log(), "undeclared-server",
        "names the MCP server 'phone', which the run's config does not declare (declared: agentbench)"),
    "an undeclared server even when its call errored": (
        [claim("a", "mcp__phone__shell", {"command": "id"}, result="denied", error=True)], log(), "undeclared-server", "'phone'"),
    "a reused tool_use id (a Bash call behind an MCP call)": (
        [claim("t1", "Bash", {"command": "adb shell id"}), claim("t1", OBSERVE)], log(relayed("observe")), "reused-id",
        "Bash({\"command\": \"adb shell id\"}) with tool_use id 't1'"),
    "a success the server answered with an error": (
        [claim("a", TAP, {"text": "Go", **DEVICE})], log(relayed("tapOn", {"text": "Go", **DEVICE}, status="error")), "status",
        "shows a success, but the server answered with an error (error)"),
}


@pytest.mark.parametrize("case", list(LIES), ids=list(LIES))
def test_lies_are_named(case: str) -> None:
    calls, relay, kind, words = LIES[case]
    found = first_mismatch(calls, relay)
    assert found is not None and found.kind == kind, found
    assert words in found.detail, found.detail


def test_the_first_mismatch_is_the_first_in_transcript_order() -> None:
    calls = [claim("a", OBSERVE), claim("b", "mcp__phone__shell", {}), claim("a", TAP)]
    assert [m.kind for m in mismatches(calls, log(relayed("observe")))] == ["undeclared-server", "reused-id"]
    assert first_mismatch(calls, log(relayed("observe"))).call_id == "b"


def test_the_transcript_keeps_every_tool_use_even_with_a_reused_id() -> None:
    lines = [
        {"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "id"}}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "uid=0"}]}},
        {"type": "assistant", "message": {"id": "m2", "content": [{"type": "tool_use", "id": "t1", "name": OBSERVE, "input": DEVICE}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "screen"}]}},
    ]
    transcript = parse_lines(json.dumps(line) + "\n" for line in lines)
    assert [(call.id, call.name, call.result_text) for call in transcript.tool_calls] == [
        ("t1", "Bash", "uid=0"), ("t1", OBSERVE, "screen")]


def test_the_relay_log_reader() -> None:
    records = [
        {"event": "hub", "servers": {"agentbench": {"command": ["python"]}}},
        {"event": "connect", "server": "agentbench", "connection": 1, "pid": 5},
        {"event": "tools/list", "server": "agentbench", "tools": ["observe", "tapOn"]},
        {"event": "call", "server": "agentbench", "tool": "tapOn", "arguments": {"text": "x"}, "id": 4, "status": "error",
         "isError": True, "errorText": "no element", "startMonotonic": 2.0, "endMonotonic": 2.5},
        {"event": "call", "server": "agentbench", "tool": "observe", "arguments": {}, "id": 3, "status": "ok",
         "startMonotonic": 1.0, "endMonotonic": 1.2},
    ]
    relay = parse_relay_lines([json.dumps(record) for record in records] + ["{broken"])
    assert relay.declared_servers == ("agentbench",) and relay.connections == 1
    assert relay.listed_tools["agentbench"] == frozenset({"observe", "tapOn"})
    # Sorted by when the request reached the hub, not by when the answer came.
    assert [(call.name, call.is_error, call.result_text) for call in relay.calls] == [
        ("mcp__agentbench__observe", False, ""), ("mcp__agentbench__tapOn", True, "no element")]
    assert relay.calls[1].seconds == pytest.approx(0.5)
    assert relay.problems and relay.problems[0].startswith("line 6:")
    assert parse_relay_lines([]).unavailable == "the relay log has no header (the hub never started)"
