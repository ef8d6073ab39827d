"""Tests for agentbench-replay: Claude's command line, plans, permissions, and the stream-json it writes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pytest_agentbench.agents.cli_options import UsageError, parse_args, split_tool_list
from pytest_agentbench.agents.plan import ToolStep, WaitStep, find_plan_path, load_plan, parse_plan
from pytest_agentbench.agents.mcp_client import device_from_listing, rule_matches
from pytest_agentbench.agents.replay import run
from pytest_agentbench.agents.stream import REPLAY_VERSION
from pytest_agentbench.errors import SuiteError
from pytest_agentbench.audit.transcript import McpServerStatus, parse_lines

REPO = Path(__file__).resolve().parents[2]
REFERENCE = Path(__file__).parents[1] / "data" / "claude-code-stream"

# A tiny MCP stdio server: a phone with a counter. Every call is appended to $CALL_LOG so the
# tests see what really reached the server.
TINY_SERVER = '''
import json, os
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("tiny")
state = {"count": 0}

def log(tool, **args):
    with open(os.environ["CALL_LOG"], "a") as handle:
        handle.write(json.dumps({"tool": tool, **args}) + "\\n")

def check(device):
    if device != "dev0":
        raise ToolError(f"device {device!r} is not connected; listDevices shows dev0")

@server.tool(structured_output=False)
def listDevices() -> str:
    """List devices."""
    log("listDevices")
    return "dev0 device"

@server.tool(structured_output=False)
def observe(device: str) -> str:
    """Show the screen."""
    log("observe", device=device)
    check(device)
    return f"Count: {state['count']}"

@server.tool()
def tapOn(text: str, device: str) -> str:
    """Tap a text."""
    log("tapOn", text=text, device=device)
    check(device)
    if text != "Add Item":
        raise ToolError(f"no element with text {text!r}; visible texts: Add Item")
    state["count"] += 1
    return f"tapped; Count: {state['count']}"

if __name__ == "__main__":
    server.run()
'''


@pytest.fixture
def tiny(tmp_path):
    """Paths for a run against the tiny server: its MCP config and its call log."""
    server = tmp_path / "tiny_server.py"
    server.write_text(TINY_SERVER)
    log = tmp_path / "calls.jsonl"
    config = {"mcpServers": {"dev": {"command": sys.executable, "args": [str(server)],
                                     "env": {"CALL_LOG": str(log), "AGENTBENCH_DEVICE_SERIAL": "dev0"}}}}
    config_path = tmp_path / "mcp.json"
    config_path.write_text(json.dumps(config))
    return {"config": config_path, "log": log, "dir": tmp_path}


def write_plan(directory: Path, data: dict) -> Path:
    path = directory / "plan.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def replay(argv, *, prompt="Do the task.", environ=None, cwd="/work/here"):
    """Run agentbench-replay in-process; returns (exit status, stdout, stderr)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    status = run(argv, stdin=io.StringIO(prompt), stdout=stdout, stderr=stderr, environ=environ or {}, cwd=cwd)
    return status, stdout.getvalue(), stderr.getvalue()


def base_argv(config: Path, *extra: str) -> list[str]:
    return ["-p", "--verbose", "--output-format", "stream-json", "--mcp-config", str(config), "--strict-mcp-config",
            "--setting-sources", "project,local", *extra]


