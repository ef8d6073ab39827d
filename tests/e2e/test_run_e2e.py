"""Acceptance tests for the measured run: pytest sessions on simulated phones -> verdicts, artifacts, JUnit, exit status, no secrets.

Each module fixture runs one whole `pytest` session as a subprocess (the plugin as a user runs it)
against a private adb server and a private claim root; the tests read what it left behind.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from adbserver import PrivateAdbServer, start_private_adb_server
from fakeagents import (
    HARNESS_K,
    REPO,
    Behaviour,
    Case,
    environ_for_scripts,
    junit_cases,
    make_project,
    run_session,
    session_env,
    write_dispatcher,
)

from pytest_agentbench.run.stream import read_arrivals

SENTINELS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-SENTINELAPIKEY7f3a",
    "ANTHROPIC_AUTH_TOKEN": "SENTINELAUTHTOKEN9c1e",
    "HTTPS_PROXY": "http://benchuser:sentinelpass42@proxy.invalid:3128",
}
# What must never show: the two credentials and the proxy password (the proxy host may show).
SECRET_STRINGS = ("sk-ant-api03-SENTINELAPIKEY7f3a", "SENTINELAUTHTOKEN9c1e", "sentinelpass42")

# The seed's artifact table; directories are the private daemon's.
ARTIFACT_FILES = ("prompt.md", "mcp-config.json", "claude-command.json", "claude.jsonl", "claude.timing.jsonl",
                  "claude.stderr", "preflight.log", "screen.xml", "result.json", "mcp-servers.json", "relay.jsonl")
ARTIFACT_DIRS = ("preflight", "logs", "db", "data")
RUN_DIR_NAME = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{8}$")
BUG_REPRO_ANSWER = "Done.\nEXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"


@dataclass(frozen=True)
class Session:
    """A finished pytest session: its process result, JUnit cases and output root."""

    done: subprocess.CompletedProcess[str]
    cases: dict[str, Case]
    output: Path

    @property
    def terminal(self) -> str:
        return self.done.stdout + self.done.stderr

    def run_dir(self, name: str) -> Path:
        return Path(self.cases[name].properties["agentbench_run_dir"])

    def result(self, name: str) -> dict:
        return json.loads((self.run_dir(name) / "result.json").read_text(encoding="utf-8"))


def _run(cwd: Path, args: list[str], adb: PrivateAdbServer, tmp: Path) -> Session:
    output, junit = tmp / "out", tmp / "r.xml"
    # A wide terminal, so pytest's -rA lines keep their reasons instead of cutting them at 80 columns.
    env = session_env(adb.port, tmp / "claims", COLUMNS="200", **SENTINELS)
    done = run_session(cwd, [*args, "--agentbench-output", str(output), f"--junitxml={junit}", "-v", "-rA"], env)
    assert junit.exists(), done.stdout + done.stderr
    # One run per suite here: a seeded suite's item `bug-repro[r1-4-5]` is keyed as `bug-repro`.
    cases = {re.sub(r"\[r1-[^\]]*\]$", "", name): case for name, case in junit_cases(junit).items()}
    return Session(done, cases, output)


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    """A private real adb server for this module's sessions (never port 5037), stopped afterwards."""
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


@pytest.fixture(scope="module")
def committed(adb_server: PrivateAdbServer, tmp_path_factory: pytest.TempPathFactory) -> Session:
    """The README's main job on the harness suites (the core jobs have test_jobs_e2e.py): one simulated phone, the replay agent."""
    tmp = tmp_path_factory.mktemp("committed")
    return _run(REPO, ["benchmark/", "--device", "sim", "--claude", "agentbench-replay", "-k", HARNESS_K], adb_server, tmp)


# Suite name -> (overrides, the fake agent's behaviour, a replay plan or None).
VERDICT_SUITES = {
    "passed-replay": ({}, Behaviour("replay"), None),
    "failed-no-device": ({}, Behaviour("answer", {"final": BUG_REPRO_ANSWER}), None),
    # Reports the right lines after only looking: the app still shows "Expected count: 0".
    "failed-screen": ({}, Behaviour("replay"), {
        "steps": [{"tool": "observe", "args": {"device": "{device}"}}],
        "final": BUG_REPRO_ANSWER,
    }),
    "incomplete-exit": ({}, Behaviour("exit-nonzero", {"final": BUG_REPRO_ANSWER, "code": 3}), None),
    "incomplete-garbage": ({}, Behaviour("garbage", {"final": BUG_REPRO_ANSWER}), None),
    "incomplete-truncated": ({}, Behaviour("truncated", {"final": BUG_REPRO_ANSWER}), None),
    "incomplete-budget": ({}, Behaviour("error-result", {"final": BUG_REPRO_ANSWER}), None),
}


