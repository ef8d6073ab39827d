"""Tests for the fake OpenAI Responses API, and the real Codex CLI driven through it.

The fast tests at the top check the fake on its own. The `agent_cli` tests run the pinned
`codex exec --json` against it with the tiny MCP stdio server `dev` (tests/clirun.py), in a fresh
HOME and CODEX_HOME whose config.toml (codexcli.codex_config) leaves that server as the only way
out; each run's process group is killed afterwards. They skip with an install hint
when the CLI is missing (AGENTBENCH_NPM_CACHE, .ci/run).
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from clirun import MCP_SERVER, PROMPT, CliRun, group_gone, run_cli
from codexcli import CODEX_KEY_VARIABLE, codex_config
from fake_openai_responses import (
    FakeResponses,
    HttpError,
    ResponsesRequest,
    StreamFailure,
    failure_events,
    function_call,
    reply,
    stream_events,
    text,
    tool_search,
)

KEY = "sk-agentbench-SENTINEL-codex"
RUN_TIMEOUT_S = 120


def _post(api: FakeResponses, body: dict, *, key: str = KEY) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"{api.base_url}/responses", data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": f"Bearer {key}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _sse_payloads(raw: bytes) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in raw.decode().splitlines() if line.startswith("data: ")]


OBSERVE_TOOLS = [{"type": "namespace", "name": "mcp__dev", "tools": [{"type": "function", "name": "observe"}]}]


# --- the fake on its own (fast) -------------------------------------------------------------


def test_stream_carries_text_and_a_namespaced_function_call_then_usage() -> None:
    answer = reply(text("Looking."), function_call("mcp__dev/observe", {"device": "emulator-5554"}), usage={"input_tokens": 5000})
    payloads = [json.loads(e.decode().split("data: ", 1)[1]) for e in stream_events(answer, model="m", response_id="resp_1")]
    kinds = [p["type"] for p in payloads]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    assert "".join(p["delta"] for p in payloads if p["type"] == "response.output_text.delta") == "Looking."
    arguments = "".join(p["delta"] for p in payloads if p["type"] == "response.function_call_arguments.delta")
    assert json.loads(arguments) == {"device": "emulator-5554"}
    call = next(p["item"] for p in payloads if p["type"] == "response.output_item.done" and p["item"]["type"] == "function_call")
    assert (call["namespace"], call["name"]) == ("mcp__dev", "observe")
    usage = payloads[-1]["response"]["usage"]
    assert usage["input_tokens"] == 5000 and usage["total_tokens"] == 5020
    assert [item["type"] for item in payloads[-1]["response"]["output"]] == ["message", "function_call"]


def test_a_failed_stream_ends_with_response_failed_and_no_completed() -> None:
    payloads = [json.loads(e.decode().split("data: ", 1)[1]) for e in failure_events(StreamFailure("boom", "server_error"), model="m", response_id="r")]
    assert [p["type"] for p in payloads] == ["response.created", "response.failed"]
    assert payloads[-1]["response"]["error"] == {"code": "server_error", "message": "boom"}


def test_fake_answers_turns_in_order_refuses_other_keys_and_logs_broken_scripts() -> None:
    def broken(request: ResponsesRequest):
        return reply(function_call(request.tool_named("tapOn")))

    script = [lambda r: reply(text(f"saw {r.tools}")), lambda r: HttpError(429, "slow down", "requests", "rate_limit_exceeded"), broken]
    with FakeResponses(script, api_key=KEY) as api:
        status, body = _post(api, {"stream": True, "tools": OBSERVE_TOOLS, "input": []})
        assert status == 200
        assert "saw ['mcp__dev/observe']" in "".join(p.get("delta", "") for p in _sse_payloads(body))
        status, body = _post(api, {"stream": True, "tools": OBSERVE_TOOLS, "input": []}, key="sk-other")
        assert status == 401 and json.loads(body)["error"]["code"] == "invalid_api_key"
        status, body = _post(api, {"stream": True, "input": []})
        assert status == 200 and "Fake session" in body.decode()
        status, body = _post(api, {"stream": True, "tools": OBSERVE_TOOLS, "input": []})
        assert status == 429 and json.loads(body)["error"]["code"] == "rate_limit_exceeded"
        status, body = _post(api, {"stream": True, "tools": OBSERVE_TOOLS, "input": []})
        assert status == 500 and "tapOn" in json.loads(body)["error"]["message"]
    assert [(r.turn, r.outcome) for r in api.requests] == [(0, "reply"), (None, "401"), (None, "side"), (1, "http 429"), (2, "script error")]
    assert len(api.script_errors) == 1 and "no tool named 'tapOn'" in api.script_errors[0]


def test_request_helpers_see_deferred_and_code_mode_tools_and_the_outputs_answering_the_last_reply() -> None:
    request = ResponsesRequest("POST", "/v1/responses", {}, {
        "tools": [{"type": "function", "name": "list_mcp_resources"}, {"type": "tool_search"}],
        "input": [
            {"type": "additional_tools", "tools": [{"type": "namespace", "name": "functions", "tools": [{"type": "custom", "name": "exec"}]}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Count."}]},
            {"type": "tool_search_call", "call_id": "c1", "arguments": {"query": "device"}},
            {"type": "tool_search_output", "call_id": "c1", "tools": OBSERVE_TOOLS},
            {"type": "function_call", "call_id": "c2", "name": "observe", "namespace": "mcp__dev", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c2", "output": "Wall time: 0.1 seconds\nOutput:\n3 items"},
        ],
    }, answering=("c2",))
    assert request.tools == ["list_mcp_resources", "functions/exec", "mcp__dev/observe"]
    assert request.tool_named("observe") == "mcp__dev/observe" and request.agent_loop
    assert [(o.kind, o.name, o.output.splitlines()[-1]) for o in request.tool_outputs()] == [("function", "observe", "3 items")]
    assert request.user_texts() == ["Count."]
    with pytest.raises(LookupError, match="no tool named 'tapOn'"):
        request.tool_named("tapOn")


# --- the real CLI against the fake (slow) ---------------------------------------------------


def run_codex(codex: Path, tmp_path: Path, api: FakeResponses, **kwargs) -> CliRun:
    """`codex exec --json` against the fake, with a fresh HOME and CODEX_HOME and only the fake's key in its environment."""
    home, codex_home, work = tmp_path / "home", tmp_path / "codex-home", tmp_path / "work"
    for folder in (home, codex_home, work):
        folder.mkdir()
    server = tmp_path / "dev_server.py"
    server.write_text(MCP_SERVER, encoding="utf-8")
    config = codex_config(base_url=api.base_url, mcp_command=sys.executable, mcp_args=[str(server)])
    (codex_home / "config.toml").write_text(config, encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "CODEX_HOME": str(codex_home), CODEX_KEY_VARIABLE: KEY}
    argv = [str(codex), "exec", "--json", "--ephemeral", "--skip-git-repo-check", "--strict-config", PROMPT]
    return run_cli(argv, cwd=work, env=env, timeout_s=RUN_TIMEOUT_S, **kwargs)