def calls_seen(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


COUNTER_PLAN = {
    "steps": [
        {"tool": "observe", "args": {"device": "{device}"}},
        {"tool": "tapOn", "args": {"text": "Add Item", "device": "{device}"}},
        {"wait": 0},
        {"tool": "tapOn", "args": {"text": "Ad Item", "device": "{device}"}, "expect_error": True},
        {"tool": "tapOn", "args": {"text": "Add Item", "device": "{device}"}},
    ],
    "final": "Tapped twice.\nCOUNT: 2",
}


# ---- command line -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, key, value",
    [
        (["-p", "--allowedTools", "mcp__a", "mcp__b", "--verbose"], "allowedTools", ["mcp__a", "mcp__b"]),
        (["--allowed-tools", "a,b", "--allowedTools", "c"], "allowedTools", ["a,b", "c"]),
        (["--disallowedTools=Bash", "-p"], "disallowedTools", ["Bash"]),
        (["--mcp-config", "a.json", "b.json"], "mcp-config", ["a.json", "b.json"]),
        (["--model", "claude-x"], "model", "claude-x"),
        (["--append-system-prompt", "-starts with dash"], "append-system-prompt", "-starts with dash"),
        (["--max-budget-usd", "2"], "max-budget-usd", "2"),
        (["--max-turns", "3"], "max-turns", "3"),
        (["--setting-sources", "project,local"], "setting-sources", "project,local"),
        (["-d"], "debug", True),
        (["--resume", "abc"], "resume", "abc"),
        (["--print"], "print", True),
    ],
)
def test_parse_args_accepts_claude_options(argv, key, value):
    assert parse_args(argv).get(key) == value


def test_parse_args_positional_prompt_after_options():
    parsed = parse_args(["-p", "--model", "m", "hello there"])
    assert parsed.prompt == "hello there"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["-p", "--foo"], "error: unknown option '--foo'"),
        (["-x"], "error: unknown option '-x'"),
        (["--foo=1"], "error: unknown option '--foo'"),
        (["--verbose=yes"], "error: unknown option '--verbose=yes'"),
        (["--model"], "error: option '--model <model>' argument missing"),
        (["--max-turns"], "error: option '--max-turns <turns>' argument missing"),
        (["--allowedTools", "--verbose"], "error: option '--allowed-tools <tools...>' argument missing"),
        (["--output-format", "xml"],
         "error: option '--output-format <format>' argument 'xml' is invalid. Allowed choices are text, json, stream-json."),
        (["a", "b"], "error: too many arguments. Expected 1 argument but got 2."),
    ],
)
def test_parse_args_rejects_like_commander(argv, message):
    with pytest.raises(UsageError) as excinfo:
        parse_args(argv)
    assert str(excinfo.value) == message


@pytest.mark.parametrize(
    "values, rules",
    [
        (["mcp__a mcp__b"], ["mcp__a", "mcp__b"]),
        (["mcp__a,mcp__b", "Edit"], ["mcp__a", "mcp__b", "Edit"]),
        (["Bash(git *) Edit"], ["Bash(git *)", "Edit"]),
        ([" , "], []),
    ],
)
def test_split_tool_list(values, rules):
    assert split_tool_list(values) == rules


@pytest.mark.parametrize(
    "rule, tool, matches",
    [
        ("mcp__agentbench", "mcp__agentbench__observe", True),
        ("mcp__agentbench", "mcp__agentbench2__observe", False),
        ("mcp__agentbench__observe", "mcp__agentbench__observe", True),
        ("mcp__agentbench__observe", "mcp__agentbench__tapOn", False),
        ("mcp__agentbench__*", "mcp__agentbench__tapOn", True),
        ("Bash", "Bash", True),
        ("Bash(git *)", "Bash", False),
        ("openLink", "mcp__agentbench__openLink", False),
    ],
)
def test_rule_matches(rule, tool, matches):
    assert rule_matches(rule, tool) is matches


@pytest.mark.parametrize(
    "argv, stdin, message",
    [
        (["-p", "--output-format", "stream-json"], "x", "Error: When using --print, --output-format=stream-json requires --verbose"),
        (["-p", "--verbose", "--output-format", "stream-json"], "  \n", "Error: Input must be provided either through stdin"),
        (["--verbose"], "x", "has only print mode"),
        (["-p", "--bogus"], "x", "error: unknown option '--bogus'"),
        (["-p", "--max-budget-usd", "abc"], "x", "error: --max-budget-usd must be a positive number greater than 0"),
        (["-p", "--max-turns", "0"], "x", "error: --max-turns must be a positive integer"),
        (["-p", "--mcp-config", "/nonexistent/mcp.json"], "x", "Error: Invalid MCP configuration:\nMCP config file not found: /nonexistent/mcp.json"),
        (["-p", "--mcp-config", "{not json"], "x", "Error: Invalid MCP configuration:"),
        (["-p"], "x", "Error: no plan: pass --plan FILE"),
    ],
)
def test_usage_errors_exit_1_with_nothing_on_stdout(argv, stdin, message):
    status, out, err = replay(argv, prompt=stdin)
    assert status == 1
    assert out == ""
    assert message in err


