"""Tests for the fake Anthropic Messages API, driving the real Claude Code CLI through it.

Each CLI test starts `claude -p --output-format stream-json` against the fake and a tiny MCP
stdio server named `dev` (tool `observe(device)`), in a fresh HOME, in its own process group
which is always killed afterwards. They are slow (a few seconds each): keep scenarios short.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from fake_anthropic import (
    HANG,
    FakeAnthropic,
    HttpError,
    MessagesRequest,
    reply,
    stream_events,
    text,
    tool_use,
)

RUN_TIMEOUT_S = 90

MCP_SERVER = textwrap.dedent(
    '''
    """A tiny MCP stdio server for CLI tests: observe(device) and listDevices()."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("dev")


    @server.tool()
    def observe(device: str) -> str:
        """Describe what is on the device screen."""
        if device == "broken":
            raise ToolError("device broken is offline; call listDevices and use a listed serial")
        return f"device {device}: Expected count: 3"


    @server.tool()
    def listDevices() -> str:
        """List connected devices."""
        return "emulator-5554"


    server.run()
    '''
)


@dataclass
class CliRun:
    """What one CLI run produced."""

    exit_code: int | None
    events: list[dict]
    stderr: str
    seconds: float
    timed_out: bool
    process_group: int

    @property
    def result(self) -> dict | None:
        return next((e for e in reversed(self.events) if e.get("type") == "result"), None)

    @property
    def init(self) -> dict | None:
        return next((e for e in self.events if e.get("type") == "system" and e.get("subtype") == "init"), None)

    def blocks(self, role: str, block_type: str) -> list[dict]:
        found = []
        for event in self.events:
            if event.get("type") != role:
                continue
            content = (event.get("message") or {}).get("content")
            if isinstance(content, list):
                found.extend(b for b in content if isinstance(b, dict) and b.get("type") == block_type)
        return found


@pytest.fixture
def cli_dir(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    (tmp_path / "work").mkdir()
    (tmp_path / "dev_server.py").write_text(MCP_SERVER, encoding="utf-8")
    config = {"mcpServers": {"dev": {"command": sys.executable, "args": [str(tmp_path / "dev_server.py")]}}}
    (tmp_path / "cfg.json").write_text(json.dumps(config), encoding="utf-8")
    return tmp_path


def run_claude(
    claude: Path, cli_dir: Path, api: FakeAnthropic, *, extra: tuple[str, ...] = (), timeout_s: float = RUN_TIMEOUT_S,
    kill_after_hang_s: float | None = None,
) -> CliRun:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cli_dir / "home"),
        "ANTHROPIC_BASE_URL": api.base_url,
        "ANTHROPIC_API_KEY": "sk-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_RETRIES": "1",
        "MCP_CONNECTION_NONBLOCKING": "false",
        "MCP_CONNECT_TIMEOUT_MS": "20000",
    }
    argv = [
        str(claude), "-p", "--verbose", "--output-format", "stream-json",
        "--mcp-config", str(cli_dir / "cfg.json"), "--strict-mcp-config",
        "--allowedTools", "mcp__dev", *extra,
    ]  # fmt: skip
    started = time.monotonic()
    process = subprocess.Popen(
        argv,
        cwd=cli_dir / "work",
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    timed_out = False
    if kill_after_hang_s is not None:
        # Killed a fixed time after the API started holding a request, not a fixed time after the
        # start: on a loaded machine the CLI can take longer than any short timeout to get there.
        def kill_once_hung() -> None:
            if api.wait_for_hang(timeout=timeout_s):
                time.sleep(kill_after_hang_s)
                if process.poll() is None:
                    hang_kill.append(True)
                    _kill_group(process)

        hang_kill: list[bool] = []
        killer = threading.Thread(target=kill_once_hung, name="kill-after-hang", daemon=True)
        killer.start()
    try:
        stdout, stderr = process.communicate(b"Count the items on emulator-5554.\n", timeout=timeout_s)
        if kill_after_hang_s is not None:
            killer.join(timeout=1)
            timed_out = bool(hang_kill)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(process)
        stdout, stderr = process.communicate()
    finally:
        _kill_group(process)
    events = [json.loads(line) for line in stdout.decode().splitlines() if line.strip()]
    seconds = time.monotonic() - started
    return CliRun(process.returncode, events, stderr.decode(errors="replace"), seconds, timed_out, process.pid)


def _group_gone(process_group: int, within_s: float = 10.0) -> bool:
    """Whether no process of the group is left (killed children may need a moment to be reaped)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(process_group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def _kill_group(process: subprocess.Popen) -> None:
    """Stop the CLI and everything it started (its MCP server), by process group."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def observe_then_answer(request: MessagesRequest):
    return reply(text("Let me look."), tool_use(request.tool_named("observe"), {"device": "emulator-5554"}))


def final_answer(request: MessagesRequest):
    (result,) = request.tool_results()
    assert "Expected count: 3" in result.text, result
    return reply(text("I checked the device.\nEXPECTED_COUNT: 3"))


# --- the fake on its own (fast) -------------------------------------------------------------


def _post(api: FakeAnthropic, body: dict) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"{api.base_url}/v1/messages?beta=true", data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _sse_payloads(raw: bytes) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in raw.decode().splitlines() if line.startswith("data: ")]


def test_stream_carries_text_and_tool_use_with_usage_and_stop_reason() -> None:
    message = reply(text("Looking."), tool_use("mcp__dev__observe", {"device": "emulator-5554"}), usage={"input_tokens": 5000})
    payloads = [json.loads(e.decode().split("data: ", 1)[1]) for e in stream_events(message, model="m", message_id="msg_1")]
    kinds = [p["type"] for p in payloads]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert payloads[0]["message"]["usage"]["input_tokens"] == 5000
    tool_start = next(p for p in payloads if p["type"] == "content_block_start" and p["content_block"]["type"] == "tool_use")
    partial = "".join(p["delta"]["partial_json"] for p in payloads if p["type"] == "content_block_delta" and p["index"] == tool_start["index"])
    assert json.loads(partial) == {"device": "emulator-5554"}
    streamed_text = "".join(p["delta"]["text"] for p in payloads if p.get("delta", {}).get("type") == "text_delta")
    assert streamed_text == "Looking."
    assert payloads[-2]["delta"]["stop_reason"] == "tool_use"
    assert payloads[-2]["usage"]["input_tokens"] == 5000


def test_fake_answers_turns_in_order_side_requests_and_errors() -> None:
    script = [lambda r: reply(text(f"turn 0 saw {r.tools}")), lambda r: HttpError(529, "overloaded_error", "busy")]
    with FakeAnthropic(script) as api:
        tools = [{"name": "mcp__dev__observe", "input_schema": {"type": "object"}}]
        status, body = _post(api, {"stream": True, "tools": tools, "messages": [{"role": "user", "content": "hi"}]})
        assert status == 200
        assert "turn 0 saw ['mcp__dev__observe']" in "".join(
            p["delta"].get("text", "") for p in _sse_payloads(body) if p["type"] == "content_block_delta"
        )
        status, body = _post(api, {"stream": False, "messages": [{"role": "user", "content": "title?"}]})
        assert status == 200 and json.loads(body)["content"][0]["text"] == "Fake session"
        status, body = _post(api, {"stream": True, "tools": tools, "messages": []})
        assert status == 529 and json.loads(body)["error"]["type"] == "overloaded_error"
        status, body = _post(api, {"stream": False, "tools": tools, "messages": []})
        assert status == 200 and json.loads(body)["content"][0]["text"] == "Done."
    assert [(r.turn, r.outcome) for r in api.requests] == [(0, "reply"), (None, "side"), (1, "http 529"), (2, "reply")]


def test_request_helpers_read_tools_and_tool_results() -> None:
    request = MessagesRequest(
        "POST",
        "/v1/messages",
        {},
        {
            "tools": [{"name": "Read"}, {"name": "mcp__dev__observe"}],
            "messages": [
                {"role": "user", "content": "prompt"},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "boom"}], "is_error": True},
                ]},
            ],
        },
    )
    assert request.tool_named("observe") == "mcp__dev__observe"
    with pytest.raises(LookupError, match="no tool named 'tapOn'"):
        request.tool_named("tapOn")
    assert [(r.tool_use_id, r.text, r.is_error) for r in request.tool_results()] == [("t1", "boom", True)]


# --- the real CLI against the fake (slow) ---------------------------------------------------


@pytest.mark.claude_cli
def test_cli_solves_with_a_tool_call_then_a_final_answer(claude_bin: Path, cli_dir: Path) -> None:
    with FakeAnthropic([observe_then_answer, final_answer]) as api:
        run = run_claude(claude_bin, cli_dir, api)
    assert run.init is not None and run.init["mcp_servers"] == [{"name": "dev", "status": "connected"}], run.stderr
    (call,) = run.blocks("assistant", "tool_use")
    assert call["name"] == "mcp__dev__observe" and call["input"] == {"device": "emulator-5554"}
    (result_block,) = run.blocks("user", "tool_result")
    assert result_block["tool_use_id"] == call["id"] and not result_block.get("is_error")
    assert run.result["subtype"] == "success" and run.result["is_error"] is False
    assert run.result["result"].endswith("EXPECTED_COUNT: 3")
    assert run.exit_code == 0
    assert [r.turn for r in api.agent_requests] == [0, 1]
    print(f"solves: {run.seconds:.1f}s")


@pytest.mark.claude_cli
def test_cli_answers_without_tools(claude_bin: Path, cli_dir: Path) -> None:
    with FakeAnthropic([lambda r: reply(text("EXPECTED_COUNT: 3"))]) as api:
        run = run_claude(claude_bin, cli_dir, api)
    assert run.blocks("assistant", "tool_use") == []
    assert run.result["subtype"] == "success" and run.result["num_turns"] == 1
    assert run.result["result"] == "EXPECTED_COUNT: 3" and run.exit_code == 0
    print(f"text only: {run.seconds:.1f}s")


@pytest.mark.claude_cli
def test_cli_recovers_from_a_tool_error(claude_bin: Path, cli_dir: Path) -> None:
    def retry_after_error(request: MessagesRequest):
        (failed,) = request.tool_results()
        assert failed.is_error and "offline" in failed.text
        return observe_then_answer(request)

    script = [
        lambda r: reply(tool_use(r.tool_named("observe"), {"device": "broken"})),
        retry_after_error,
        final_answer,
    ]
    with FakeAnthropic(script) as api:
        run = run_claude(claude_bin, cli_dir, api)
    errors = [b.get("is_error", False) for b in run.blocks("user", "tool_result")]
    assert errors == [True, False]
    assert run.result["subtype"] == "success" and run.result["is_error"] is False and run.exit_code == 0
    print(f"tool error then recovery: {run.seconds:.1f}s")


@pytest.mark.claude_cli
def test_cli_hangs_when_the_api_never_answers(claude_bin: Path, cli_dir: Path) -> None:
    with FakeAnthropic([lambda r: HANG]) as api:
        run = run_claude(claude_bin, cli_dir, api, kill_after_hang_s=5)
        assert api.hung == 1
    # Five seconds after its request was held the CLI was still waiting (no retry, no result): killed.
    assert run.timed_out and run.result is None
    assert run.init is not None, "the CLI got as far as init before waiting on the API"
    assert _group_gone(run.process_group), "the CLI and its MCP server must be gone after the group kill"
    print(f"hang (killed 5 s after the request was held): {run.seconds:.1f}s")


@pytest.mark.claude_cli
def test_cli_stops_when_the_budget_is_exceeded(claude_bin: Path, cli_dir: Path) -> None:
    big = {"input_tokens": 2_000_000, "output_tokens": 200_000}
    script = [lambda r: reply(tool_use(r.tool_named("observe"), {"device": "emulator-5554"}), usage=big)]
    with FakeAnthropic(script, after_script=lambda r: reply(text("EXPECTED_COUNT: 3"), usage=big)) as api:
        run = run_claude(claude_bin, cli_dir, api, extra=("--max-budget-usd", "0.0001"))
    assert run.result["subtype"] == "error_max_budget_usd" and run.result["is_error"] is True
    assert run.exit_code == 1
    print(f"budget exceeded: {run.seconds:.1f}s")


@pytest.mark.claude_cli
def test_cli_reports_an_api_500(claude_bin: Path, cli_dir: Path) -> None:
    with FakeAnthropic([], after_script=lambda r: HttpError(500)) as api:
        run = run_claude(claude_bin, cli_dir, api)
    assert run.result["is_error"] is True and run.result.get("api_error_status") == 500
    assert run.exit_code == 1
    assert len(api.agent_requests) == 2, "CLAUDE_CODE_MAX_RETRIES=1: one try and one retry"
    print(f"API 500: {run.seconds:.1f}s")
