"""The whole benchmark on the simulated phone, run as the README says -> its wall time and where it went, against the goals; exit 1 above them.

Run: `python tests/perf/benchmark_time.py` (needs the `adb` command line; uses a private adb server
on a free port, a private claim root and temporary output, and stops them all).

Two sessions, each a subprocess in the repository with the plugin starting its own simulated phone:

* `pytest benchmark/ --device sim --claude agentbench-replay` (every committed suite, the replay
  agent with the committed plans); goal: under 3 minutes on this machine.
* `pytest benchmark/ --device sim --agentbench-prove` (every prove item of every suite); goal:
  under 2 minutes.

For each session the table splits the items' time (pytest's own per-item durations, from JUnit)
into what each run directory records: the settle sleep (`preflight.log`), the rest of preflight
(device read, reset and seeds, the before-snapshot and start screen), the agent (`wallClockSeconds`,
which includes the replay plan's thinkSeconds), and the rest (a proof's scenario steps, post-run
reads, cleanup, the audit, the item's setup and teardown). The session line adds what
lies outside the items: pytest starting, collection, the simulated phone and adb server.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from defusedxml import ElementTree as ET
from tabulate import tabulate

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from adbserver import start_private_adb_server
from fakeagents import REPO, pytest_argv, run_in_own_group, session_env

GOALS_S = {"replay": 180.0, "prove": 120.0}
_STAMP = re.compile(r"^(\d\d:\d\d:\d\d\.\d{3}) (.*)$")
_SETTLE = re.compile(r"^settling ([\d.]+)s$")


@dataclass
class Split:
    """Seconds of one session's items, by phase."""

    items: int = 0
    item_s: float = 0.0
    settle_s: float = 0.0
    preflight_s: float = 0.0
    agent_s: float = 0.0
    by_suite: dict[str, float] = field(default_factory=dict)

    @property
    def rest_s(self) -> float:
        return self.item_s - self.settle_s - self.preflight_s - self.agent_s


def _preflight(log: Path) -> tuple[float, float]:
    """(settle seconds, the rest of preflight in seconds) from one preflight.log."""
    stamps, settle = [], 0.0
    for line in log.read_text(encoding="utf-8").splitlines():
        match = _STAMP.match(line)
        if not match:
            continue
        stamps.append(datetime.strptime(match.group(1), "%H:%M:%S.%f"))
        found = _SETTLE.match(match.group(2))
        if found:
            settle = float(found.group(1))
    total = (stamps[-1] - stamps[0]).total_seconds() if len(stamps) > 1 else 0.0
    return settle, max(0.0, total - settle)


def _agent_seconds(run_dir: Path) -> float:
    result = run_dir / "result.json"
    if result.is_file():
        return float(json.loads(result.read_text())["metrics"].get("wallClockSeconds") or 0.0)
    return 0.0


def split_of(junit: Path, output: Path) -> Split:
    """Per-phase seconds of a session from its JUnit file and its run directories."""
    split = Split()
    for case in ET.parse(junit).getroot().iter("testcase"):
        seconds = float(case.get("time") or 0)
        suite = case.get("name", "?").split("[", 1)[0]
        split.items += 1
        split.item_s += seconds
        split.by_suite[suite] = split.by_suite.get(suite, 0.0) + seconds
    for log in output.rglob("preflight.log"):
        settle, rest = _preflight(log)
        split.settle_s += settle
        split.preflight_s += rest
        split.agent_s += _agent_seconds(log.parent)
    return split


def run(name: str, args: list[str], adb_port: int, work: Path) -> tuple[float, Split, int, str]:
    """One session; returns its wall seconds, its split, pytest's exit status and the tail of its output."""
    output, junit = work / f"out-{name}", work / f"junit-{name}.xml"
    env = session_env(adb_port, work / f"claims-{name}")
    started = time.monotonic()
    done = run_in_own_group(pytest_argv("benchmark/", "--device", "sim", *args, "--agentbench-output", str(output),
                                        f"--junitxml={junit}", "-q"), cwd=REPO, env=env, timeout_s=1800)
    wall = time.monotonic() - started
    if not junit.is_file():
        raise SystemExit(f"the {name} session wrote no JUnit file; pytest said:\n{(done.stdout + done.stderr)[-3000:]}")
    return wall, split_of(junit, output), done.returncode, done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def main() -> int:
    sessions = {"replay": ["--claude", "agentbench-replay"], "prove": ["--agentbench-prove"]}
    rows, suites, over, failed = [], {}, [], []
    with tempfile.TemporaryDirectory(prefix="agentbench-perf-") as scratch, start_private_adb_server(Path(scratch)) as server:
        for name, args in sessions.items():
            wall, split, status, summary = run(name, args, server.port, Path(scratch))
            goal = GOALS_S[name]
            # A proof has no agent: its scenario's steps are in the post-run column.
            agent = f"{split.agent_s:.1f}" if name == "replay" else "-"
            rows.append([name, split.items, f"{wall:.1f}", f"{goal:.0f}", f"{split.settle_s:.1f}", f"{split.preflight_s:.1f}",
                         agent, f"{split.rest_s:.1f}", f"{wall - split.item_s:.1f}",
                         "ok" if wall <= goal else "OVER"])
            suites[name] = split.by_suite
            if wall > goal:
                over.append(f"{name}: {wall:.1f}s > {goal:.0f}s")
            if status != 0:
                failed.append(f"{name}: pytest exited {status} ({summary})")
    print(tabulate(rows, headers=["session", "items", "wall s", "goal s", "settle s", "preflight s (rest)",
                                  "agent s", "steps+post-run+audit s", "outside items s", ""]))
    print()
    names = sorted(set(suites["replay"]) | set(suites["prove"]))
    print(tabulate([[suite, f"{suites['replay'].get(suite, 0):.1f}", f"{suites['prove'].get(suite, 0):.1f}"] for suite in names],
                   headers=["suite", "replay s", "prove s (all items)"]))
    for problem in failed:
        print(f"FAIL: {problem}", file=sys.stderr)
    for problem in over:
        print(f"OVER THE GOAL: {problem}", file=sys.stderr)
    if not failed and not over:
        print("\nOK: both sessions passed within their goals")
    return 1 if failed or over else 0


if __name__ == "__main__":
    sys.exit(main())