def test_version_names_itself_in_claudes_format():
    status, out, _ = replay(["--version"])
    assert status == 0
    assert out == f"{REPLAY_VERSION} (agentbench-replay)\n"
    assert "agentbench-replay" in REPLAY_VERSION


def test_help_lists_the_harness_flags():
    status, out, _ = replay(["-h"])
    assert status == 0
    for flag in ("--allowedTools", "--mcp-config", "--strict-mcp-config", "--plan", "--replay-transcript"):
        assert flag in out


# ---- plans ------------------------------------------------------------------------------


def test_plan_parses_steps(tmp_path):
    plan = parse_plan(COUNTER_PLAN, tmp_path / "p.yml")
    assert plan.steps[0] == ToolStep("observe", {"device": "{device}"})
    assert plan.steps[2] == WaitStep(0.0)
    assert plan.steps[3].expect_error is True
    assert plan.uses_placeholder("device") and not plan.uses_placeholder("packageName")


@pytest.mark.parametrize(
    "data, problem",
    [
        ([1, 2], "a plan must be a mapping"),
        ({"steps": [{"tool": "observe"}]}, "final: expected the final answer"),
        ({"final": "x"}, "steps: expected a non-empty list"),
        ({"steps": [{"tool": "observe", "argz": {}}], "final": "x"}, "steps[0]: unknown key(s) 'argz'"),
        ({"steps": [{"tool": 3}], "final": "x"}, "steps[0].tool: expected a tool name"),
        ({"steps": [{"tool": "observe", "args": [1]}], "final": "x"}, "steps[0].args: expected a mapping"),
        ({"steps": [{"wait": "soon"}], "final": "x"}, "steps[0].wait: expected seconds"),
        ({"steps": [{"wait": -1}], "final": "x"}, "steps[0].wait: expected seconds"),
        ({"steps": [{"tool": "a", "expect_error": "yes"}], "final": "x"}, "steps[0].expect_error: expected true or false"),
        ({"steps": ["observe"], "final": "x"}, "steps[0]: expected {tool: NAME"),
        ({"steps": [{"tool": "a"}], "final": "x", "extra": 1}, "unknown key(s) 'extra'"),
        ({"steps": [{"tool": "a", "capture": {"name": "code", "pattern": "(\\d"}}], "final": "x"},
         "steps[0].capture.pattern: expected a regular expression, got '(\\\\d'"),
        ({"steps": [{"tool": "a", "capture": {"name": "2x", "pattern": "x"}}], "final": "x"},
         "steps[0].capture.name: expected a placeholder name"),
        ({"steps": [{"tool": "a", "capture": "code"}], "final": "x"}, "steps[0].capture: expected {name: NAME, pattern: REGEX}"),
        ({"steps": [{"tool": "a", "capture": {"name": "c", "pattern": "x", "group": 2}}], "final": "x"},
         "steps[0].capture: unknown key(s) 'group'"),
        ({"steps": [{"tool": "a"}], "final": "x", "fromPrompt": "c"}, "fromPrompt: expected a mapping of placeholder names to regular expressions"),
        ({"steps": [{"tool": "a"}], "final": "x", "fromPrompt": [{"name": "c", "pattern": "(x"}]},
         "fromPrompt.c.pattern: expected a regular expression"),
    ],
)
def test_bad_plans_name_file_and_key(tmp_path, data, problem):
    path = tmp_path / "bad.yml"
    with pytest.raises(SuiteError) as excinfo:
        parse_plan(data, path)
    assert str(path) in str(excinfo.value)
    assert problem in str(excinfo.value)