def items(run: CliRun, item_type: str) -> list[dict]:
    """The completed items of one type."""
    return [e["item"] for e in run.of_type("item.completed") if e["item"].get("type") == item_type]


@pytest.mark.agent_cli
@pytest.mark.e2e
def test_codex_loads_the_deferred_mcp_tools_calls_them_and_answers(codex_bin: Path, tmp_path: Path) -> None:
    def final(request: ResponsesRequest):
        (output,) = request.tool_outputs()
        assert output.name == "observe" and "Expected count: 3" in output.output, output
        return reply(text("I checked the device.\nEXPECTED_COUNT: 3"))

    script = [
        lambda r: reply(text("Let me find the device tools."), tool_search("android device tools")),
        lambda r: reply(function_call(r.tool_named("listDevices"))),
        lambda r: reply(function_call(r.tool_named("observe"), {"device": "emulator-5554"})),
        final,
    ]
    with FakeResponses(script, api_key=KEY) as api:
        run = run_codex(codex_bin, tmp_path, api)
    assert api.script_errors == [] and run.exit_code == 0, run.stderr
    first = api.agent_requests[0]
    assert "mcp__dev/observe" not in first.tools, "Codex defers MCP tools behind tool_search for this model"
    assert not {"exec_command", "shell", "web_search", "view_image"} & (set(first.tools) | set(first.tool_types))
    assert [e["type"] for e in run.events[:2]] == ["thread.started", "turn.started"]
    calls = items(run, "mcp_tool_call")
    assert [(c["server"], c["tool"], c["status"]) for c in calls] == [("dev", "listDevices", "completed"), ("dev", "observe", "completed")]
    assert calls[1]["arguments"] == {"device": "emulator-5554"}
    assert calls[1]["result"]["content"][0]["text"] == "device emulator-5554: Expected count: 3"
    assert items(run, "agent_message")[-1]["text"].endswith("EXPECTED_COUNT: 3")
    (completed,) = run.of_type("turn.completed")
    assert completed["usage"]["input_tokens"] == 4 * 1000 and completed["usage"]["output_tokens"] == 4 * 20
    assert all(r.path == "/v1/responses" and r.outcome == "reply" for r in api.requests)
    assert KEY not in run.stdout + run.stderr
    assert group_gone(run.process_group), "the CLI and its MCP server must be gone"


@pytest.mark.agent_cli
@pytest.mark.e2e
def test_codex_own_shell_tool_is_not_there_and_leaves_no_trace_in_the_stream(codex_bin: Path, tmp_path: Path) -> None:
    def after_shell(request: ResponsesRequest):
        (output,) = request.tool_outputs()
        assert output.output == "unsupported call: exec_command", output
        return reply(text("EXPECTED_COUNT: 3"))

    with FakeResponses([lambda r: reply(function_call("exec_command", {"cmd": "adb devices"})), after_shell], api_key=KEY) as api:
        run = run_codex(codex_bin, tmp_path, api)
    assert api.script_errors == [] and run.exit_code == 0, run.stderr
    assert items(run, "command_execution") == [] and items(run, "mcp_tool_call") == []
    assert items(run, "agent_message")[-1]["text"] == "EXPECTED_COUNT: 3"


@pytest.mark.agent_cli
@pytest.mark.e2e
def test_codex_waits_on_a_stream_that_stops_midway_and_its_group_dies_with_it(codex_bin: Path, tmp_path: Path) -> None:
    stalled = [lambda r: reply(text("I will look at the screen now, then answer with the count."), tool_search("device"), stall_after=5)]
    with FakeResponses(stalled, api_key=KEY) as api:
        run = run_codex(codex_bin, tmp_path, api, wait_for_hang=api.wait_for_hang)
        assert api.hung == 1
    # Five seconds after the stream stopped Codex was still waiting (default idle timeout 300 s): killed.
    assert run.timed_out and run.exit_code == -9
    assert [e["type"] for e in run.events] == ["thread.started", "turn.started"], "partial text is never printed"
    assert group_gone(run.process_group), "the CLI and its MCP server must be gone after the group kill"