@pytest.fixture(scope="module")
def verdicts(adb_server: PrivateAdbServer, tmp_path_factory: pytest.TempPathFactory) -> Session:
    """One session, one suite per verdict rule, one fake agent that behaves per suite."""
    tmp = tmp_path_factory.mktemp("verdicts")
    project = make_project(
        tmp / "project",
        {name: {**overrides, "preflight": {"settleSeconds": 0.3}} for name, (overrides, _, _) in VERDICT_SUITES.items()},
        plans={name: plan for name, (_, _, plan) in VERDICT_SUITES.items() if plan is not None},
    )
    agent = write_dispatcher(tmp / "agent", {name: behaviour for name, (_, behaviour, _) in VERDICT_SUITES.items()}, project=project)
    return _run(project, ["benchmark/", "--device", "sim", "--claude", str(agent)], adb_server, tmp)


# ----------------------------------------------------------------------------- the committed suites


def test_committed_suites_all_pass_and_exit_0(committed: Session) -> None:
    assert committed.done.returncode == 0, committed.terminal[-4000:]
    assert {name: case.outcome for name, case in committed.cases.items()} == {
        "bug-repro": "passed", "ux-flow": "passed", "wifi-on": "passed",
    }
    assert re.search(r"^PASSED benchmark/agent/suites/wifi-on.yml::wifi-on$", committed.done.stdout, re.MULTILINE)


@pytest.mark.parametrize(
    ("suite", "has_baseline"),
    [("bug-repro", True), ("ux-flow", True), ("wifi-on", False)],
    ids=["bug-repro", "ux-flow", "wifi-on-keeps-app-data-so-no-baseline"],
)
def test_run_directory_holds_every_artifact(committed: Session, suite: str, has_baseline: bool) -> None:
    run_dir = committed.run_dir(suite)
    assert run_dir.parent == committed.output / suite and RUN_DIR_NAME.match(run_dir.name), run_dir
    missing = [name for name in ARTIFACT_FILES if not (run_dir / name).is_file()]
    missing += [name + "/" for name in ARTIFACT_DIRS if not (run_dir / name).is_dir()]
    assert not missing, f"{run_dir} lacks {missing}: it has {sorted(p.name for p in run_dir.iterdir())}"
    assert (run_dir / "baseline.yml").is_file() == has_baseline

    result = committed.result(suite)
    serial = result["device"]["serial"] if "device" in result else _find(result, "deviceSerial")
    assert serial and serial in (run_dir / "prompt.md").read_text(encoding="utf-8"), "placeholders not filled"
    config = json.loads((run_dir / "mcp-config.json").read_text(encoding="utf-8"))
    ((relay,),) = [list(config["mcpServers"].values())]
    assert relay["args"][:2] == ["-m", "pytest_agentbench.mcp_server.relay"] and relay["env"] == {}
    servers = json.loads((run_dir / "mcp-servers.json").read_text(encoding="utf-8"))
    ((server,),) = [list(servers["mcpServers"].values())]
    assert set(server["env"].values()) >= {str(run_dir / "logs"), str(run_dir / "data"), str(run_dir / "db")}
    relayed = [json.loads(line) for line in (run_dir / "relay.jsonl").read_text(encoding="utf-8").splitlines()]
    assert relayed[0]["event"] == "hub" and list(relayed[0]["servers"]) == ["agentbench"]
    calls = [record for record in relayed if record["event"] == "call"]
    assert calls and len(calls) == result["metrics"]["toolCalls"]
    assert [call["tool"] for call in sorted(calls, key=lambda c: c["startMonotonic"])] == result["toolSequence"]
    command = json.loads((run_dir / "claude-command.json").read_text(encoding="utf-8"))
    assert command["argv"][:2] == ["agentbench-replay", "-p"] and not Path(command["cwd"]).is_relative_to(REPO)
    events = [json.loads(line) for line in (run_dir / "claude.jsonl").read_text(encoding="utf-8").splitlines()]
    assert events[0]["subtype"] == "init" and events[-1]["type"] == "result"
    assert ET.parse(run_dir / "screen.xml").getroot().tag == "hierarchy"
    assert (run_dir / "preflight.log").read_text(encoding="utf-8").strip()
    assert result["verdict"]["status"] == "passed"
    if has_baseline:
        block = yaml.safe_load((run_dir / "baseline.yml").read_text(encoding="utf-8"))
        assert block["baseline"]["metrics"]["toolCalls"] == result["metrics"]["toolCalls"]


