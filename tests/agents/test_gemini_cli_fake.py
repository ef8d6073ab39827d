"""Tests for the fake Gemini API, and the real Gemini CLI driven through it.

The fast tests at the top check the fake on its own. The `agent_cli` tests run the pinned
`gemini -p --output-format stream-json` against it with the tiny MCP stdio server `dev`
(tests/clirun.py), in a fresh HOME = GEMINI_CLI_HOME whose settings.json
(geminicli.gemini_settings) leaves that server as the only way out; each run's process group
is killed afterwards. They skip with an install hint when the CLI is missing
(AGENTBENCH_NPM_CACHE, .ci/run). The CLI takes about ten seconds to start.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from clirun import MCP_SERVER, PROMPT, CliRun, group_gone, run_cli
from fake_gemini import FakeGemini, GeminiRequest, HttpError, function_call, reply, stream_chunks, text
from geminicli import BOUNDARY_MARKER, GEMINI_MODEL, gemini_settings

KEY = "agentbench-SENTINEL-gemini-key"
RUN_TIMEOUT_S = 180
TOOLS = [{"functionDeclarations": [{"name": "mcp_dev_observe"}, {"name": "mcp_dev_listDevices"}]}]


def _post(api: FakeGemini, rpc: str, body: dict, *, key: str = KEY) -> tuple[int, bytes]:
    query = "?alt=sse" if rpc == "streamGenerateContent" else ""
    request = urllib.request.Request(
        f"{api.base_url}/v1beta/models/{GEMINI_MODEL}:{rpc}{query}", data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "x-goog-api-key": key},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _sse_payloads(raw: bytes) -> list[dict]:
    return [json.loads(line[len("data: "):]) for line in raw.decode().splitlines() if line.startswith("data: ")]


# --- the fake on its own (fast) -------------------------------------------------------------


def test_stream_chunks_carry_text_pieces_a_whole_function_call_and_usage_last() -> None:
    answer = reply(text("x" * 50), function_call("mcp_dev_observe", {"device": "emulator-5554"}), usage={"promptTokenCount": 5000})
    chunks = stream_chunks(answer, model_version="gemini-2.5-pro", response_id="r1")
    parts = [chunk["candidates"][0]["content"]["parts"][0] for chunk in chunks]
    assert "".join(p.get("text", "") for p in parts) == "x" * 50 and len(chunks) == 3
    assert parts[-1] == {"functionCall": {"name": "mcp_dev_observe", "args": {"device": "emulator-5554"}}}
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP" and "finishReason" not in chunks[0]["candidates"][0]
    assert "usageMetadata" not in chunks[0]
    assert chunks[-1]["usageMetadata"] == {"promptTokenCount": 5000, "candidatesTokenCount": 20, "totalTokenCount": 5020}
    assert {chunk["modelVersion"] for chunk in chunks} == {"gemini-2.5-pro"}


def test_fake_answers_turns_in_order_refuses_other_keys_and_logs_broken_scripts() -> None:
    def broken(request: GeminiRequest):
        return reply(function_call(request.tool_named("tapOn")))

    script = [lambda r: reply(text(f"saw {r.tools}")), lambda r: HttpError(429, "Resource has been exhausted"), broken]
    with FakeGemini(script, api_key=KEY) as api:
        status, body = _post(api, "streamGenerateContent", {"contents": [], "tools": TOOLS})
        assert status == 200
        assert "saw ['mcp_dev_observe', 'mcp_dev_listDevices']" in "".join(
            p["candidates"][0]["content"]["parts"][0].get("text", "") for p in _sse_payloads(body)
        )
        status, body = _post(api, "streamGenerateContent", {"contents": [], "tools": TOOLS}, key="other")
        assert status == 400 and json.loads(body)["error"]["status"] == "INVALID_ARGUMENT"
        status, body = _post(api, "generateContent", {"contents": []})
        assert status == 200 and json.loads(body)["candidates"][0]["content"]["parts"] == [{"text": "Fake side answer"}]
        status, body = _post(api, "countTokens", {"contents": []})
        assert status == 200 and json.loads(body) == {"totalTokens": 100}
        status, body = _post(api, "streamGenerateContent", {"contents": [], "tools": TOOLS})
        assert status == 429 and json.loads(body)["error"] == {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}
        status, body = _post(api, "streamGenerateContent", {"contents": [], "tools": TOOLS})
        assert status == 500 and "tapOn" in json.loads(body)["error"]["message"]
    assert [(r.rpc, r.turn, r.outcome) for r in api.requests] == [
        ("streamGenerateContent", 0, "reply"), ("streamGenerateContent", None, "bad key"), ("generateContent", None, "side"),
        ("countTokens", None, "countTokens"), ("streamGenerateContent", 1, "http 429"), ("streamGenerateContent", 2, "script error"),
    ]
    assert len(api.script_errors) == 1 and "no function named 'tapOn'" in api.script_errors[0]


def test_request_helpers_read_declared_functions_and_the_last_function_responses() -> None:
    request = GeminiRequest("POST", "/v1beta/models/m:streamGenerateContent", {}, {
        "tools": TOOLS,
        "contents": [
            {"role": "user", "parts": [{"text": "<session_context>...</session_context>"}, {"text": "Count."}]},
            {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "mcp_dev_observe", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "mcp_dev_observe",
                                                              "response": {"output": "<untrusted_context>\n3 items\n</untrusted_context>"}}}]},
        ],
    })
    assert request.tool_named("observe") == "mcp_dev_observe"
    (response,) = request.function_responses()
    assert (response.name, response.id, response.is_error) == ("mcp_dev_observe", "c1", False)
    assert "3 items" in response.text
    assert request.last_user_text() == ""  # the last user content holds only the function response


# --- the real CLI against the fake (slow) ---------------------------------------------------


def run_gemini(gemini: Path, tmp_path: Path, api: FakeGemini, *extra: str) -> CliRun:
    """`gemini -p --output-format stream-json` against the fake, with a fresh HOME = GEMINI_CLI_HOME."""
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".gemini").mkdir(parents=True)
    work.mkdir()
    (work / BOUNDARY_MARKER).touch()
    server = tmp_path / "dev_server.py"
    server.write_text(MCP_SERVER, encoding="utf-8")
    settings = gemini_settings(mcp_command=sys.executable, mcp_args=[str(server)])
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=1), encoding="utf-8")
    env = {
        "PATH": "/usr/bin:/bin", "HOME": str(home), "GEMINI_CLI_HOME": str(home), "TMPDIR": str(tmp_path),
        "GOOGLE_GEMINI_BASE_URL": api.base_url, "GEMINI_API_KEY": KEY,
        # System settings files that do not exist: nothing from /etc/gemini-cli is merged in.
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(tmp_path / "system-settings.json"),
        "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(tmp_path / "system-defaults.json"),
    }
    argv = [str(gemini), "-p", PROMPT, "--output-format", "stream-json", "--skip-trust", "-e", "none", "-m", GEMINI_MODEL, *extra]
    return run_cli(argv, cwd=work, env=env, timeout_s=RUN_TIMEOUT_S)


def assistant_text_after_last_tool(run: CliRun) -> str:
    """The final answer: the assistant `delta` chunks after the last tool result, joined."""
    tail: list[str] = []
    for event in run.events:
        if event.get("type") == "tool_result":
            tail = []
        elif event.get("type") == "message" and event.get("role") == "assistant":
            tail.append(event["content"])
    return "".join(tail)


@pytest.mark.agent_cli
@pytest.mark.e2e
def test_gemini_calls_the_mcp_tools_and_answers(gemini_bin: Path, tmp_path: Path) -> None:
    def final(request: GeminiRequest):
        (response,) = request.function_responses()
        assert response.name == "mcp_dev_observe" and "Expected count: 3" in response.text, response
        return reply(text("I checked the device and counted the items on its screen.\nEXPECTED_COUNT: 3"))

    script = [
        lambda r: reply(text("Let me list the devices."), function_call(r.tool_named("listDevices"))),
        lambda r: reply(function_call(r.tool_named("observe"), {"device": "emulator-5554"})),
        final,
    ]
    with FakeGemini(script, api_key=KEY) as api:
        run = run_gemini(gemini_bin, tmp_path, api)
    assert api.script_errors == [] and run.exit_code == 0, run.stderr
    assert api.agent_requests[0].tools == ["mcp_dev_observe", "mcp_dev_listDevices"], "only the MCP server's tools"
    assert run.events[0]["type"] == "init" and run.events[0]["model"] == GEMINI_MODEL
    uses = run.of_type("tool_use")
    assert [u["tool_name"] for u in uses] == ["mcp_dev_listDevices", "mcp_dev_observe"]
    assert uses[1]["parameters"] == {"device": "emulator-5554"}
    results = run.of_type("tool_result")
    assert [(r["tool_id"], r["status"]) for r in results] == [(u["tool_id"], "success") for u in uses]
    assert results[1]["output"] == "device emulator-5554: Expected count: 3"
    assert assistant_text_after_last_tool(run).endswith("EXPECTED_COUNT: 3")
    (result,) = run.of_type("result")
    assert result["status"] == "success" and result["stats"]["tool_calls"] == 2
    assert result["stats"]["input_tokens"] == 3 * 1000 and result["stats"]["output_tokens"] == 3 * 20
    assert all(r.rpc == "streamGenerateContent" and r.model == GEMINI_MODEL for r in api.requests)
    assert KEY not in run.stdout + run.stderr
    assert list(tmp_path.glob("gemini-client-error-*")) == []
    assert group_gone(run.process_group), "the CLI and its MCP server must be gone"


@pytest.mark.agent_cli
@pytest.mark.e2e
def test_gemini_own_shell_and_file_tools_are_not_registered_even_in_yolo_mode(gemini_bin: Path, tmp_path: Path) -> None:
    script = [
        lambda r: reply(function_call("run_shell_command", {"command": "adb devices", "description": "list devices"})),
        lambda r: reply(function_call("write_file", {"file_path": "notes.txt", "content": "count 3"})),
        lambda r: reply(text("EXPECTED_COUNT: 3")),
    ]
    with FakeGemini(script, api_key=KEY) as api:
        run = run_gemini(gemini_bin, tmp_path, api, "--approval-mode", "yolo")
    assert api.script_errors == [] and run.exit_code == 0, run.stderr
    results = run.of_type("tool_result")
    assert [(r["status"], r["error"]["type"]) for r in results] == [("error", "tool_not_registered")] * 2
    assert not (tmp_path / "work" / "notes.txt").exists()
    (result,) = run.of_type("result")
    assert result["status"] == "success" and assistant_text_after_last_tool(run) == "EXPECTED_COUNT: 3"
