"""The real Claude Code CLI (2.1.197) as the plugin's test partner: scripted model turns -> verdicts and evidence.

Each test runs the plugin (pytester, in-process) on a copy of the bug-repro suite with
`--claude <the npm-installed claude>` against one simulated phone shared by the module (behind a
private adb server) and the built-in MCP server. The model is tests/fake_anthropic.py, playing a
scenario from tests/claude_scenarios.py. The pytest process gets the fake's URL, a test API key,
a fresh HOME and Claude Code's "no non-essential traffic" switches; the plugin passes auth and
provider variables through and scrubs run-shaping ones (CLAUDE_CODE_MAX_RETRIES among them, so
no scenario here relies on retries). Those tests are marked `claude_cli`: slow next to unit
tests, still run in CI. The scenario helpers' own tests at the top are fast and unmarked.
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme
import yaml
from claude_scenarios import (
    SCENARIOS,
    Scenario,
    ScenarioError,
    device_serial,
    screen_counts,
)
from fake_anthropic import CLAUDE_VERSION, DEFAULT_MODEL, FakeAnthropic, MessagesRequest
from permissiveproxy import PermissiveProxy

from pytest_agentbench.run import sandbox

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmark" / "agent"
SANDBOX = sandbox.probe()
SUITE_NAME = "bug-repro"
# Generous for a scripted run (a few seconds); the hang scenario uses its own small timeout.
RUN_TIMEOUT_S = 60
HANG_TIMEOUT_S = 4
# A signed-in user's tokens (no API key): the fake API takes only the access token.
SIGNED_IN_TOKEN = "sk-ant-oat01-PLANTED-SIGN-IN-TOKEN"
REFRESH_TOKEN = "sk-ant-ort01-PLANTED-REFRESH-TOKEN"
# A gateway's name (not api.anthropic.com, for which Claude Code defers MCP tools behind ToolSearch).
PROXIED_MODEL_HOST = "llm-gateway.example"
# The fake's default usage per turn (fake_anthropic.DEFAULT_USAGE): 1000 input, 20 output tokens.
TURN_INPUT_TOKENS, TURN_OUTPUT_TOKENS = 1000, 20
# Variables from the developer's or CI's shell that would send the CLI elsewhere or change the run.
FOREIGN_VARIABLES = (
    "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
    "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy",
    "ADB_SERVER_SOCKET", "AGENTBENCH_NPM_CACHE",
)


@pytest.fixture(scope="module")
def phone(claude_bin: Path, module_adb_server):  # noqa: F811 - fixture imported above
    """One simulated phone for the module; each run's preflight puts the app back in its start state."""
    from pytest_agentbench.sim.fleet import SimFleet

    with SimFleet(count=1, adb=module_adb_server.client()) as fleet:
        yield fleet.serials[0]


@dataclass
class PluginRun:
    """What one plugin run left: pytest's outcome, the run directory and its result.json."""

    outcome: pytest.RunResult
    run_dir: Path
    result: dict
    api: FakeAnthropic
    scenario: Scenario
    suite_file: Path

    @property
    def verdict(self) -> str:
        return self.result["verdict"]["status"]

    @property
    def reasons(self) -> str:
        return "; ".join(self.result["verdict"]["reasons"])

    def checks(self, kind: str) -> list[dict]:
        return [check for check in self.result["checks"] if check["kind"] == kind]

    def check(self, kind: str) -> dict:
        (found,) = self.checks(kind)
        return found

    def transcript(self) -> list[dict]:
        return [json.loads(line) for line in (self.run_dir / "claude.jsonl").read_text().splitlines() if line.strip()]


def _processes_of(suite_file: Path, run_dir: Path) -> list[str]:
    """Live processes started for this run: the agent (AGENTBENCH_SUITE, no harness path) or its MCP server (data dir)."""
    markers = (f"AGENTBENCH_SUITE={SUITE_NAME}".encode(), f"AGENTBENCH_DATA_DIR={run_dir / 'data'}".encode())
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next((line for line in (proc / "status").read_text().splitlines() if line.startswith("State:")), "")
        except OSError:
            continue
        if "zombie" not in state and any(marker in environ for marker in markers):
            found.append(f"{proc.name}: {cmdline}")
    return found


