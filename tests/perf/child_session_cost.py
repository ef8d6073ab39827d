"""What one pytest session the tests start costs before it does anything -> seconds and ratios; printed, never asserted.

Run: `python tests/perf/child_session_cost.py [ROUNDS]`.

The end-to-end tests start a few hundred pytest sessions (the plugin under test, in a project of
their own). Each pays Python's start, pytest's, every installed plugin's and this package's
import. hypothesis's pytest plugin imports all of hypothesis when a session ends (hypothesis
6.170: 1.3 s of CPU), so the sessions the tests start skip it (`-p no:hypothesispytest`,
tests/fakeagents.py `CHILD_ADDOPTS`). This measures `pytest --co -q benchmark/` in a copy of
the committed benchmark with and without it: the median wall time of ROUNDS sessions each.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _session_seconds(project: Path, extra: list[str], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *extra, "--co", "-q", "benchmark/"],
                       cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="agentbench-perf-") as scratch:
        project = Path(scratch)
        shutil.copytree(REPO / "benchmark", project / "benchmark")
        (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        default = _session_seconds(project, [], rounds)
        lean = _session_seconds(project, ["-p", "no:hypothesispytest"], rounds)
    print(f"pytest --co of the benchmark, median of {rounds}:")
    print(f"  every installed plugin:      {default:.2f} s")
    print(f"  without hypothesis's plugin: {lean:.2f} s  ({lean / default:.2f}x, {default - lean:.2f} s less per session)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