def test_load_plan_reports_yaml_errors(tmp_path):
    path = tmp_path / "p.yml"
    path.write_text("steps: [\n")
    with pytest.raises(SuiteError, match="not valid YAML"):
        load_plan(path)


@pytest.mark.parametrize(
    "explicit, environ, expected",
    [
        ("mine.yml", {"AGENTBENCH_SUITE_FILE": "/r/benchmark/agent/suites/wifi-on.yml"}, "mine.yml"),
        (None, {"AGENTBENCH_SUITE_FILE": "/r/benchmark/agent/suites/wifi-on.yml"}, "/r/benchmark/agent/plans/wifi-on.yml"),
        (None, {"AGENTBENCH_SUITE_FILE": "/r/b/suites/x.yml", "AGENTBENCH_SUITE": "ux-flow"}, "/r/b/plans/ux-flow.yml"),
        (None, {"AGENTBENCH_PLAN": "/p.yml"}, "/p.yml"),
        (None, {}, None),
    ],
)
def test_find_plan_path(explicit, environ, expected):
    found = find_plan_path(explicit, environ)
    assert (str(found) if found else None) == expected


@pytest.mark.parametrize("suite", sorted(path.stem for path in (REPO / "benchmark" / "agent" / "suites").glob("*.yml")))
def test_committed_plans_load_and_answer_the_suite(suite):
    plan = load_plan(REPO / "benchmark" / "agent" / "plans" / f"{suite}.yml")
    assert plan.tool_steps and plan.uses_placeholder("device")
    # The audit wants KEY: value answers as the reply's last lines.
    assert plan.final.splitlines()[-1].split(":")[0].isupper()


@pytest.mark.parametrize(
    "structured, text, serial",
    [
        (None, "emulator-5554 device\n", "emulator-5554"),
        (None, "127.0.0.1:40001\tdevice", "127.0.0.1:40001"),
        ({"devices": [{"serial": "abc123"}]}, "", "abc123"),
        ({"result": "R58M123456 device"}, "", "R58M123456"),
        (None, '["dev-1234567"]', "dev-1234567"),
        (None, "", None),
    ],
)
def test_device_from_listing(structured, text, serial):
    assert device_from_listing(structured, text) == serial


# ---- runs against a real MCP stdio server ---------------------------------------------------


def test_plan_plays_through_the_server_and_writes_claude_shaped_stream(tiny):
    plan = write_plan(tiny["dir"], COUNTER_PLAN)
    status, out, err = replay(base_argv(tiny["config"], "--allowedTools", "mcp__dev", "--plan", str(plan)))
    assert status == 0, err

    assert calls_seen(tiny["log"]) == [
        {"tool": "observe", "device": "dev0"},
        {"tool": "tapOn", "text": "Add Item", "device": "dev0"},
        {"tool": "tapOn", "text": "Ad Item", "device": "dev0"},
        {"tool": "tapOn", "text": "Add Item", "device": "dev0"},
    ]
    transcript = parse_lines(out.splitlines(keepends=True))
    assert transcript.unparseable == ()
    assert transcript.init.mcp_servers == (McpServerStatus("dev", "connected"),)
    assert set(transcript.init.tools) == {"mcp__dev__listDevices", "mcp__dev__observe", "mcp__dev__tapOn"}
    assert transcript.init.claude_code_version == REPLAY_VERSION
    assert transcript.init.cwd == "/work/here"
    assert [(c.name, c.is_error) for c in transcript.tool_calls] == [
        ("mcp__dev__observe", False), ("mcp__dev__tapOn", False), ("mcp__dev__tapOn", True), ("mcp__dev__tapOn", False),
    ]
    assert transcript.tool_calls[0].result_text == "Count: 0"
    assert transcript.tool_calls[2].result_text.startswith("Error executing tool tapOn: no element with text 'Ad Item'")
    # tapOn returns structured content: Claude sends it on as compact JSON text.
    assert transcript.tool_calls[3].result_text == '{"result":"tapped; Count: 2"}'
    assert transcript.final_text == "Tapped twice.\nCOUNT: 2"
    result = transcript.result
    assert (result.subtype, result.is_error, result.num_turns, result.result) == ("success", False, 5, "Tapped twice.\nCOUNT: 2")
    assert result.total_cost_usd == 0 and set(result.usage.values()) == {0}
    assert result.permission_denials == ()
    # The messages were written by the script, whatever model was requested; init echoes the request.
    assert transcript.observed_model == "agentbench-replay"
    assert "expected" not in err  # every step came out as the plan said