@pytest.fixture
def run_plugin(pytester: pytest.Pytester, phone: str, module_adb_server, claude_bin: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: F811
    """Run the plugin once on a bug-repro copy with the real CLI and a scripted fake API."""
    home = pytester.mkdir("home")
    for name in FOREIGN_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in {
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": "set per run",
        "ANTHROPIC_API_KEY": "sk-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "ANDROID_ADB_SERVER_PORT": str(module_adb_server.port),
        "ANDROID_ADB_SERVER_ADDRESS": "127.0.0.1",
        "AUTOMOBILE_ADB_SERVER_COORDINATION_DIR": str(pytester.path / "claims"),
        # The built-in server and agentbench-* scripts come from this interpreter's bin directory.
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")]),
    }.items():
        monkeypatch.setenv(name, value)

    def run(scenario_name: str, *, claude: dict | None = None, ini: dict | None = None, env: dict | None = None,
            unset: tuple[str, ...] = (), accept_only: str | None = None, behind_proxy: bool = False) -> PluginRun:
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        for name in unset:
            monkeypatch.delenv(name, raising=False)
        suite = yaml.safe_load((BENCHMARK / "suites" / f"{SUITE_NAME}.yml").read_text())
        suite["preflight"]["settleSeconds"] = 0.2
        # The scripted model taps Add Item three times: the copy draws that one instance.
        suite["params"]["taps"] = {"type": "choice", "values": [{"taps": 3, "fewer": 2}]}
        suite["claude"] = {"maxBudgetUsd": 2, "timeoutSeconds": RUN_TIMEOUT_S, **(claude or {})}
        suites = pytester.mkdir("bench") / "suites"
        suites.mkdir()
        (suites.parent / "prompts").mkdir()
        (suites.parent / "prompts" / f"{SUITE_NAME}.txt").write_text((BENCHMARK / "prompts" / f"{SUITE_NAME}.txt").read_text())
        suite_file = suites / f"{SUITE_NAME}.yml"
        suite_file.write_text(yaml.safe_dump(suite, sort_keys=False))
        pytester.makeini("[pytest]\n" + "".join(f"{key} = {value}\n" for key, value in (ini or {}).items()))
        output = pytester.path / "out"
        scenario = SCENARIOS[scenario_name]()
        with contextlib.ExitStack() as stack:
            tls = None
            if behind_proxy:
                # A remote host's name, behind the operator's proxy: the fake speaks https for it.
                authority = trustme.CA()
                tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
                authority.issue_cert(PROXIED_MODEL_HOST).configure_cert(tls)
            api = stack.enter_context(FakeAnthropic(scenario.turns, after_script=scenario.after_script, accept_only=accept_only, tls=tls))
            if behind_proxy:
                proxy = stack.enter_context(PermissiveProxy(routes={f"{PROXIED_MODEL_HOST}:443": ("127.0.0.1", api.port)}))
                monkeypatch.setenv("ANTHROPIC_BASE_URL", f"https://{PROXIED_MODEL_HOST}")
                monkeypatch.setenv("HTTPS_PROXY", proxy.url)
                # The throwaway CA is not the system's; the sandbox hides the temp directory a CA file would be in.
                monkeypatch.setenv("NODE_TLS_REJECT_UNAUTHORIZED", "0")
                api.proxy = proxy  # type: ignore[attr-defined]
            else:
                monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
            outcome = pytester.runpytest(
                str(suite_file), "--device", phone, "--claude", str(claude_bin),
                "--agentbench-output", str(output), "-p", "no:cacheprovider", "-rA",
            )  # fmt: skip
        (result_json,) = output.glob(f"{SUITE_NAME}/*/result.json")
        return PluginRun(outcome, result_json.parent, json.loads(result_json.read_text()), api, scenario, suite_file)

    return run


# --- the scenario helpers on their own (fast) ------------------------------------------------


def _request(system: object, messages: list[dict]) -> MessagesRequest:
    return MessagesRequest("POST", "/v1/messages", {}, {"system": system, "messages": messages, "tools": []})


SENTENCE = "Use only the Android device with serial 127.0.0.1:40123; the app under test is dev.app."


@pytest.mark.parametrize(
    ("system", "serial"),
    [
        pytest.param([{"type": "text", "text": "You are Claude Code."}, {"type": "text", "text": SENTENCE}], "127.0.0.1:40123", id="blocks"),
        pytest.param(SENTENCE.replace("127.0.0.1:40123", "emulator-5554"), "emulator-5554", id="string"),
        pytest.param([{"type": "text", "text": "You are Claude Code."}], None, id="no-sentence"),
    ],
)
def test_device_serial_is_read_from_the_harness_sentence(system: object, serial: str | None) -> None:
    if serial is None:
        with pytest.raises(ScenarioError, match="does not name the device serial"):
            device_serial(_request(system, []))
    else:
        assert device_serial(_request(system, [])) == serial


@pytest.mark.parametrize(
    ("screen", "counts"),
    [
        pytest.param('3 TextView "Expected count: 3" @540,489\n4 TextView "Displayed count: 0"', {"Expected": "3", "Displayed": "0"}, id="both"),
        pytest.param('3 TextView "Expected count: 12"', {"Expected": "12"}, id="one"),
        pytest.param("tapped Button 'Add Item' at 540,839", {}, id="none"),
    ],
)
def test_screen_counts(screen: str, counts: dict[str, str]) -> None:
    assert screen_counts(screen) == counts


def test_tool_results_come_from_the_last_user_message_even_before_a_budget_reminder() -> None:
    # With --max-budget-usd, Claude Code 2.1.197 sends a system-role message after the tool results.
    request = _request([], [
        {"role": "user", "content": "prompt"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "mcp__agentbench__observe", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "screen"}]}]},
        {"role": "system", "content": "USD budget: $0.0055/$2; $1.9945 remaining"},
    ])  # fmt: skip
    assert [(r.tool_use_id, r.text, r.is_error) for r in request.tool_results()] == [("t1", "screen", False)]
    assert request.last_user_text() == "screen"


