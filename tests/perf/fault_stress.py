"""The fault tests, N times with every core kept busy -> how many rounds passed (`20/20` is the bar).

Run: `python tests/perf/fault_stress.py [ROUNDS] [-k EXPR]` (default 20 rounds of
tests/e2e/test_run_faults.py). Needs the `adb` command line and the venv's bin on PATH.

One busy-loop process per core runs for the whole stress (started here, stopped here by process
group, whatever happens), so hung agents, signals and shutdowns are exercised on a loaded machine
as CI and shared hosts run them. Each round is a fresh `pytest` process in its own process group;
tests/conftest.py fails a round that leaves any process behind. A failed round's output is kept
in a log file whose path is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROUND_TIMEOUT_S = 1200


def start_load(count: int) -> list[subprocess.Popen]:
    """One busy loop per core, each in its own process group."""
    return [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL, start_new_session=True)
        for _ in range(count)
    ]


def stop(processes: list[subprocess.Popen]) -> None:
    for proc in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    for proc in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)


def one_round(index: int, args: list[str], logs: Path) -> tuple[bool, float, str]:
    """Run the fault tests once; return (passed, seconds, pytest's last line)."""
    log = logs / f"round-{index:02d}.log"
    started = time.monotonic()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
            cwd=REPO, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )
        try:
            status = proc.wait(timeout=ROUND_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            status = None
        except KeyboardInterrupt:
            # Ctrl+C here: let the round's pytest stop its own sessions and agents first (a
            # SIGKILL now would orphan them), then make sure.
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=120)
            raise
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
    took = time.monotonic() - started
    lines = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    last = lines[-1] if lines else "(no output)"
    if status is None:
        last = f"timed out after {ROUND_TIMEOUT_S} s; {last}"
    passed = status == 0
    if passed:
        log.unlink()
    return passed, took, last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rounds", nargs="?", type=int, default=20)
    parser.add_argument("-k", dest="keyword", help="run only the fault tests matching this pytest -k expression")
    parser.add_argument("--load", type=int, default=os.cpu_count() or 2, help="busy-loop processes (default: one per core)")
    options = parser.parse_args()
    args = ["tests/e2e/test_run_faults.py", *(["-k", options.keyword] if options.keyword else [])]
    logs = Path(tempfile.mkdtemp(prefix="agentbench-fault-stress-"))
    load = start_load(options.load)
    passed = 0
    try:
        print(f"fault stress: {options.rounds} rounds of {' '.join(args)} with {options.load} busy loop(s)", flush=True)
        for index in range(1, options.rounds + 1):
            ok, took, last = one_round(index, args, logs)
            passed += ok
            shown = last if ok else f"{last}  (log: {logs / f'round-{index:02d}.log'})"
            print(f"round {index:2d}: {'pass' if ok else 'FAIL'} in {took:5.0f} s: {shown}", flush=True)
    finally:
        stop(load)
    print(f"{passed}/{options.rounds}")
    if passed == options.rounds:
        with contextlib.suppress(OSError):
            logs.rmdir()
    return 0 if passed == options.rounds else 1


if __name__ == "__main__":
    raise SystemExit(main())