def _key_sets(lines: list[str]) -> dict[tuple[str, str], set[str]]:
    """Top-level (and message-level) key sets per event kind."""
    keys: dict[tuple[str, str], set[str]] = {}
    for line in lines:
        event = json.loads(line)
        kind = (event["type"], event.get("subtype") or ("tool_use" if "tool_use_meta" in event else ""))
        keys.setdefault(kind, set()).update(event)
        if isinstance(event.get("message"), dict):
            keys.setdefault((event["type"], "message"), set()).update(event["message"])
    return keys


def test_a_capture_carries_a_value_read_off_the_device_into_later_calls_and_the_answer(tiny):
    # The count is what the device shows; the plan never holds it (as a code random per run).
    plan = write_plan(tiny["dir"], {"steps": [
        {"tool": "tapOn", "args": {"text": "Add Item", "device": "{device}"}},
        {"tool": "observe", "args": {"device": "{device}"}, "capture": {"name": "count", "pattern": r"Count: (\d+)"}},
        {"tool": "observe", "args": {"device": "{device}"}, "capture": {"name": "missing", "pattern": "no such text"}},
        {"tool": "tapOn", "args": {"text": "Add Item {count}", "device": "{device}"}, "expect_error": True},
    ], "final": "COUNT: {count}\nOTHER: {missing}"})
    status, out, err = replay(base_argv(tiny["config"], "--allowedTools", "mcp__dev", "--plan", str(plan)))
    assert status == 0, err
    assert calls_seen(tiny["log"])[-1] == {"tool": "tapOn", "text": "Add Item 1", "device": "dev0"}
    transcript = parse_lines(out.splitlines(keepends=True))
    # A capture that found nothing leaves its placeholder as written and says so on stderr.
    assert transcript.final_text == "COUNT: 1\nOTHER: {missing}"
    assert "capture 'missing' found no match of /no such text/" in err


def test_from_prompt_reads_an_instances_drawn_values_off_the_prompt_into_calls_and_the_answer(tiny):
    # A seeded instance's values reach an agent only through its prompt; the plan reads them there.
    plan = write_plan(tiny["dir"], {
        "fromPrompt": [{"name": "label", "pattern": r'the button "([^"]+)"'}, {"name": "missing", "pattern": "no such text"}],
        "steps": [{"tool": "tapOn", "args": {"text": "{label}", "device": "{device}"}}],
        "final": "TAPPED: {label}\nOTHER: {missing}"})
    status, out, err = replay(base_argv(tiny["config"], "--allowedTools", "mcp__dev", "--plan", str(plan)),
                              prompt='Tap the button "Add Item" once.')
    assert status == 0, err
    assert calls_seen(tiny["log"])[-1] == {"tool": "tapOn", "text": "Add Item", "device": "dev0"}
    assert parse_lines(out.splitlines(keepends=True)).final_text == "TAPPED: Add Item\nOTHER: {missing}"
    assert "fromPrompt.missing: /no such text/ matched nothing in the prompt" in err


