"""A/B sessions on the simulated phone -> pytest's whole terminal output: at most 150 lines by default, one report per first reason, every failure with -v (issue 21, "Output").

Eight suites (bug-repro under the names of eight real jobs) run ten times each in this session
(80 runs) against a baseline that ran each twice. The baseline passes three of them; this session passes two of those, fails four without touching the
phone, fails one a tap short, and ends one incomplete by the agent's doing (it exits non-zero).
At the default verbosity the whole output, pytest's header and final line included, is counted.
It grows with the suites and the distinct first reasons, not with the repeats (a folded failure
prints no line); docs/running.md gives the counts as measured. The saved runs are then re-rendered with `-v`,
`--tb=line` and `-rA`, which print every failure (or its one line) as pytest does.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from adbserver import PrivateAdbServer, start_private_adb_server
from fakeagents import Behaviour, Case, junit_cases, make_project, run_session, session_env, write_dispatcher

SUITES = ("chrome-bookmark-folder", "chrome-javascript-blocked", "clock-alarm-volume", "log-code-to-contact",
          "messages-pin-archive", "photos-rotate", "qa-tasks-bug-report", "testbed-pickup-code")
#: This session: 8 suites x 10 repeats, the 80-run A/B of issue 21; the baseline: each suite twice.
REPEAT, BASELINE_REPEAT = 10, 2
AB_MAX_LINES = 150
COLUMNS = "80"
ANSWER = "Done.\nEXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"
PASS, NO_DEVICE = Behaviour("replay"), Behaviour("answer", {"final": ANSWER})
GIVES_UP = Behaviour("exit-nonzero", {"final": ANSWER, "code": 3})
#: This session: two pass, four answer without touching the phone, one taps once short, one gives up.
THIS_RUN = dict(zip(SUITES, (PASS, NO_DEVICE, NO_DEVICE, PASS, NO_DEVICE, PASS, NO_DEVICE, GIVES_UP)))
TAP_SHORT = "photos-rotate"
#: The baseline: the first three pass (the two this session passes among them), the others fail.
BASELINE = {suite: PASS if index < 4 and suite != "chrome-javascript-blocked" else NO_DEVICE for index, suite in enumerate(SUITES)}
NO_DEVICE_REASON = "no successful call to a device-aware tool (no call to a device-aware tool)"


@dataclass(frozen=True)
class Session:
    """A finished session: its process, JUnit cases, session document and output directory."""

    done: subprocess.CompletedProcess[str]
    cases: dict[str, Case]
    document: dict
    output: Path

    @property
    def lines(self) -> list[str]:
        return (self.done.stdout + self.done.stderr).splitlines()

    def block(self, title: str) -> list[str]:
        """The lines under pytest's `=== title ===` rule, to the next `=` rule."""
        start = next(i for i, line in enumerate(self.lines) if re.fullmatch(rf"=+ {re.escape(title)} =+", line))
        end = next(i for i in range(start + 1, len(self.lines)) if re.fullmatch(r"=+ .* =+", self.lines[i]))
        return self.lines[start + 1:end]


def tap_short_plan() -> dict:
    """bug-repro's replay plan with one tap too few: the phone is used, its screen shows the wrong count."""
    import yaml

    plan = yaml.safe_load((Path(__file__).resolve().parents[2] / "benchmark" / "agent" / "plans" / "bug-repro.yml").read_text(encoding="utf-8"))
    for step in plan["steps"]:
        if step.get("times") == "{taps}":
            step["times"] = 2
    return plan


def run_side(root: Path, behaviours: dict[str, Behaviour], adb: PrivateAdbServer, *args: str, repeat: int = REPEAT) -> Session:
    project = make_project(root / "project", {suite: {"preflight": {"settleSeconds": 0.3}} for suite in SUITES},
                           plans={TAP_SHORT: tap_short_plan()} if behaviours is THIS_RUN else None)
    agent = write_dispatcher(root / "agent", behaviours, project=project)
    output, junit, document = root / "out", root / "r.xml", root / "session.json"
    done = run_session(project, ["benchmark/", "--device", "sim", "--claude", str(agent), "--agentbench-repeat", str(repeat),
                                 "--agentbench-output", str(output), "--agentbench-json", str(document), f"--junitxml={junit}", *args],
                       session_env(adb.port, root / "claims", COLUMNS=COLUMNS))
    assert document.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return Session(done, junit_cases(junit), json.loads(document.read_text(encoding="utf-8")), output)


def rerender(session: Session, *args: str) -> list[str]:
    """The saved runs of a session re-rendered (`--agentbench-from-result`, no phone) with `args`: the output's lines."""
    done = run_session(session.output.parent / "project", ["--agentbench-from-result", str(session.output),
                                                           "--agentbench-output", str(session.output.parent / "again"), *args],
                       session_env(0, session.output.parent / "claims", COLUMNS=COLUMNS))
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    return (done.stdout + done.stderr).splitlines()


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