# --- the real CLI through the plugin (slow) ----------------------------------------------------


@pytest.mark.claude_cli
def test_agent_solves_bug_repro_passes_with_cli_version_model_tokens_and_cost(run_plugin) -> None:
    # A run-shaping variable in the shell is scrubbed; the fake's URL and key reach the CLI.
    run = run_plugin("solves", env={"CLAUDE_CODE_MAX_RETRIES": "1"})
    assert run.scenario.problems == []
    command = json.loads((run.run_dir / "claude-command.json").read_text())
    assert "CLAUDE_CODE_MAX_RETRIES" in command["envRemoved"]
    assert not [p.name for p in run.run_dir.rglob("*") if p.is_file() and b"sk-test" in p.read_bytes()]
    run.outcome.assert_outcomes(passed=1)
    assert run.verdict == "passed", run.reasons
    assert run.result["toolSequence"] == ["observe", "tapOn", "tapOn", "tapOn", "tapOn"]
    assert [c["passed"] for c in run.result["checks"]] == [True] * len(run.result["checks"])
    assert "Expected count: 3" in run.check("screen")["seen"]
    assert run.result["stumbles"] == []
    fingerprints = run.result["fingerprints"]
    assert fingerprints["claudeCodeVersion"] == CLAUDE_VERSION  # from the init event of the real CLI
    assert fingerprints["observedModel"] == DEFAULT_MODEL
    metrics = run.result["metrics"]
    turns = len(run.api.agent_requests)
    assert turns == 6 and metrics["deviceAwareCalls"] == 5 and metrics["turns"] == turns
    assert metrics["inputTokens"] == turns * TURN_INPUT_TOKENS and metrics["outputTokens"] == turns * TURN_OUTPUT_TOKENS
    (result_event,) = [e for e in run.transcript() if e.get("type") == "result"]
    assert metrics["costUsd"] == pytest.approx(result_event["total_cost_usd"]) and metrics["costUsd"] > 0
    assert (run.run_dir / "baseline.yml").exists(), run.result.get("snippet")
    # The real CLI ran confined (where bwrap works): the fake API was its one endpoint, forwarded
    # on loopback; it reached the phone only through the relay.
    if SANDBOX.usable:
        sandbox_record = run.result["sandbox"]
        assert sandbox_record["mode"] == "on" and sandbox_record["deviceReach"] == "relay"
        assert sandbox_record["policy"]["loopback"] == [run.api.base_url.split("//", 1)[1].rstrip("/")]
        assert sandbox_record["policy"]["agentKind"] == "claude" and sandbox_record["refusedConnections"] == []


