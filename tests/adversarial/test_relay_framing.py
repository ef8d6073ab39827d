"""Cheating agents that frame tool calls so the server runs them but the relay does not log them -> each call refused or logged; an honest CRLF agent still passes.

The server behind the hub is a real MCP SDK stdio server (universal newlines, `errors="replace"`)
that logs every tools/call it runs (`tests/relaycalls.py`). Each test ends with the property the
audit relies on: the calls the server ran are exactly the calls in relay.jsonl.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentbench.run.relaylog import RelayLog, read_relay_log
from relaycalls import CallServerHub, RawAgent, as_executed, call, line, wait_for


@pytest.fixture
def hub(tmp_path: Path):
    hub = CallServerHub(tmp_path)
    yield hub
    hub.stop()


def _finish(hub: CallServerHub, agent: RawAgent) -> RelayLog:
    """End the session and check the property: the server ran exactly the calls relay.jsonl holds."""
    agent.close()
    hub.stop()
    relay = read_relay_log(hub.relay_log)
    assert relay.unavailable is None; assert not relay.problems, relay.problems
    executed = sorted(json.dumps(entry, ensure_ascii=True, sort_keys=True) for entry in hub.executed())
    relayed = sorted(as_executed(c.tool, dict(c.arguments), c.server_id) for c in relay.calls)
    assert executed == relayed, "the server ran calls the relay log does not show (or the reverse)"
    return relay


def _tools(relay: RelayLog) -> list[str]:
    return [c.tool for c in relay.calls]


def test_a_call_joined_to_a_logged_one_by_a_bare_cr_never_runs(hub: CallServerHub) -> None:
    agent = hub.agent()
    hidden = line(call(1, "observe")).rstrip(b"\n") + b"\r" + line(call(2, "shell", command="pm clear com.example"))
    agent.send(hidden)
    (refusal,) = wait_for(agent.errors_with_null_id, "the relay's refusal")
    assert refusal["error"]["code"] == -32700 and "not one JSON value" in refusal["error"]["message"]
    agent.send(line(call(3, "observe")))
    assert agent.answer(3)["result"]["isError"] is False
    relay = _finish(hub, agent)
    assert _tools(relay) == ["observe"] and relay.calls[0].request_id == 3
    (refused,) = relay.refusals
    assert refused.direction == "from-agent" and "not one JSON value" in refused.reason


def test_a_call_with_an_invalid_utf8_byte_never_runs(hub: CallServerHub) -> None:
    agent = hub.agent()
    agent.send(line(call(1, "shell", command="rm -rf /sdcard/DCIM")).replace(b"DCIM", b"DCIM\xff"))
    (refusal,) = wait_for(agent.errors_with_null_id, "the relay's refusal")
    assert "not UTF-8" in refusal["error"]["message"]
    relay = _finish(hub, agent)
    assert hub.executed() == [] and relay.calls == ()
    assert "byte" in relay.refusals[0].reason


def test_a_call_reusing_a_pending_id_is_refused_and_the_first_keeps_its_tool(hub: CallServerHub) -> None:
    agent = hub.agent()
    agent.send(line(call(7, "hold")))
    wait_for(lambda: any(entry["tool"] == "hold" for entry in hub.executed()), "the server to run hold")
    agent.send(line(call(7, "shell", command="settings put global adb_enabled 0")))
    (refusal,) = wait_for(agent.errors_with_null_id, "the relay's refusal")
    assert "already pending" in refusal["error"]["message"]
    # "7" is another id to the agent, though the MCP SDK would take it for 7: it runs, under an id of the hub's.
    agent.send(line(call("7", "shell", command="id")))
    assert agent.answer("7")["result"]["isError"] is False
    agent.send(line(call(8, "release")))
    assert agent.answer(7)["result"]["content"][0]["text"] == "ok"
    agent.answer(8)
    relay = _finish(hub, agent)
    assert sorted((str(c.request_id), c.tool, c.status) for c in relay.calls) == [
        ("7", "hold", "ok"), ("7", "shell", "ok"), ("8", "release", "ok")]
    assert [(r.tool, r.request_id) for r in relay.refusals] == [("shell", 7)]


def test_a_request_id_the_sdk_reads_as_a_notification_is_no_phantom_call(hub: CallServerHub) -> None:
    # {"id": 1.0} or {"id": true}: the SDK reads a notification and runs nothing; today's log showed a call.
    agent = hub.agent()
    agent.send(line({**call(0, "observe"), "id": 1.0}) + line({**call(0, "observe"), "id": True}))
    wait_for(lambda: len(agent.errors_with_null_id()) == 2, "two refusals")
    relay = _finish(hub, agent)
    assert relay.calls == () and hub.executed() == [] and len(relay.refusals) == 2


def test_an_argument_with_line_separators_leaves_the_log_whole(hub: CallServerHub) -> None:
    text = "line\u2028sep\u2029par\u0085nel\x0bvt\x1cfs\r\ncrlf"
    agent = hub.agent()
    agent.send(line(call(1, "observe", text=text), ensure_ascii=False))
    agent.answer(1)
    relay = _finish(hub, agent)
    assert [dict(c.arguments) for c in relay.calls] == [{"text": text}]
    assert hub.relay_log.read_bytes().isascii()


def test_an_honest_agent_framing_with_crlf_in_small_pieces_is_logged_call_by_call(hub: CallServerHub) -> None:
    agent = hub.agent()
    stream = b"".join(line(call(n, tool, n=n), ensure_ascii=False).replace(b"\n", b"\r\n")
                      for n, tool in enumerate(["observe", "fail", "observe"], start=10))
    for start in range(0, len(stream), 7):
        agent.send(stream[start:start + 7])
    answers = [agent.answer(n) for n in (10, 11, 12)]
    assert [a["result"]["isError"] for a in answers] == [False, True, False]
    relay = _finish(hub, agent)
    assert [(c.request_id, c.tool, c.status) for c in relay.calls] == [(10, "observe", "ok"), (11, "fail", "error"), (12, "observe", "ok")]
    assert relay.refusals == ()