def test_event_and_field_names_match_claude_code(tiny):
    plan = write_plan(tiny["dir"], {"steps": [{"tool": "observe", "args": {"device": "{device}"}}], "final": "ok"})
    status, out, _ = replay(base_argv(tiny["config"], "--allowedTools", "mcp__dev", "--plan", str(plan)))
    assert status == 0
    ours = _key_sets(out.splitlines())
    reference = _key_sets((REFERENCE / "ok_quiet.jsonl").read_text().splitlines())
    assert ours == reference


@pytest.mark.parametrize(
    "permission_args, expected_text, denied",
    [
        # Disallowed: the tool is gone, as for Bash in bash_disallowed.jsonl; not a denial.
        (["--allowedTools", "mcp__dev", "--disallowedTools", "mcp__dev__tapOn"],
         "<tool_use_error>Error: No such tool available: mcp__dev__tapOn</tool_use_error>", False),
        # Outside --allowedTools: a permission denial, as for Write in write_not_allowed.jsonl.
        (["--allowedTools", "mcp__dev__observe"],
         "Claude requested permissions to use mcp__dev__tapOn, but you haven't granted it yet.", True),
        # No --allowedTools at all: print mode cannot ask, so MCP tools are denied.
        ([], "Claude requested permissions to use mcp__dev__tapOn, but you haven't granted it yet.", True),
    ],
)
def test_permissions_as_claude_enforces_them(tiny, permission_args, expected_text, denied):
    plan = write_plan(tiny["dir"], {"steps": [{"tool": "tapOn", "args": {"text": "Add Item", "device": "{device}"}}], "final": "x"})
    status, out, _ = replay(base_argv(tiny["config"], *permission_args, "--plan", str(plan)))
    assert status == 0
    transcript = parse_lines(out.splitlines())
    call = transcript.tool_calls[0]
    assert (call.result_text, call.is_error) == (expected_text, True)
    assert calls_seen(tiny["log"]) == []  # nothing reached the phone
    denials = transcript.result.permission_denials
    assert [(d.tool_name, d.tool_use_id, d.tool_input) for d in denials] == (
        [("mcp__dev__tapOn", call.id, {"text": "Add Item", "device": "dev0"})] if denied else []
    )
    if "--disallowedTools" in permission_args:
        assert "mcp__dev__tapOn" not in transcript.init.tools


def test_server_that_fails_to_start_is_reported_failed_and_the_run_goes_on(tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"dev": {"command": str(tmp_path / "no-such-server")}}}))
    plan = write_plan(tmp_path, {"steps": [{"tool": "observe", "args": {"device": "d"}}], "final": "done"})
    status, out, err = replay(base_argv(config, "--allowedTools", "mcp__dev", "--plan", str(plan)))
    assert status == 0
    transcript = parse_lines(out.splitlines())
    assert transcript.init.mcp_servers == (McpServerStatus("dev", "failed"),)
    assert transcript.init.tools == ()
    call = transcript.tool_calls[0]
    assert call.result_text == "<tool_use_error>Error: No such tool available: mcp__dev__observe</tool_use_error>"
    assert transcript.result.subtype == "success"
    assert "failed to start" in err


def test_max_turns_stops_like_claude(tiny):
    plan = write_plan(tiny["dir"], COUNTER_PLAN)
    status, out, _ = replay(base_argv(tiny["config"], "--allowedTools", "mcp__dev", "--max-turns", "1", "--plan", str(plan)))
    assert status == 1
    transcript = parse_lines(out.splitlines())
    assert len(transcript.tool_calls) == 1 and len(calls_seen(tiny["log"])) == 1
    result = transcript.result
    assert (result.subtype, result.is_error, result.num_turns, result.result) == ("error_max_turns", True, 2, None)
    assert result.errors == ("Reached maximum number of turns (1)",)
    assert transcript.final_text is None


def test_budget_is_accepted_and_never_reached(tiny):
    plan = write_plan(tiny["dir"], {"steps": [{"tool": "observe", "args": {"device": "{device}"}}], "final": "ok"})
    status, out, _ = replay(base_argv(tiny["config"], "--allowedTools", "mcp__dev", "--max-budget-usd", "0.0001", "--plan", str(plan)))
    assert status == 0
    assert parse_lines(out.splitlines()).result.subtype == "success"


