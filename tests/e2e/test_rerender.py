"""A saved run directory + `--agentbench-from-result` -> the same verdict and text report, or `incomplete` / a scoring-code flag when the run dir says so.

One real session (replay agent, simulated phone, private adb server) saves a passing
bug-repro run and a failing wifi-on run; every re-render then runs `pytest` in a subprocess
on those directories (or doctored copies of them) without a device.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.audit.scoring import scoring_code_digest
from pytest_agentbench.records import RunResult

from fakeagents import copy_benchmark_parts, run_in_own_group

REPO = Path(__file__).resolve().parents[2]
BENCHMARK = REPO / "benchmark" / "agent"
VENV_BIN = Path(sys.executable).parent
SESSION_TIMEOUT_S = 300  # hang detector: a replay session takes seconds
REPORT_SECTION = "Captured agentbench report call"
OLD_SCORING_CODE = "sha256:0000000000000000"


@dataclass
class Session:
    """A finished `pytest` session of the plugin."""

    ret: int
    stdout: str
    document: dict[str, Any]

    def report_of(self, suite: str) -> str:
        """The `agentbench report` section pytest printed for a suite (under -rA)."""
        reports = []
        for block in self.stdout.split(REPORT_SECTION)[1:]:
            lines = block.splitlines()[1:]
            end = next(i for i, line in enumerate(lines) if line.startswith(("---", "___", "===")))
            reports.append("\n".join(lines[:end]).rstrip("\n") + "\n")
        # A failed run's report is its failure text instead (printed once, in the FAILURES block).
        lines = self.stdout.splitlines()
        for start, line in enumerate(lines):
            if line.startswith(f"{suite}: FAILED"):
                end = next(i for i in range(start, len(lines)) if lines[i].startswith(("---", "___", "===")))
                reports.append("\n".join(lines[start:end]).rstrip("\n") + "\n")
        (report,) = [text for text in reports if text.startswith(f"{suite}: ")]
        return report

    def result_of(self, suite: str) -> dict[str, Any]:
        (result,) = [run for run in self.document["runs"] if run["suite"] == suite]
        return result


def run_session(root: Path, *args: str, port: int) -> Session:
    """`pytest ARGS -rA` in root with the replay agent, 80 columns and a private adb server."""
    json_path = root / f"session-{len(list(root.glob('session-*.json')))}.json"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANDROID_", "ADB_", "PYTEST_"))}
    env.update(PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", ANDROID_ADB_SERVER_PORT=str(port), COLUMNS="80")
    done = run_in_own_group(
        [sys.executable, "-m", "pytest", *args, "-rA", "--claude", "agentbench-replay", "--agentbench-json", str(json_path),
         "--agentbench-output", str(root / "out"), "-p", "no:cacheprovider"],
        cwd=root, env=env, timeout_s=SESSION_TIMEOUT_S,
    )
    document = json.loads(json_path.read_text(encoding="utf-8")) if json_path.exists() else {}
    return Session(done.returncode, done.stdout + done.stderr, document)


@pytest.fixture(scope="module")
def saved(module_adb_server, tmp_path_factory) -> tuple[Path, Session]:
    """One session on the simulated phone: bug-repro passes, wifi-on (expecting `WIFI: off`) fails."""
    root = tmp_path_factory.mktemp("saved")
    copy_benchmark_parts(root / "benchmark" / "agent", one_instance=True)
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    wifi = root / "benchmark" / "agent" / "suites" / "wifi-on.yml"
    wifi.write_text(wifi.read_text(encoding="utf-8").replace('["WIFI: on"]', '["WIFI: off"]'), encoding="utf-8")
    session = run_session(
        root, "benchmark/agent/suites/bug-repro.yml", "benchmark/agent/suites/wifi-on.yml", "--device", "sim",
        port=module_adb_server.port,
    )
    assert session.ret == 1, session.stdout
    assert session.document["counts"] == {"passed": 1, "failed": 1, "incomplete": 0}
    for run in session.document["runs"]:
        # A session in a child process writes result.json too: the golden rule holds there as well.
        written = json.loads((Path(run["runDirectory"]) / "result.json").read_text(encoding="utf-8"))
        assert RunResult.from_json(written).to_json() == written == run
    return root, session


def corrupt_transcript(run_dir: Path) -> str:
    transcript = run_dir / "claude.jsonl"
    lines = len(transcript.read_text(encoding="utf-8").splitlines())
    with transcript.open("a", encoding="utf-8") as stream:
        stream.write('{"type": "assistant", "message": {"content": [\n')
    return f"1 stream line did not parse (first at line {lines + 1}: invalid JSON"


def old_scoring_code(run_dir: Path) -> str:
    path = run_dir / "result.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["scoringCode"] = OLD_SCORING_CODE
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return f"Scoring code: ! differs: the run was scored by {OLD_SCORING_CODE}, the current code is {scoring_code_digest()}"


def as_is(run_dir: Path) -> None:
    return None


def remove_relay_log(run_dir: Path) -> str:
    (run_dir / "relay.jsonl").unlink()
    return "the harness has no record of the MCP calls: the relay log relay.jsonl cannot be read"


def drop_relayed_calls(run_dir: Path) -> str:
    # The re-audit takes tool use from the saved relay log, not from the transcript's word.
    log = run_dir / "relay.jsonl"
    kept = [line for line in log.read_text(encoding="utf-8").splitlines() if json.loads(line)["event"] != "call"]
    log.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return "the transcript does not match the relay log: mcp__agentbench__observe("


RERENDERS = [
    pytest.param("bug-repro", as_is, "dir", "passed", 0, id="passed-run-dir"),
    pytest.param("bug-repro", as_is, "result.json", "passed", 0, id="passed-result-json"),
    pytest.param("wifi-on", as_is, "dir", "failed", 1, id="failed-run-dir"),
    pytest.param("bug-repro", corrupt_transcript, "dir", "incomplete", 1, id="corrupt-transcript"),
    pytest.param("bug-repro", old_scoring_code, "dir", "passed", 0, id="scoring-code-differs"),
    pytest.param("bug-repro", remove_relay_log, "dir", "incomplete", 1, id="relay-log-missing"),
    pytest.param("bug-repro", drop_relayed_calls, "dir", "incomplete", 1, id="relay-log-without-the-calls"),
]


@pytest.mark.parametrize(("suite", "doctor", "target", "status", "ret"), RERENDERS)
def test_from_result(saved, tmp_path, suite, doctor, target, status, ret):
    root, original = saved
    recorded = original.result_of(suite)
    run_dir = Path(recorded["runDirectory"])
    if doctor is not as_is:
        # Doctor a copy so the saved run stays intact for the other cases.
        run_dir = Path(shutil.copytree(run_dir, tmp_path / "runs" / suite / run_dir.name))
    expected = doctor(run_dir)

    rerun = run_session(root, "--agentbench-from-result", str(run_dir if target == "dir" else run_dir / "result.json"), port=0)

    assert rerun.ret == ret, rerun.stdout
    (result,) = rerun.document["runs"]
    assert result["verdict"]["status"] == status
    assert result["rerendered"]["verdictWhenRecorded"] == recorded["verdict"]
    if doctor is as_is:
        assert result["verdict"] == recorded["verdict"]
        # The same verdict, metrics, checks and flags as the live run (the re-render measures nothing).
        assert (result["metrics"], result["checks"], result["comparison"]) == (recorded["metrics"], recorded["checks"], recorded["comparison"])
        assert rerun.report_of(suite) == original.report_of(suite)
        assert f"{status.upper()} {recorded['nodeid']}" in rerun.stdout
    elif doctor is corrupt_transcript:
        # The transcript is sealed: a changed one is named first, and what it now says follows.
        sealed, parsed = result["verdict"]["reasons"]
        assert sealed.startswith("the audit's inputs do not match their seals: claude.jsonl changed"), sealed
        assert parsed.startswith(expected), parsed
        assert f"INCOMPLETE {recorded['nodeid']}" in rerun.stdout
        # The re-render's item has the name its own session gave it (the summary table's name too).
        assert f"{recorded['nodeid'].rsplit('::', 1)[-1]} - incomplete: {sealed}; {parsed}" in rerun.stdout
    elif doctor in (remove_relay_log, drop_relayed_calls):
        # The relay log is sealed: missing or rewritten, the re-render names it and judges nothing else.
        reasons = result["verdict"]["reasons"]
        change = "relay.jsonl is missing" if doctor is remove_relay_log else "relay.jsonl changed"
        assert reasons[0].startswith(f"the audit's inputs do not match their seals: {change}"), reasons
        if doctor is remove_relay_log:
            assert any(reason.startswith(expected) for reason in reasons), reasons
    else:
        assert expected in rerun.report_of(suite)
        assert expected not in original.report_of(suite)


@pytest.mark.parametrize("verbosity", ["-v", "-q", None], ids=["verbose", "quiet", "default"])
def test_a_line_per_run_under_verbose_only(saved, verbosity):
    root, original = saved
    recorded = original.result_of("bug-repro")
    run_dir = Path(recorded["runDirectory"])
    rerun = run_session(root, "--agentbench-from-result", str(run_dir), *([verbosity] if verbosity else []), port=0)
    metrics = recorded["metrics"]
    line = (f"agentbench: {recorded['nodeid'].rsplit('::', 1)[-1]} on {recorded['device']['serial']}: passed, "
            f"{metrics['toolCalls']} tool calls, {metrics['wallClockSeconds']:.1f} s")
    assert (line in rerun.stdout) is (verbosity == "-v"), rerun.stdout
    assert ("agentbench: bug-repro" in rerun.stdout) is (verbosity == "-v")


def test_a_rerender_collects_its_runs_under_the_node_ids_their_sessions_gave_them(saved):
    # Issue 33: a re-render said `collected 0 items` and named its item `::bug-repro[<run id>]`.
    root, original = saved
    recorded = original.result_of("bug-repro")
    rerun = run_session(root, "--agentbench-from-result", recorded["runDirectory"], "-v", port=0)
    assert "collected 1 item" in rerun.stdout, rerun.stdout
    assert f"{recorded['nodeid']} PASSED" in rerun.stdout, rerun.stdout


def test_a_sessions_output_directory_re_renders_every_run_below_it_once(saved):
    root, original = saved
    out = Path(original.result_of("bug-repro")["runDirectory"]).parent.parent
    bug_repro_run = Path(original.result_of("bug-repro")["runDirectory"])
    for _ in range(2):  # the second time, the first re-render's own documents are in the output too
        rerun = run_session(root, "--agentbench-from-result", str(out), "--agentbench-from-result", str(bug_repro_run),
                            "--agentbench-output", str(out), port=0)
        assert rerun.ret == 1, rerun.stdout
        assert rerun.document["counts"] == {"passed": 1, "failed": 1, "incomplete": 0}
        assert sorted(run["suite"] for run in rerun.document["runs"]) == ["bug-repro", "wifi-on"]
    assert len(list((out / "rerendered").rglob("result.json"))) >= 4  # other tests re-render into it too


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(lambda path: path.mkdir(), "no result.json here or below", id="empty-dir"),
        pytest.param(lambda path: None, "no result.json here or below", id="missing"),
    ],
)
def test_from_result_without_a_result_is_a_usage_error(tmp_path, make, message):
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    make(tmp_path / "nothing")
    rerun = run_session(tmp_path, "--agentbench-from-result", str(tmp_path / "nothing"), port=0)
    assert rerun.ret == 4
    assert re.search(rf"--agentbench-from-result .*nothing: {message}", rerun.stdout), rerun.stdout
