"""A suite with five device checks run by the plugin on a simulated phone -> the adb round trips its before- and after-reads cost, as a ratio to the budget; exit 1 above it.

Run: `python tests/perf/device_reads.py` (needs the `adb` command line; uses a private adb server on
a free port, a private claim root and a temporary project, and stops them all).

The phone (the Checks Lab of tests/checklab.py) runs in this process behind a real adb server and
logs every command it serves. `pytest --device SERIAL --claude agentbench-replay` runs the suite
in a subprocess; the replay plan does the job through the built-in server, then the post-run reads
and cleanup run. Every batched read carries the reader's marker, so the commands that read device
state are counted exactly: the before-snapshot (end of preflight), the after-snapshot (start of
post-run, with the screen dump when there is one) and cleanup's re-read. Budget: at most 2 round
trips each for the before- and the after-read (issue 10).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

from tabulate import tabulate

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from adbserver import start_private_adb_server
from checklab import FIVE_CHECKS, PASS_STEPS, lab_phone, lab_suite, write_project
from fakeagents import junit_cases, run_session, session_env

from pytest_agentbench.checks.read import MARK
from pytest_agentbench.sim.fleet import SimFleet

BUDGET = 2
PHASES = ("before (end of preflight)", "after (start of post-run)", "cleanup (undo + re-read)")


def measure(work: Path) -> tuple[list[str], Counter, str, str]:
    """Run the session; returns the commands the phone served, its services, the verdict and pytest's output."""
    with start_private_adb_server(work) as server:
        fleet = SimFleet(count=1, adb=server.client(), phone_factory=lab_phone)
        try:
            phone, serial = fleet.phones[0], fleet.serials[0]
            plan = {"steps": [{**step, "args": {**step["args"], "device": "{device}"}} for step in PASS_STEPS], "final": "LAB: done"}
            project = write_project(work / "project", {"lab-five": lab_suite("lab-five")}, {"lab-five": plan})
            start, served_before = len(phone.command_log), Counter(phone.counters)
            junit = work / "junit.xml"
            done = run_session(project, ["benchmark/", "--device", serial, "--claude", "agentbench-replay",
                                         "--agentbench-output", str(work / "out"), f"--junitxml={junit}", "-q"],
                               session_env(server.port, work / "claims"))
            verdict = junit_cases(junit)["lab-five"].properties.get("agentbench_verdict", "?") if junit.exists() else "no junit"
            return list(phone.command_log[start:]), Counter(phone.counters) - served_before, verdict, done.stdout + done.stderr
        finally:
            fleet.stop()


def phases(commands: list[str]) -> dict[str, list[str]]:
    """The batched reads by phase: before the agent's first tap, and after its last (the after-read, then cleanup)."""
    taps = [index for index, command in enumerate(commands) if command.startswith("input ") or " input tap " in command]
    first, last = (taps[0], taps[-1]) if taps else (len(commands), len(commands))
    reads = [(index, command) for index, command in enumerate(commands) if MARK in command]
    post = [command for index, command in reads if index > last]
    return {PHASES[0]: [command for index, command in reads if index < first], PHASES[1]: post[:1], PHASES[2]: post[1:]}


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="agentbench-perf-") as tmp:
        commands, served, verdict, output = measure(Path(tmp))
    by_phase = phases(commands)
    if verdict != "passed" or not all(by_phase.values()):
        print(output[-4000:])
        print(f"FAIL: the run was {verdict}; batched reads by phase: { {k: len(v) for k, v in by_phase.items()} }", file=sys.stderr)
        return 1
    rows = []
    for phase, batch in by_phase.items():
        sections = sum(command.count(f"{MARK}") for command in batch) // 2
        ratio = f"{len(batch) / BUDGET:.2f}" if phase != PHASES[2] else "-"
        rows.append([phase, len(batch), sections, ratio])
    print(tabulate(rows, headers=["device read", "round trips", "reads batched", f"ratio to budget ({BUDGET})"]))
    print()
    print(f"suite: {len(FIVE_CHECKS)} device checks ({', '.join(check['kind'] for check in FIVE_CHECKS)}), verdict {verdict}")
    print(f"services the phone served for the whole session: {json.dumps(dict(sorted(served.items())))}")
    worst = max(len(by_phase[PHASES[0]]), len(by_phase[PHASES[1]]))
    if worst > BUDGET:
        print(f"FAIL: a device read cost {worst} round trips, more than {BUDGET}", file=sys.stderr)
        return 1
    print(f"OK: the before- and after-reads cost at most {worst} round trip(s) each, ratio {worst / BUDGET:.2f} of the budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
