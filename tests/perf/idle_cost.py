"""A trivial one-test project -> the CPU time of `pytest` with the plugin installed against `-p no:agentbench`; prints the ratio (goal: at most 1.15x).

Run: `python tests/perf/idle_cost.py [REPETITIONS]` (default 30) with the virtualenv that has the
package installed (its pytest, its other plugins).

Both sides run the same `python -m pytest -q -p no:cacheprovider` in a fresh temporary project
holding one passing test, interleaved so that load on the machine falls on both alike. The CPU
time of each run (user + system, the run and any process it starts) is the difference of
`resource.getrusage(RUSAGE_CHILDREN)` around it; the ratio is of the two medians. A run that
gives no agentbench option and names no suite must not build the plugin's session, import its
run stage or start a process (docs/running.md#a-plugin-that-costs-nothing-where-it-is-not-used).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

GOAL = 1.15
DEFAULT_REPETITIONS = 30


def cpu_seconds(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """The CPU time (user + system) of one child process and everything it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(repetitions: int) -> tuple[list[float], list[float]]:
    """CPU seconds of each run with the plugin and with `-p no:agentbench`, interleaved."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "AGENTBENCH_"))}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    with_plugin: list[float] = []
    without: list[float] = []
    with tempfile.TemporaryDirectory(prefix="agentbench-idle-") as tmp:
        project = Path(tmp)
        (project / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n", encoding="utf-8")
        # One warm-up each: the first run compiles the bytecode both sides then reuse.
        cpu_seconds(argv, project, env)
        cpu_seconds([*argv, "-p", "no:agentbench"], project, env)
        for _ in range(repetitions):
            with_plugin.append(cpu_seconds(argv, project, env))
            without.append(cpu_seconds([*argv, "-p", "no:agentbench"], project, env))
    return with_plugin, without


def main() -> int:
    repetitions = int(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_REPETITIONS
    with_plugin, without = measure(repetitions)
    on, off = statistics.median(with_plugin), statistics.median(without)
    ratio = on / off
    print(f"pytest on a one-test project, median CPU of {repetitions} runs each: "
          f"{on:.3f} s with pytest-agentbench, {off:.3f} s with -p no:agentbench (+{on - off:.3f} s)")
    print(f"ratio: {ratio:.2f}x (goal: at most {GOAL:.2f}x)")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