def test_plan_found_beside_the_suite_and_package_filled(tiny):
    suites = tiny["dir"] / "agent" / "suites"
    plans = tiny["dir"] / "agent" / "plans"
    suites.mkdir(parents=True)
    plans.mkdir()
    (suites / "counter.yml").write_text("name: counter\napp:\n  packageName: com.example.counter\n")
    write_plan(plans, {"steps": [{"tool": "tapOn", "args": {"text": "{packageName}", "device": "{device}"}, "expect_error": True}],
                       "final": "x"}).rename(plans / "counter.yml")
    environ = {"AGENTBENCH_SUITE_FILE": str(suites / "counter.yml"), "AGENTBENCH_SUITE": "counter"}
    status, _, err = replay(base_argv(tiny["config"], "--allowedTools", "mcp__dev"), environ=environ)
    assert status == 0, err
    assert calls_seen(tiny["log"]) == [{"tool": "tapOn", "text": "com.example.counter", "device": "dev0"}]


def test_replay_transcript_repeats_an_earlier_runs_calls_on_this_device(tiny):
    earlier = tiny["dir"] / "claude.jsonl"
    # An earlier run against another server name and another serial, with a ToolSearch call.
    earlier.write_text(
        (REFERENCE / "ok_v2.1.332.jsonl").read_text().replace("mcp__dev__observe", "mcp__auto-mobile__observe")
    )
    status, out, err = replay(base_argv(tiny["config"], "--allowedTools", "mcp__dev", "--replay-transcript", str(earlier)))
    assert status == 0, err
    assert calls_seen(tiny["log"]) == [{"tool": "observe", "device": "dev0"}]
    transcript = parse_lines(out.splitlines())
    assert [c.name for c in transcript.tool_calls] == ["mcp__dev__observe"]
    assert transcript.final_text == "Done.\nEXPECTED_COUNT: 3"


def test_replay_transcript_without_tool_calls_is_refused(tiny):
    status, out, err = replay(base_argv(tiny["config"], "--replay-transcript", str(REFERENCE / "text_only.jsonl")))
    assert (status, out) == (1, "")
    assert "no MCP tool call to replay" in err


@pytest.mark.parametrize("output_format, expected", [("text", "Tapped twice.\nCOUNT: 2\n"), ("json", '"subtype": "success"')])
def test_text_and_json_output_print_only_the_outcome(tiny, output_format, expected):
    plan = write_plan(tiny["dir"], COUNTER_PLAN)
    status, out, _ = replay(["-p", "--output-format", output_format, "--mcp-config", str(tiny["config"]),
                             "--allowedTools", "mcp__dev", "--plan", str(plan)])
    assert status == 0
    assert expected in out and len(out.strip().splitlines()) <= 2


def test_console_script_speaks_the_contract(tiny):
    """The installed command, as the harness runs it: prompt on stdin, stream-json on stdout."""
    plan = write_plan(tiny["dir"], {"steps": [{"tool": "observe", "args": {"device": "{device}"}}], "final": "ok"})
    completed = subprocess.run(
        [sys.executable, "-m", "pytest_agentbench.agents.replay", *base_argv(tiny["config"], "--allowedTools", "mcp__dev"),
         "--plan", str(plan)],
        input="Do it.", capture_output=True, text=True, timeout=60, cwd=tiny["dir"],
    )
    assert completed.returncode == 0, completed.stderr
    transcript = parse_lines(completed.stdout.splitlines(keepends=True))
    assert transcript.unparseable == () and transcript.result.subtype == "success"
    assert transcript.init.cwd == str(tiny["dir"])


# ---- acceptance: the committed plans on a simulated phone through the built-in server ---------