@pytest.mark.claude_cli
@pytest.mark.skipif(not SANDBOX.usable, reason=f"no sandbox here: {SANDBOX.reason}")
def test_a_signed_in_claude_code_without_an_api_key_passes_confined(run_plugin, pytester: pytest.Pytester) -> None:
    # A subscription sign-in (no API key); the fake API takes only that sign-in's token.
    credentials = pytester.path / "home" / ".claude" / ".credentials.json"
    credentials.parent.mkdir(parents=True)
    credentials.write_text(json.dumps({"claudeAiOauth": {
        "accessToken": SIGNED_IN_TOKEN, "refreshToken": REFRESH_TOKEN, "expiresAt": int((time.time() + 3600) * 1000),
        "scopes": ["user:inference", "user:profile"], "subscriptionType": "pro"}}), encoding="utf-8")
    before = credentials.read_bytes()
    run = run_plugin("solves", unset=("ANTHROPIC_API_KEY",), accept_only=SIGNED_IN_TOKEN)
    run.outcome.assert_outcomes(passed=1)
    assert run.verdict == "passed", run.reasons
    assert run.api.refused_auth == 0 and run.api.agent_requests
    assert run.result["sandbox"]["mode"] == "on"
    assert run.result["sandbox"]["policy"]["signIn"]["refreshToken"] == "withheld"
    # The user's own file is untouched, and no token is in any file of the run or its output.
    assert credentials.read_bytes() == before
    leaked = [p for p in (pytester.path / "out").rglob("*") if p.is_file()
              and (SIGNED_IN_TOKEN.encode() in p.read_bytes() or REFRESH_TOKEN.encode() in p.read_bytes())]
    assert leaked == []


@pytest.mark.claude_cli
@pytest.mark.skipif(not SANDBOX.usable, reason=f"no sandbox here: {SANDBOX.reason}")
def test_claude_code_behind_the_operator_s_proxy_reaches_its_model_confined(run_plugin) -> None:
    # A remote model gateway through a permissive local proxy, as in an office: the harness's own
    # CONNECT proxy inside the sandbox chains to it for the model host alone.
    run = run_plugin("solves", behind_proxy=True)
    run.outcome.assert_outcomes(passed=1)
    assert run.verdict == "passed", run.reasons
    proxy = run.api.proxy  # type: ignore[attr-defined]
    assert proxy.asked and set(proxy.asked) == {f"{PROXIED_MODEL_HOST}:443"}
    sandbox_record = run.result["sandbox"]
    assert sandbox_record["policy"]["remote"] == [f"{PROXIED_MODEL_HOST}:443"]
    assert sandbox_record["policy"]["upstreamProxy"] == f"127.0.0.1:{proxy.port}"
    assert sandbox_record["selfTest"]["ok"] is True


