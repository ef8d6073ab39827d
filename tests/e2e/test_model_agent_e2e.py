"""Seed 004's measured failures, reproduced through the plugin: `--claude agentbench-agent` on a simulated phone against a scripted fake model.

One pytest session (a subprocess, as a user runs it) runs one wifi-on suite per scenario; the
fake OpenAI-compatible server picks each suite's script by its model name (`claude.model`). A
conftest in the project turns Wi-Fi off before each suite (through the public
`agentbench_device` fixture), so every scenario starts from the suite's start screen.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from adbserver import PrivateAdbServer, free_port, start_private_adb_server
from fake_openai import FakeOpenAI, thinking_disabled
from fakeagents import Case, junit_cases, make_project, run_session, session_env
from model_scripts import API_KEY, DONE, IN_SESSION, SCRIPTS, STRICT, TIMEOUT_S, UNREACHABLE

from pytest_agentbench.audit.transcript import Transcript, parse_file

CONFTEST = '''
import pytest


@pytest.fixture(autouse=True)
def wifi_starts_off(agentbench_device):
    # Wi-Fi is a global setting: the previous scenario may have left it on.
    agentbench_device.adb.shell(agentbench_device.serial, ["settings", "put", "global", "wifi_on", "0"])
'''


@dataclass(frozen=True)
class Session:
    """A finished session: its output, JUnit cases, the fake's recorded requests."""

    returncode: int
    terminal: str
    cases: dict[str, Case]
    output: Path
    project: Path
    api: FakeOpenAI | None

    def run_dir(self, name: str) -> Path:
        return Path(self.cases[name].properties["agentbench_run_dir"])

    def result(self, name: str) -> dict:
        return json.loads((self.run_dir(name) / "result.json").read_text(encoding="utf-8"))

    def transcript(self, name: str) -> Transcript:
        return parse_file(self.run_dir(name) / "claude.jsonl")

    def reports(self, name: str, kind: str) -> list:
        return [report for report in self.transcript(name).reports if report.kind == kind]


