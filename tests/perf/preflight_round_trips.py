"""Committed suites run by the plugin on a simulated phone -> a table of the adb commands the phone served before the agent started; exit 1 above the budget.

Run: `python tests/perf/preflight_round_trips.py` (needs the `adb` command line; uses a private
adb server on a free port and a private claim root, and stops both).

The simulated phone runs in this process (SimFleet behind a real adb server) and counts every
service it serves. `pytest benchmark/agent/suites/bug-repro.yml --device SERIAL` runs as a
subprocess with a gate agent: the agent writes a marker and waits, so the count is read exactly
at agent start and the post-run dump is not in it. Everything the phone served from the session's
start to that moment is counted, which includes claim-to-agent-start (device resolution before
the claim is host-side: `host:devices` never reaches the phone). Budget: at most 8 commands for
bug-repro (two preference files pushed); the seeded suites (photos-crop pushes a PNG and reads its
watched sources before and after seeding, messages-pin-archive inserts three SMS as root) ride the
same round trips and must stay within it too.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from tabulate import tabulate

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from adbserver import start_private_adb_server
from fakeagents import REPO, UNCONFINED, pytest_argv, session_env, write_agent

from pytest_agentbench.sim.fleet import SimFleet

BUDGET = 8
WAIT_S = 120
SUITES = ("bug-repro", "photos-crop", "messages-pin-archive")


def measure(work: Path, suite: str = "bug-repro") -> tuple[list[str], Counter, int, str]:
    """Run the session; return the commands served before agent start, by-service counts, pytest's status and output."""
    with start_private_adb_server(work) as server:
        fleet = SimFleet(count=1, adb=server.client())
        try:
            phone, serial = fleet.phones[0], fleet.serials[0]
            marker, go = work / "agent-started.json", work / "go"
            agent = write_agent(work / "agent", "gate", marker=str(marker), go=str(go),
                                final="EXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0")
            env = session_env(server.port, work / "claims")
            log_start, counts_start = len(phone.command_log), Counter(phone.counters)
            proc = subprocess.Popen(
                pytest_argv(f"benchmark/agent/suites/{suite}.yml", *UNCONFINED, "--device", serial, "--claude", str(agent),
                            "--agentbench-output", str(work / "out"), "-q"),
                cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, start_new_session=True,
            )
            deadline = time.monotonic() + WAIT_S
            while not marker.exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    said = proc.communicate()[0]
                    raise SystemExit(f"the agent never started; pytest said:\n{said[-3000:]}")
                time.sleep(0.01)
            commands = list(phone.command_log[log_start:])
            served = Counter(phone.counters) - counts_start
            go.write_text("go\n", encoding="utf-8")
            out = proc.communicate(timeout=WAIT_S)[0]
            return commands, served, proc.returncode, out
        finally:
            fleet.stop()


def main() -> int:
    worst = 0
    for suite in SUITES:
        with tempfile.TemporaryDirectory(prefix="agentbench-perf-") as tmp:
            commands, served, status, _output = measure(Path(tmp), suite)
        total = sum(served.values())
        worst = max(worst, total)
        lines = [" ".join(command.split())[:110] for command in commands]
        # The phone logs shell and exec command lines; sync sessions (file push/pull) carry none.
        lines += ["sync: a file push/pull session"] * served.get("sync", 0)
        rows = list(enumerate(lines, 1))
        print(f"== {suite}")
        print(tabulate(rows, headers=["#", "command served by the simulated phone (claim -> agent start)"]))
        print(f"services served: {json.dumps(dict(sorted(served.items())))}; total {total} (budget {BUDGET})")
        print(f"pytest exited {status} (the gate agent answers without the device, so the run itself fails)\n")
        if total > BUDGET:
            print(f"FAIL: preflight for {suite} cost {total} adb commands, more than {BUDGET}", file=sys.stderr)
    if worst > BUDGET:
        return 1
    print(f"OK: every suite {worst} <= {BUDGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