@pytest.mark.claude_cli
def test_agent_answers_without_touching_the_phone_fails_the_device_use_check(run_plugin) -> None:
    run = run_plugin("answers-without-the-phone")
    assert run.scenario.problems == []
    run.outcome.assert_outcomes(failed=1)
    assert run.verdict == "failed"
    answers = run.checks("answer")
    assert [a["expected"] for a in answers if a["passed"]] == ["EXPECTED_COUNT: 3", "DISPLAYED_COUNT: 0"], answers
    assert run.check("device-use")["passed"] is False
    assert "no successful call to a device-aware tool" in run.reasons
    assert run.result["metrics"]["toolCalls"] == 0
    run.outcome.stdout.fnmatch_lines(["*failed:*device*"])


@pytest.mark.claude_cli
def test_agent_recovers_from_a_tool_error_passes_with_one_stumble_and_no_baseline(run_plugin) -> None:
    run = run_plugin("recovers-from-a-tool-error")
    assert run.scenario.problems == []
    run.outcome.assert_outcomes(passed=1)
    assert run.verdict == "passed", run.reasons
    (stumble,) = run.result["stumbles"]
    assert stumble["kind"] == "tool-error" and stumble["tool"].endswith("tapOn")
    assert "Ad Item" in stumble["detail"] and "Add Item" in stumble["detail"]
    assert run.result["metrics"]["stumbles"] == 1
    assert not (run.run_dir / "baseline.yml").exists()
    assert any("stumble" in why for why in run.result["snippet"]["suppressedBecause"]), run.result["snippet"]


@pytest.mark.claude_cli
def test_agent_hang_is_incomplete_at_timeout_seconds_and_leaves_nothing_running(run_plugin) -> None:
    run = run_plugin("hangs", claude={"timeoutSeconds": HANG_TIMEOUT_S})
    assert run.scenario.problems == []
    assert [r.outcome for r in run.api.agent_requests] == ["hang"]
    run.outcome.assert_outcomes(xfailed=1)
    assert run.verdict == "incomplete"
    assert f"timed out after claude.timeoutSeconds={HANG_TIMEOUT_S}s" in run.reasons
    assert run.outcome.ret == pytest.ExitCode.TESTS_FAILED
    # A generous bound that only catches a group killed late; processes may need a moment to be reaped.
    deadline = time.monotonic() + 10
    while (left := _processes_of(run.suite_file, run.run_dir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == [], "claude or agentbench-mcp outlived the run"


@pytest.mark.claude_cli
def test_budget_exceeded_is_incomplete_with_error_max_budget_usd(run_plugin) -> None:
    run = run_plugin("exceeds-the-budget", claude={"maxBudgetUsd": 0.0001})
    assert run.scenario.problems == []
    run.outcome.assert_outcomes(xfailed=1)
    assert run.verdict == "incomplete"
    assert "error_max_budget_usd" in run.reasons
    assert run.result["metrics"]["costUsd"] > 0.0001
    run.outcome.stdout.fnmatch_lines(["*incomplete*error_max_budget_usd*"])


@pytest.mark.claude_cli
def test_missing_mcp_server_command_is_incomplete_not_connected(run_plugin, pytester: pytest.Pytester) -> None:
    # The auto-mobile profile runs `node <checkout>/dist/src/index.js`: an empty checkout makes
    # that command fail at start, for the harness's tools/list probe and for Claude Code alike.
    empty_checkout = pytester.mkdir("no-automobile")
    run = run_plugin("runs-without-its-server", ini={"agentbench_server": "auto-mobile", "agentbench_automobile_dir": empty_checkout})
    assert run.scenario.problems == []
    run.outcome.assert_outcomes(xfailed=1)
    assert run.verdict == "incomplete"
    assert "MCP server 'auto-mobile' was failed, not connected" in run.reasons
    # Claude Code's word alone would be the agent's: the harness's own probe of the server confirms it.
    assert run.result["verdict"]["incompleteCause"] == "harness", run.reasons
    assert "confirmed by the harness's own probe of the server" in run.reasons
    (init,) = [e for e in run.transcript() if e.get("subtype") == "init"]
    assert init["mcp_servers"] == [{"name": "auto-mobile", "status": "failed"}]