@pytest.mark.parametrize("suite", ["bug-repro", "ux-flow", "wifi-on"])
def test_time_split_adds_up_to_the_agent_wall_clock(committed: Session, suite: str) -> None:
    run_dir = committed.run_dir(suite)
    lines = (run_dir / "claude.jsonl").read_bytes().count(b"\n")
    arrivals = read_arrivals(run_dir / "claude.timing.jsonl")
    assert sorted(arrivals) == list(range(1, lines + 1)), "one arrival time per stream line"
    result = committed.result(suite)
    wall = result["metrics"]["wallClockSeconds"]
    assert list(arrivals.values()) == sorted(arrivals.values()) and 0 < max(arrivals.values()) <= wall
    agent = result["timing"]["agent"]
    parts = agent["startupSeconds"] + agent["modelSeconds"] + agent["toolSeconds"] + agent["afterResultSeconds"]
    assert parts == pytest.approx(wall, rel=0.05), agent
    assert agent["wallClockSeconds"] == wall and agent["toolSeconds"] > 0 and agent["startupSeconds"] > 0
    assert sum(tool["count"] for tool in agent["tools"]) == result["metrics"]["toolCalls"]
    assert {tool["tool"]: tool["count"] for tool in agent["tools"]} == result["metrics"]["toolCounts"]
    harness = result["timing"]["harness"]
    assert set(harness) == {"preflightSeconds", "setupSeconds", "postRunSeconds", "auditSeconds"}
    assert harness["preflightSeconds"] > 0
    assert f"Time: agent {wall:.1f} s = startup " in committed.terminal
    # -v shows a line per run with its device, verdict, calls and seconds.
    item = result["nodeid"].rsplit("::", 1)[-1]  # a seeded suite's item carries its instance id
    line = f"agentbench: {item} on {result['device']['serial']}: passed, {result['metrics']['toolCalls']} tool calls, {wall:.1f} s"
    assert line in committed.done.stdout


def test_preflight_stages_the_seeded_preferences(committed: Session) -> None:
    staged = {path.name for path in (committed.run_dir("bug-repro") / "preflight").rglob("*") if path.is_file()}
    assert {"onboarding_prefs.xml", "auth_prefs.xml"} <= staged, staged


@pytest.mark.parametrize("suite", ["bug-repro", "ux-flow", "wifi-on"])
def test_junit_properties_carry_verdict_metrics_and_run_directory(committed: Session, suite: str) -> None:
    properties = committed.cases[suite].properties
    metrics = committed.result(suite)["metrics"]
    assert properties["agentbench_verdict"] == "passed"
    assert Path(properties["agentbench_run_dir"]).is_dir()
    # The properties are the run's own numbers, not placeholders.
    for name in ("toolCalls", "deviceAwareCalls", "turns", "wallClockSeconds", "stumbles"):
        assert float(properties[f"agentbench_{name}"]) == float(metrics[name]), name
    assert int(properties["agentbench_toolCalls"]) > 0


# ----------------------------------------------------------------------------- verdicts through the plugin

# Suite -> (JUnit outcome, verdict, text the JUnit message must contain).
VERDICT_TABLE = [
    ("passed-replay", "passed", "passed", ""),
    ("failed-no-device", "failure", "failed", "no successful call to a device-aware tool"),
    ("failed-screen", "failure", "failed", "screen check failed: expected 'Expected count: 3'"),
    ("incomplete-exit", "skipped", "incomplete", "incomplete: the agent exited with code 3: giving up: the model endpoint refused the key"),
    ("incomplete-garbage", "skipped", "incomplete", "incomplete: 2 stream lines did not parse (first at line 2"),
    ("incomplete-truncated", "skipped", "incomplete", "did not parse (first at line 3"),
    ("incomplete-budget", "skipped", "incomplete", "incomplete: the run ended in error_max_budget_usd"),
]


@pytest.mark.parametrize(("suite", "outcome", "verdict", "message"), VERDICT_TABLE, ids=[row[0] for row in VERDICT_TABLE])
def test_verdict_becomes_the_pytest_outcome(verdicts: Session, suite: str, outcome: str, verdict: str, message: str) -> None:
    case = verdicts.cases[suite]
    assert (case.outcome, case.properties["agentbench_verdict"]) == (outcome, verdict), case
    assert verdicts.result(suite)["verdict"]["status"] == verdict
    assert message in case.message, case.message
    # An incomplete run is an xfail, which JUnit writes as <skipped type="pytest.xfail">.
    assert (case.type == "pytest.xfail") == (verdict == "incomplete")