PLAYGROUND = "dev.jasonpearson.automobile.playground"
PREFS = (
    ("onboarding_prefs", '<boolean name="onboarding_completed" value="true" />'),
    ("auth_prefs", '<boolean name="is_guest_mode" value="true" />'),
)
ACCEPTANCE = {
    # suite -> (package, deep link or None for the launcher activity, texts the end screen shows)
    # (a seeded suite's texts name its drawn values; the plan reads them off the instance's prompt)
    "bug-repro": (PLAYGROUND, "automobile://playground/demos/bugs/repro",
                  ["Expected count: {taps}", "Displayed count: 0", "Status: Bug triggered: UI did not update"]),
    "ux-flow": (PLAYGROUND, "automobile://playground/demos/ux/start", ["Selected plan: {plan}", "Flow complete"]),
    "wifi-on": ("com.android.settings", None, ["AndroidWifi"]),
}


@pytest.mark.parametrize("suite", sorted(ACCEPTANCE))
def test_committed_plan_leaves_the_sim_phone_in_the_suites_end_state(suite, tmp_path):
    pytest.importorskip("pytest_agentbench.sim.fleet", reason="the simulated phone is not there yet")
    from adbserver import start_private_adb_server

    from pytest_agentbench.device.uiautomator import parse_hierarchy
    from pytest_agentbench.sim.fleet import SimFleet

    from pytest_agentbench.suite import load_suite, params
    from pytest_agentbench.suite.instance import instantiate

    package, link, end_texts = ACCEPTANCE[suite]
    instance = instantiate(load_suite(REPO / "benchmark" / "agent" / "suites" / f"{suite}.yml", REPO), seed=0, repeat=1)
    values = instance.instance.values if instance.instance is not None else {}
    end_texts = [params.fill(text, values).value for text in end_texts]
    with start_private_adb_server(tmp_path) as adb_server, SimFleet(count=1, adb=adb_server.client()) as fleet:
        serial, phone = fleet.serials[0], fleet.phones[0]
        phone.shell(f"am force-stop {package}")
        if package == PLAYGROUND:
            for name, body in PREFS:
                xml = f"<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n<map>\n    {body}\n</map>\n"
                phone.fs.write(f"/data/data/{package}/shared_prefs/{name}.xml", xml.encode())
        if link:
            phone.shell(f"am start -a android.intent.action.VIEW -d {link}")
        else:
            phone.shell(f"monkey -p {package} -c android.intent.category.LAUNCHER 1")
        config = tmp_path / "mcp.json"
        env = {**adb_server.env({}), "AGENTBENCH_DEVICE_SERIAL": serial, "AGENTBENCH_LOG_DIR": str(tmp_path / "logs")}
        config.write_text(json.dumps({"mcpServers": {"agentbench": {
            "command": sys.executable, "args": ["-m", "pytest_agentbench.mcp_server"], "env": env}}}))
        completed = subprocess.run(
            [sys.executable, "-m", "pytest_agentbench.agents.replay", "-p", "--verbose", "--output-format", "stream-json",
             "--mcp-config", str(config), "--strict-mcp-config", "--allowedTools", "mcp__agentbench",
             "--plan", str(REPO / "benchmark" / "agent" / "plans" / f"{suite}.yml")],
            input=instance.prompt_text, capture_output=True, text=True, timeout=120, cwd=tmp_path,
        )
        assert completed.returncode == 0, completed.stderr
        transcript = parse_lines(completed.stdout.splitlines(keepends=True))
        assert transcript.unparseable == ()
        assert transcript.init.mcp_servers == (McpServerStatus("agentbench", "connected"),)
        assert [c.name for c in transcript.tool_calls if c.is_error] == []
        assert _key_sets(completed.stdout.splitlines()) == _key_sets((REFERENCE / "ok_quiet.jsonl").read_text().splitlines())
        dump = phone.shell("uiautomator dump /sdcard/window_dump.xml && cat /sdcard/window_dump.xml").stdout.decode()
        texts = [node.text or node.content_desc for node in parse_hierarchy(dump[dump.index("<?xml"):])]
        for text in end_texts:
            assert text in texts, (suite, texts, completed.stderr[-2000:])