@pytest.fixture(scope="module")
def ab(adb_server: PrivateAdbServer, tmp_path_factory: pytest.TempPathFactory) -> Session:
    baseline = run_side(tmp_path_factory.mktemp("baseline"), BASELINE, adb_server, repeat=BASELINE_REPEAT)
    assert baseline.document["counts"] == {"passed": 6, "failed": 10, "incomplete": 0}
    return run_side(tmp_path_factory.mktemp("this-run"), THIS_RUN, adb_server, "--agentbench-compare",
                    str(baseline.output.parent / "session.json"))


def failed_runs(session: Session) -> list[dict]:
    return [run for run in session.document["runs"] if run["verdict"]["status"] == "failed"]


def test_the_ab_prints_at_most_150_lines_in_all(ab: Session) -> None:
    assert ab.done.returncode == 1
    assert ab.document["counts"] == {"passed": 20, "failed": 50, "incomplete": 10}
    assert len(ab.lines) <= AB_MAX_LINES, f"{len(ab.lines)} lines:\n" + "\n".join(ab.lines)
    assert ab.lines[-1].strip("= ").startswith("50 failed, 20 passed, 10 xfailed in ")
    text = "\n".join(ab.lines)
    # The statistics and the comparison are all there: a row and a block per suite.
    for suite in SUITES:
        assert re.search(rf"^{re.escape(suite)}\s+10\s", text, re.M) and f"\n{suite}: " in text


def test_pytest_prints_one_report_per_first_reason_and_names_the_others(ab: Session) -> None:
    failures = ab.block("FAILURES")
    headings = [line.strip("_ ") for line in failures if line.startswith("___")]
    by_reason: dict[str, list[str]] = {}
    for run in failed_runs(ab):
        by_reason.setdefault(run["verdict"]["reasons"][0], []).append(run["nodeid"].rsplit("::", 1)[-1])
    assert len(by_reason) == 2 and len(by_reason[NO_DEVICE_REASON]) == 40
    # The first failed run of each first reason keeps its report; the note under it counts the rest.
    assert headings == [f"suite: {names[0]}" for names in by_reason.values()]
    joined = " ".join(" ".join(failures).split())
    assert "and 39 more failed runs with this first reason, not printed (-v prints each)" in joined
    assert "and 9 more failed runs with this first reason, not printed (-v prints each)" in joined
    # Printed once: the reasons are not repeated above the report.
    assert not any(line.startswith("failed: ") for line in failures)
    summary = ab.block("short test summary info")
    assert [line.split(" - ")[0] for line in summary if not line.startswith("FAILED [")] == [
        f"FAILED benchmark/agent/suites/{names[0].split('[')[0]}.yml::{names[0]}" for names in by_reason.values()]
    # One line per first reason for the others, cut to the terminal's width as pytest cuts its own.
    folded = [line for line in summary if line.startswith("FAILED [")]
    assert [line.split(":")[0] for line in folded] == [
        "FAILED [39] same first reason as chrome-javascript-blocked[r1]", f"FAILED [9] same first reason as {TAP_SHORT}[r1]"]
    assert folded[1].endswith(f": {TAP_SHORT} 9") and all(len(line) <= int(COLUMNS) for line in folded)
    # The agentbench section groups every run that did not pass, the incomplete ones too.
    section = " ".join(" ".join(ab.block("agentbench")).split())
    assert f"40 runs: failed: {NO_DEVICE_REASON} (chrome-javascript-blocked 10, clock-alarm-volume 10, messages-pin-archive 10, " \
           "qa-tasks-bug-report 10)" in section
    assert "10 runs: incomplete: the agent exited with code 3" in section


def test_junit_carries_every_failure_whole(ab: Session) -> None:
    failed = failed_runs(ab)
    for run in failed:
        case = ab.cases[run["nodeid"].rsplit("::", 1)[-1]]
        assert case.outcome == "failure" and case.message == "failed: " + "; ".join(run["verdict"]["reasons"])
        # Its own report, folded or not: the reasons, the failed checks, its run directory.
        assert f"Run directory: {run['runDirectory']}" in case.text and "Failed checks:" in case.text
    assert sum(case.outcome == "failure" for case in ab.cases.values()) == len(failed) == 50


def test_v_prints_every_failure_in_full(ab: Session) -> None:
    lines = rerender(ab, "-v")
    failures = "\n".join(lines[next(i for i, line in enumerate(lines) if "= FAILURES =" in line):])
    assert failures.count("\nScoring code: ") == 50 and "more failed run" not in failures
    for run in failed_runs(ab):
        assert f"Run directory: {run['runDirectory']}" in failures
    assert sum(line.split(" ", 1)[0] == "FAILED" for line in lines) == 50 + 50  # the agentbench section's (a node id too long for its line goes to the next) and pytest's


def test_tb_line_prints_each_shown_failure_as_one_line_and_ra_lists_every_failure(ab: Session) -> None:
    lines = rerender(ab, "--tb=line")
    start = lines.index(next(line for line in lines if "= FAILURES =" in line))
    shown = lines[start + 1:next(i for i in range(start + 1, len(lines)) if lines[i].startswith("="))]
    assert len(shown) == 2 and all(re.match(r"/\S+/result\.json:1: failed: ", line) for line in shown), shown
    listed = rerender(ab, "-rA")
    assert sum(line.split(" ", 1)[0] == "FAILED" and not line.startswith("FAILED [") for line in listed) == 50 + 50