def test_failed_report_names_the_check_expected_seen_and_run_directory(verdicts: Session) -> None:
    case = verdicts.cases["failed-no-device"]
    # JUnit's message is the reasons' line; its text the run's report, which lists them again.
    assert case.message.startswith("failed: no successful call to a device-aware tool"), case.message
    text = case.text
    assert text.splitlines()[:2] == ["failed-no-device: FAILED", "  - no successful call to a device-aware tool (no call to a device-aware tool)"], text[:300]
    assert str(verdicts.run_dir("failed-no-device")) in text
    assert "FAIL device-use: expected 'a successful call to a device-aware tool'" in text
    assert "seen: no call to a device-aware tool" in text
    checks = {c["kind"]: c for c in verdicts.result("failed-no-device")["checks"]}
    assert checks["device-use"]["passed"] is False
    assert checks["answer"]["passed"] is True, "the answer was right: only the device-use check fails"


def test_a_failed_runs_report_is_printed_once(verdicts: Session) -> None:
    # The report is the failure text; it is not printed again as a captured section.
    for name in ("failed-no-device", "failed-screen"):
        assert verdicts.terminal.count(f"{name}: FAILED") == 1, verdicts.terminal[-6000:]


def test_failed_screen_check_shows_the_app_texts_seen(verdicts: Session) -> None:
    case = verdicts.cases["failed-screen"]
    # What was on screen instead: the counter never moved.
    assert "Expected count: 0" in case.message and "Bug Reproduction Demo" in case.message, case.message
    (screen,) = [c for c in verdicts.result("failed-screen")["checks"] if c["kind"] == "screen"]
    assert (screen["expected"], screen["passed"]) == ("Expected count: 3\nDisplayed count: 0\nStatus: Bug triggered: UI did not update", False)
    assert "Expected count: 0" in screen["seen"]
    assert "Expected count: 0" in (verdicts.run_dir("failed-screen") / "screen.xml").read_text(encoding="utf-8")


def test_incomplete_runs_are_listed_with_their_reasons_and_the_session_exits_1(verdicts: Session) -> None:
    assert verdicts.done.returncode == 1
    for name in ("incomplete-exit", "incomplete-garbage", "incomplete-truncated", "incomplete-budget"):
        # The agentbench section may wrap a long line at the terminal width: the reason can follow below.
        assert re.search(rf"^INCOMPLETE \S+::{name}\b", verdicts.done.stdout, re.MULTILINE), f"no summary line for {name}"
        assert re.search(rf"^XFAIL \S+::{name} - incomplete: ", verdicts.done.stdout, re.MULTILINE), f"no -rA line for {name}"


# ----------------------------------------------------------------------------- secrets


@pytest.mark.parametrize("fixture", ["committed", "verdicts"])
def test_sentinel_secrets_appear_in_no_file_and_no_output(request: pytest.FixtureRequest, fixture: str) -> None:
    session: Session = request.getfixturevalue(fixture)
    files = [path for path in session.output.rglob("*") if path.is_file()]
    assert len(files) > 20, "the session left too few files to prove anything"
    leaks = [
        f"{path.relative_to(session.output)}: {secret}"
        for path in files
        for secret in SECRET_STRINGS
        if secret.encode() in path.read_bytes()
    ]
    leaks += [f"terminal output: {secret}" for secret in SECRET_STRINGS if secret in session.terminal]
    assert not leaks
    # The sentinels did reach the harness: the provider identity records the proxy host, not its password.
    results = "".join(path.read_text(encoding="utf-8") for path in session.output.rglob("result.json"))
    assert "proxy.invalid" in results


def _find(document: object, key: str) -> object:
    if isinstance(document, dict):
        if key in document:
            return document[key]
        for value in document.values():
            found = _find(value, key)
            if found is not None:
                return found
    if isinstance(document, list):
        for value in document:
            found = _find(value, key)
            if found is not None:
                return found
    return None



# ----------------------------------------------------------------------------- preflight cost


def test_bug_repro_preflight_costs_at_most_8_adb_commands() -> None:
    script = REPO / "tests" / "perf" / "preflight_round_trips.py"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL, env=environ_for_scripts(), check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    served = re.search(r"total (\d+) \(budget 8\)", done.stdout)
    assert served and 0 < int(served.group(1)) <= 8, done.stdout