def _run(tmp: Path, adb: PrivateAdbServer, suites: list[str], *, base_url: str, api: FakeOpenAI | None,
         max_retries: int = 1, html: Path | None = None) -> Session:
    project = make_project(
        tmp / "project",
        {name: {"claude": {"model": name, "timeoutSeconds": 120}, "preflight": {"settleSeconds": 0.3}} for name in suites},
        template="wifi-on",
    )
    (project / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    output, junit = tmp / "out", tmp / "r.xml"
    env = session_env(
        adb.port, tmp / "claims", COLUMNS="200",
        AGENTBENCH_OPENAI_BASE_URL=base_url, AGENTBENCH_OPENAI_API_KEY=API_KEY,
        AGENTBENCH_OPENAI_TIMEOUT_S=str(TIMEOUT_S), AGENTBENCH_OPENAI_MAX_RETRIES=str(max_retries),
        AGENTBENCH_OPENAI_PRICE_INPUT_PER_MTOK="1.5", AGENTBENCH_OPENAI_PRICE_OUTPUT_PER_MTOK="6",
    )
    done = run_session(project, ["benchmark/", "--device", "sim", "--claude", "agentbench-agent",
                                 "--agentbench-output", str(output), f"--junitxml={junit}", "-v", "-rA",
                                 *(["--agentbench-html", str(html)] if html is not None else [])], env)
    assert junit.exists(), done.stdout + done.stderr
    return Session(done.returncode, done.stdout + done.stderr, junit_cases(junit), output, project, api)


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


@pytest.fixture(scope="module")
def scenarios(adb_server: PrivateAdbServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """Every scripted scenario in one session; the fake server is stopped afterwards."""
    with FakeOpenAI({name: SCRIPTS[name] for name in IN_SESSION}, strict=STRICT) as api:
        yield _run(tmp_path_factory.mktemp("model-agent"), adb_server, IN_SESSION, base_url=api.base_url, api=api)


@pytest.fixture(scope="module")
def retried(adb_server: PrivateAdbServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """The 429 scenario, in a session allowing 2 retries, with the HTML page (`retried.output.parent / "report.html"`)."""
    tmp = tmp_path_factory.mktemp("retried")
    with FakeOpenAI({"api-429": SCRIPTS["api-429"]}) as api:
        yield _run(tmp, adb_server, ["api-429"], base_url=api.base_url, api=api, max_retries=2, html=tmp / "report.html")


class GoneAfterTheCheck:
    """A model server that answers the session's check before collection (`GET /models`), then goes away (it crashed)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._answer_once, daemon=True)
        self.thread.start()

    def _answer_once(self) -> None:
        try:
            client, _ = self.sock.accept()
        except OSError:
            return
        with client:
            client.recv(65536)
            client.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{"data": []}')
        self.sock.close()

    def close(self) -> None:
        self.sock.close()
        self.thread.join(timeout=5)


@pytest.fixture(scope="module")
def unreachable(adb_server: PrivateAdbServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """A session whose model server answered the check before collection and was gone when the runs began."""
    server = GoneAfterTheCheck()
    try:
        yield _run(tmp_path_factory.mktemp("unreachable"), adb_server, [UNREACHABLE],
                   base_url=f"http://127.0.0.1:{server.port}/v1", api=None)
    finally:
        server.close()


def _verdict(session: Session, name: str) -> tuple[str, str]:
    case = session.cases[name]
    return case.outcome, case.properties.get("agentbench_verdict", "?")


# ----------------------------------------------------------------------------- the measured failures


def test_turns_wifi_on_and_stops_passes_in_4_steps(scenarios: Session) -> None:
    assert _verdict(scenarios, "wifi-passes") == ("passed", "passed"), scenarios.terminal[-3000:]
    transcript = scenarios.transcript("wifi-passes")
    assert transcript.result.num_turns == 4 and transcript.result.subtype == "success"
    assert transcript.final_text == DONE
    # Every device action is a real call of the built-in server's tools, counted as device use.
    assert [call.name for call in transcript.tool_calls] == ["mcp__agentbench__observe"] + [
        "mcp__agentbench__tapOn", "mcp__agentbench__observe"] * 3
    assert [report.data["ending"] for report in transcript.reports if report.kind == "episode-end"] == ["task_complete"]
    metrics = scenarios.result("wifi-passes")["metrics"]
    assert (metrics["turns"], metrics["deviceAwareCalls"], metrics["recoveries"], metrics["stumbles"]) == (4, 7, 0, 0)
    # Priced per Mtok from the environment: 4 requests of 1000 in + 20 out.
    assert metrics["costUsd"] == pytest.approx(4 * (1000 * 1.5 + 20 * 6) / 1e6)
    assert metrics["inputTokens"] == 4000 and metrics["outputTokens"] == 80


def test_self_undo_is_reported_the_episode_stops_and_the_run_fails(scenarios: Session) -> None:
    assert _verdict(scenarios, "wifi-self-undo") == ("failure", "failed")
    (undo,) = scenarios.reports("wifi-self-undo", "self-undo")
    assert undo.turn == 4 and "self-undo" in undo.message
    assert len(scenarios.api.requests_for("wifi-self-undo")) == 4, "the episode went on after the self-undo"
    result = scenarios.result("wifi-self-undo")
    assert "screen check failed: expected 'AndroidWifi'" in " ".join(result["verdict"]["reasons"])
    assert "agentbench-agent stopped the episode" in scenarios.transcript("wifi-self-undo").result.result


def test_a_model_that_never_calls_a_tool_fails(scenarios: Session) -> None:
    assert _verdict(scenarios, "wifi-no-tool") == ("failure", "failed")
    transcript = scenarios.transcript("wifi-no-tool")
    assert transcript.final_text == "I have turned on Wi-Fi for you.\nWIFI: on"
    # Its answer line is right; the screen says otherwise.
    checks = {check["kind"]: check["passed"] for check in scenarios.result("wifi-no-tool")["checks"]}
    assert checks == {"device-use": True, "transcript": True, "completion": False, "answer": True, "screen": False}
    assert [r.data["ending"] for r in transcript.reports if r.kind == "episode-end"] == ["no_tool_call"]
    assert scenarios.result("wifi-no-tool")["agent"]["episodeEnding"] == "no_tool_call"


def test_empty_reply_is_retried_once_without_thinking_and_reported(scenarios: Session) -> None:
    assert _verdict(scenarios, "wifi-empty-retry") == ("passed", "passed")
    (retry,) = scenarios.reports("wifi-empty-retry", "retry")
    assert retry.turn == 1 and retry.data["switch"] == {"chat_template_kwargs": {"enable_thinking": False}}
    requests = scenarios.api.requests_for("wifi-empty-retry")
    assert [thinking_disabled(body) for body in requests] == [False, True, False, False, False]
    result = scenarios.result("wifi-empty-retry")
    assert result["metrics"]["recoveries"] == 1
    assert [s["kind"] for s in result["stumbles"]] == ["recovery"]


def test_the_unterminated_call_is_recovered_and_reported_not_silently(scenarios: Session) -> None:
    assert _verdict(scenarios, "wifi-unterminated") == ("passed", "passed")
    (recovery,) = scenarios.reports("wifi-unterminated", "recovery")
    assert recovery.turn == 3 and recovery.data["format"] == "unterminated-json"
    assert recovery.data["raw"].startswith('[tap]\n{"tool": "tap"')
    result = scenarios.result("wifi-unterminated")
    assert result["metrics"]["recoveries"] == 1
    (stumble,) = result["stumbles"]
    assert stumble["kind"] == "recovery" and stumble["tool"] == "tap"
    # A run that needed a repair is not a clean pass: it writes no baseline.
    assert not result["snippet"]["written"]


def test_exhausted_step_budget_is_incomplete(scenarios: Session) -> None:
    case = scenarios.cases["wifi-budget"]
    assert _verdict(scenarios, "wifi-budget") == ("skipped", "incomplete")
    assert "the run ended in error_max_turns: Reached maximum number of turns (10)" in case.message
    assert len(scenarios.api.requests_for("wifi-budget")) == 10
    assert not scenarios.reports("wifi-budget", "self-undo")


def test_submenu_then_back_is_no_self_undo_and_no_change_is_told(scenarios: Session) -> None:
    assert _verdict(scenarios, "wifi-submenu-back") == ("failure", "failed")
    assert not scenarios.reports("wifi-submenu-back", "self-undo")
    (no_change,) = scenarios.reports("wifi-submenu-back", "no-change")
    assert no_change.turn == 1
    requests = scenarios.api.requests_for("wifi-submenu-back")
    told = requests[1]["messages"][-1]
    assert told["role"] == "tool" and told["content"].endswith("the screen did not change")
    assert [r.data["ending"] for r in scenarios.transcript("wifi-submenu-back").reports if r.kind == "episode-end"] == ["task_complete"]


# ----------------------------------------------------------------------------- endpoint failures


@pytest.mark.parametrize(
    ("suite", "expected", "requests"),
    [
        ("api-401", "the run ended in an API error (HTTP 401): API Error: 401 Invalid API key", 1),
        ("api-500", "the run ended in an API error (HTTP 500): API Error: 500 scripted internal error", 2),
        ("api-timeout", "the run ended in an API error: API Error: Request timed out", 2),
    ],
    ids=["401", "500-retried-once-by-the-sdk", "timeout"],
)
def test_endpoint_failures_are_incomplete_with_status_or_cause(scenarios: Session, suite: str, expected: str, requests: int) -> None:
    case = scenarios.cases[suite]
    assert _verdict(scenarios, suite) == ("skipped", "incomplete")
    assert expected in case.message, case.message
    assert len(scenarios.api.requests_for(suite)) == requests


def test_unreachable_endpoint_is_incomplete_with_the_cause(unreachable: Session) -> None:
    case = unreachable.cases[UNREACHABLE]
    assert _verdict(unreachable, UNREACHABLE) == ("skipped", "incomplete")
    assert "API Error: Connection error: could not reach http://127.0.0.1:" in case.message, case.message
    result = unreachable.transcript(UNREACHABLE).result
    assert result.is_error and result.api_error_status is None
    # The harness's own model bridge saw the refusal: the run leaves the rate as the harness's.
    verdict = unreachable.result(UNREACHABLE)["verdict"]
    assert verdict["incompleteCause"] == "harness" and "; confirmed by the model bridge: " in verdict["reasons"][-1], verdict
    # The summary groups runs by their first reason: it names the unreachable server, not the budget
    # warning the agent printed first (issue 33: "blaming --max-budget-usd is not enforced").
    assert "could not reach http://127.0.0.1:" in verdict["reasons"][0] and "max-budget-usd" not in verdict["reasons"][0], verdict


def test_a_model_server_that_does_not_answer_stops_the_session_before_any_run(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    # Before, 21 runs spent a minute each ending incomplete; the reason was only in result.json.
    project = make_project(tmp_path / "project", {"wifi-passes": {"preflight": {"settleSeconds": 0.3}}}, template="wifi-on")
    host = f"http://127.0.0.1:{free_port()}"
    env = session_env(adb_server.port, tmp_path / "claims", AGENTBENCH_OPENAI_BASE_URL=host + "/v1", AGENTBENCH_OPENAI_API_KEY=API_KEY)
    done = run_session(project, ["benchmark/", "--device", "sim", "--claude", "agentbench-agent", "--model", "my-served-model",
                                 "--agentbench-output", str(tmp_path / "out")], env)
    assert done.returncode == 4, done.stdout + done.stderr
    # The scheme, host and port (a URL's path can hold a secret, so it is not printed).
    assert f"the model server at {host} (AGENTBENCH_OPENAI_BASE_URL) does not answer: [Errno 111] Connection refused" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_an_api_error_the_bridge_did_not_see_is_the_agent_s(scenarios: Session) -> None:
    # A 500 over a connection that worked: only the agent's stream says the endpoint failed.
    verdict = scenarios.result("api-500")["verdict"]
    assert verdict["incompleteCause"] == "agent", verdict
    (reason,) = [reason for reason in verdict["reasons"] if "API error" in reason]
    assert reason.startswith("the agent's stream says the run ended in an API error (HTTP 500)"), verdict
    assert "unconfirmed by the harness (the model bridge opened " in reason


# ----------------------------------------------------------------------------- the stream as Claude's


def test_every_stream_parses_with_zero_unparseable_lines(scenarios: Session) -> None:
    for name in IN_SESSION:
        transcript = scenarios.transcript(name)
        assert transcript.unparseable == (), (name, transcript.unparseable[:2])
        assert transcript.init.claude_code_version.endswith("-agentbench-agent")
        assert transcript.init.mcp_servers[0].status == "connected"
        assert transcript.result is not None


def test_re_render_from_result_gives_the_same_verdicts(scenarios: Session, tmp_path: Path) -> None:
    env = session_env(0, tmp_path / "claims")
    env.pop("ANDROID_ADB_SERVER_PORT")
    args = [arg for name in IN_SESSION for arg in ("--agentbench-from-result", str(scenarios.run_dir(name)))]
    junit = tmp_path / "rerender.xml"
    done = run_session(scenarios.project, [*args, f"--junitxml={junit}"], env)
    rerendered = {case.name.split("[")[0]: case.properties.get("agentbench_verdict") for case in junit_cases(junit).values()}
    assert rerendered == {name: scenarios.cases[name].properties["agentbench_verdict"] for name in IN_SESSION}, done.stdout[-3000:]


def test_the_api_key_is_in_no_artifact_but_was_sent(scenarios: Session, unreachable: Session) -> None:
    files = [path for session in (scenarios, unreachable) for path in session.output.rglob("*") if path.is_file()]
    assert len(files) > 50
    leaks = [str(path) for path in files if API_KEY.encode() in path.read_bytes()]
    leaks += [f"terminal of {session.project}" for session in (scenarios, unreachable) if API_KEY in session.terminal]
    assert not leaks
    assert all(headers.get("authorization") == f"Bearer {API_KEY}" for headers in scenarios.api.headers)
    components = scenarios.result("wifi-passes")["fingerprints"]["serverBuildComponents"]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+ path=sha256:[0-9a-f]{16}", components["provider.url.AGENTBENCH_OPENAI_BASE_URL"])
    assert "AGENTBENCH_OPENAI_API_KEY" in components["provider.credential"]
    command = json.loads((scenarios.run_dir("wifi-passes") / "claude-command.json").read_text(encoding="utf-8"))
    assert command["argv"][0] == "agentbench-agent"


# ----------------------------------------------------------------------------- issue 20, through the plugin


def _ending(session: Session, name: str) -> str:
    return [r.data["ending"] for r in session.transcript(name).reports if r.kind == "episode-end"][-1]


def test_an_unclosed_think_is_an_empty_reply_retried_reported_and_kept_as_thinking(scenarios: Session) -> None:
    name = "wifi-think-unclosed"
    assert _verdict(scenarios, name) == ("passed", "passed"), scenarios.result(name)["verdict"]
    (retry,) = scenarios.reports(name, "retry")
    assert retry.data["think_in_content"] == "unclosed" and retry.data["finish_reason"] == "length"
    assert [thinking_disabled(body) for body in scenarios.api.requests_for(name)][:2] == [False, True]
    lines = [json.loads(line) for line in (scenarios.run_dir(name) / "claude.jsonl").read_text(encoding="utf-8").splitlines()]
    thinking = [b["thinking"] for e in lines if e["type"] == "assistant" for b in e["message"]["content"] if b["type"] == "thinking"]
    assert thinking[0].startswith("The Network row is index 1.")
    result = scenarios.result(name)
    assert [s["kind"] for s in result["stumbles"]] == ["recovery"] and result["agent"]["episodeEnding"] == "task_complete"


def test_extra_and_undecodable_calls_are_stumbles_and_never_claimed_as_tool_use(scenarios: Session) -> None:
    name = "wifi-extra-calls"
    assert _verdict(scenarios, name) == ("passed", "passed")
    result = scenarios.result(name)
    assert sorted((s["kind"], s["tool"]) for s in result["stumbles"]) == [("tool-error", "back"), ("tool-error", "home")]
    assert result["metrics"]["stumbles"] == 2
    # The transcript claims only the calls the relay carried (the cross-check passed).
    checks = {check["kind"]: check["passed"] for check in result["checks"]}
    assert checks["transcript"] is True
    told = [m["content"] for m in scenarios.api.requests_for(name)[1]["messages"] if m["role"] == "tool"]
    assert told[1:] == ["not executed: call one tool per turn", told[2]] and "not a JSON object" in told[2]


def test_a_text_call_to_an_unknown_tool_is_no_such_tool_not_the_answer(scenarios: Session) -> None:
    name = "wifi-unknown-text-tool"
    assert _verdict(scenarios, name) == ("passed", "passed")
    assert len(scenarios.api.requests_for(name)) == 5
    told = [m for m in scenarios.api.requests_for(name)[1]["messages"] if m["role"] == "tool"]
    assert told[0]["content"].startswith("there is no tool named 'click'")
    assert sorted(s["kind"] for s in scenarios.result(name)["stumbles"]) == ["recovery", "tool-error"]


def test_full_navigation_then_prose_fails_for_want_of_task_complete(scenarios: Session) -> None:
    name = "wifi-prose-after-nav"
    assert _verdict(scenarios, name) == ("failure", "failed")
    result = scenarios.result(name)
    assert result["verdict"]["reasons"] == [
        "the model never called task_complete (the episode ended no_tool_call: the model replied without a tool call; "
        "its reply is the final text)"]
    assert result["agent"]["episodeEnding"] == "no_tool_call"
    checks = {check["kind"]: check["passed"] for check in result["checks"]}
    assert checks == {"device-use": True, "transcript": True, "completion": False, "answer": True, "screen": True}


def test_unknown_token_counts_are_unknown_in_the_metrics(scenarios: Session) -> None:
    name = "wifi-no-usage"
    assert _verdict(scenarios, name) == ("passed", "passed")
    metrics = scenarios.result(name)["metrics"]
    assert (metrics["inputTokens"], metrics["outputTokens"]) == (None, None)
    (unknown,) = scenarios.reports(name, "usage-unknown")
    assert unknown.turn == 1
    calls = scenarios.result(name)["timing"]["agent"]["modelCalls"]
    assert [c["promptTokens"] for c in calls] == [None, 1000, 1000, 1000]


def test_hermes_calls_are_recovered_named_and_stripped(scenarios: Session) -> None:
    name = "wifi-hermes"
    assert _verdict(scenarios, name) == ("passed", "passed")
    assert [r.data["format"] for r in scenarios.reports(name, "recovery")] == ["hermes"] * 3
    assert scenarios.transcript(name).final_text == DONE
    sent = [m["content"] for m in scenarios.api.requests_for(name)[-1]["messages"] if m["role"] == "assistant"]
    assert sent[:3] == ["Opening it."] * 3


def test_each_model_call_is_on_the_record_with_the_provider_named(scenarios: Session) -> None:
    name = "wifi-passes"
    result = scenarios.result(name)
    calls = result["timing"]["agent"]["modelCalls"]
    assert len(calls) == 4 and all(c["finishReason"] == "tool_calls" and c["retries"] == [] for c in calls)
    assert all(c["durationSeconds"] is not None and c["startSeconds"] is not None for c in calls)
    last = json.loads((scenarios.run_dir(name) / "claude.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert last["duration_api_ms"] > 0
    components = result["fingerprints"]["serverBuildComponents"]
    assert components["provider"] == "openai-compatible"
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", components["provider.endpoint"])


def test_429s_are_retried_in_the_loop_and_reported(retried: Session) -> None:
    name = "api-429"
    assert _verdict(retried, name) == ("passed", "passed"), retried.terminal[-2000:]
    reports = retried.reports(name, "api-retry")
    assert [(r.data["status"], r.data["wait_s"]) for r in reports] == [(429, 0.2), (429, 0.2)]
    first = retried.result(name)["timing"]["agent"]["modelCalls"][0]
    assert [r["status"] for r in first["retries"]] == [429, 429] and first["durationSeconds"] < 2
    assert len(retried.api.requests_for(name)) == 6


def test_a_strict_endpoint_loses_the_parameter_it_refused(scenarios: Session) -> None:
    name = "wifi-strict"
    assert _verdict(scenarios, name) == ("passed", "passed")
    (dropped,) = scenarios.reports(name, "parameter-dropped")
    assert dropped.data["parameter"] == "skip_special_tokens"
    assert ["skip_special_tokens" in body for body in scenarios.api.requests_for(name)] == [True] + [False] * 4


def test_an_index_as_a_string_is_accepted_and_the_coercion_is_a_recovery(scenarios: Session) -> None:
    name = "wifi-index-string"
    assert _verdict(scenarios, name) == ("passed", "passed")
    (recovery,) = scenarios.reports(name, "recovery")
    assert recovery.data["format"] == "argument-coerced"
    assert scenarios.result(name)["metrics"]["recoveries"] == 1


READ_MODEL_CALLS = """
(() => [...document.querySelectorAll('section.run .timeline .trow')].map(row => ({
  kind: row.classList.contains('model-call') ? 'model-call' : row.classList.contains('call') ? 'call' : 'other',
  call: row.dataset.call || null, finish: row.dataset.finish || null, retries: row.dataset.retries || null,
  text: row.textContent.replace(/\\s+/g, ' ').trim()})))()
"""


def test_the_timing_sidecar_and_the_html_timeline_show_each_model_call(retried: Session) -> None:
    from browser import Browser, chromium_or_skip

    from pytest_agentbench.run.stream import read_model_calls

    name = "api-429"
    recorded = retried.result(name)["timing"]["agent"]["modelCalls"]
    sidecar = read_model_calls(retried.run_dir(name) / "claude.timing.jsonl")
    # The sidecar's rows are the result's, call for call (the result rounds to milliseconds).
    assert sidecar is not None and len(sidecar) == len(recorded) == 4
    for row, call in zip(sidecar, recorded):
        assert (row["promptTokens"], row["completionTokens"], row["finishReason"], row["retries"]) == (
            call["promptTokens"], call["completionTokens"], call["finishReason"], call["retries"])
        assert row["startSeconds"] == pytest.approx(call["startSeconds"], abs=1e-3)
        assert row["durationSeconds"] == pytest.approx(call["durationSeconds"], abs=1e-3)
    assert [r["status"] for r in sidecar[0]["retries"]] == [429, 429] and all(not row["retries"] for row in sidecar[1:])
    page = retried.output.parent / "report.html"
    with Browser(chromium_or_skip()) as browser:
        browser.open(page)
        rows = browser.evaluate(READ_MODEL_CALLS)
    model_rows = [row for row in rows if row["kind"] == "model-call"]
    assert [row["call"] for row in model_rows] == ["1", "2", "3", "4"]
    assert all(row["finish"] == "tool_calls" for row in model_rows)
    assert [row["retries"] for row in model_rows] == ["2", "0", "0", "0"]
    assert "HTTP 429, waited 0.2 s" in model_rows[0]["text"] and "1000 prompt + 20 completion tokens" in model_rows[0]["text"]
    # In place: the first observe, then each model call's row before the tap its reply asked for
    # (and the observe after it); the last reply called task_complete, which is no device call.
    kinds = [row["kind"] for row in rows if row["kind"] != "other"]
    assert kinds == ["call"] + ["model-call", "call", "call"] * 3 + ["model-call"], kinds
