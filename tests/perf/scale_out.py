"""12 suite runs on K = 1, 2, 4 simulated phones -> wall time, speedup and our own CPU seconds per run (pytest, server, agent).

Run: `python tests/perf/scale_out.py` (about 7 minutes; a private adb server is started and
stopped). Each configuration is one pytest session: `--agentbench-repeat 12` of the committed
bug-repro suite (as committed: 2 s settle), the replay agent with a think time before every
step standing in for model latency (`thinkSeconds`, 2 s), and for K > 1 `-n K --device sim:K`.

CPU is what the session's process tree used (os.wait4 on pytest, so xdist workers, the agents,
their MCP servers, the probes and the warm-start servers are all in it; think time and settle
time are sleeps and cost none). It is split into the run's MCP server (the `cpu` each server logs
at exit), the agent (what the warm-start server reaped for each `agentbench-replay`) and the
rest, called pytest (the plugin, the simulated phones it serves, start-up of every process).

Goals (issue 23, at K = 4): a speedup of at least 3.5x and at most 1 s of our CPU per run. The
script prints both and exits 1 when a goal is missed. `--no-warm` runs without warm starts
(ini agentbench_warm_start = false) to show what they save.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from tabulate import tabulate

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from adbserver import start_private_adb_server  # noqa: E402
from fakeagents import BENCHMARK, make_project, pytest_argv, run_in_own_group, session_env  # noqa: E402

SPEEDUP_GOAL = 3.5
CPU_GOAL_S = 1.0
_SERVER_CPU = re.compile(r"agentbench-mcp exiting: cpu ([\d.]+)s")
_WARM_EXIT = re.compile(r"exit (agentbench-replay|agentbench-mcp) pid=\d+ .* cpu=([\d.]+)s")


@dataclass(frozen=True)
class Measured:
    """One session: K phones, its wall time and CPU seconds (total and split), how many programs started warm."""

    phones: int
    wall_s: float
    cpu_s: float
    server_s: float
    agent_s: float
    warm_programs: int
    runs: int

    @property
    def pytest_s(self) -> float:
        return self.cpu_s - self.server_s - self.agent_s


def project(root: Path, think_s: float) -> Path:
    """The committed bug-repro suite, its plan given a think time before every step."""
    plan = yaml.safe_load((BENCHMARK / "plans" / "bug-repro.yml").read_text(encoding="utf-8"))
    plan["thinkSeconds"] = think_s
    return make_project(root, {"bug-repro": {}}, plans={"bug-repro": plan})


def measure(root: Path, phones: int, runs: int, adb_port: int, *, warm: bool) -> Measured:
    output = root / f"out-{phones}"
    args = ["benchmark/", "--claude", "agentbench-replay", "--agentbench-repeat", str(runs), "--agentbench-output", str(output), "-q"]
    args += ["-n", str(phones), "--device", f"sim:{phones}"] if phones > 1 else ["--device", "sim"]
    if not warm:
        args += ["-o", "agentbench_warm_start=false"]
    env = session_env(adb_port, root / f"claims-{phones}")
    started = time.monotonic()
    # Reaped here, so its children's usage is in RUSAGE_CHILDREN of this process; a timeout kills its whole group.
    done = run_in_own_group(pytest_argv(*args), cwd=root, env=env, timeout_s=3600)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"K={phones}: the session failed ({done.returncode}):\n{(done.stdout + done.stderr)[-4000:]}")
    server = sum(float(m.group(1)) for log in output.rglob("agentbench-mcp.log") for m in _SERVER_CPU.finditer(log.read_text()))
    agent, warm_programs = 0.0, 0
    for log in output.glob("warm-starts*.log"):
        for match in _WARM_EXIT.finditer(log.read_text()):
            warm_programs += 1
            if match.group(1) == "agentbench-replay":
                agent += float(match.group(2))
    return Measured(phones, wall, 0.0, server, agent, warm_programs, runs)


def run_all(phone_counts: list[int], runs: int, think_s: float, *, warm: bool) -> list[Measured]:
    import resource

    results = []
    with tempfile.TemporaryDirectory(prefix="agentbench-scale-") as scratch:
        root = project(Path(scratch) / "project", think_s)
        with start_private_adb_server(Path(scratch)) as adb:
            for phones in phone_counts:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                measured = measure(root, phones, runs, adb.port, warm=warm)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
                results.append(Measured(measured.phones, measured.wall_s, cpu, measured.server_s, measured.agent_s,
                                        measured.warm_programs, runs))
                print(f"K={phones}: {measured.wall_s:.1f}s wall, {cpu:.1f}s CPU", flush=True)
    return results


def report(results: list[Measured]) -> tuple[str, list[str]]:
    """The table, and the goals that were missed."""
    serial = next(m for m in results if m.phones == min(r.phones for r in results))
    rows = [
        [m.phones, f"{m.wall_s:.1f}", f"{serial.wall_s / m.wall_s:.2f}x", f"{m.cpu_s / m.runs:.2f}", f"{m.pytest_s / m.runs:.2f}",
         f"{m.server_s / m.runs:.2f}", f"{m.agent_s / m.runs:.2f}" if m.warm_programs else "-", str(m.warm_programs)]
        for m in results
    ]
    headers = ["phones", "wall s", "speedup", "CPU s/run", "pytest", "server", "agent", "warm starts"]
    missed = []
    top = max(results, key=lambda m: m.phones)
    if top.phones == 4:
        if serial.wall_s / top.wall_s < SPEEDUP_GOAL:
            missed.append(f"speedup at K=4 is {serial.wall_s / top.wall_s:.2f}x, below the goal of {SPEEDUP_GOAL}x")
        if top.cpu_s / top.runs > CPU_GOAL_S:
            missed.append(f"CPU per run at K=4 is {top.cpu_s / top.runs:.2f}s, above the goal of {CPU_GOAL_S:g}s")
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True), missed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phones", default="1,2,4", help="Phone counts K to measure. Default: %(default)s")
    parser.add_argument("--runs", type=int, default=12, help="Suite runs per session. Default: %(default)s")
    parser.add_argument("--think", type=float, default=2.0, help="Replay think time per step, seconds. Default: %(default)s")
    parser.add_argument("--no-warm", action="store_true", help="Turn warm starts off (agentbench_warm_start = false)")
    args = parser.parse_args(argv)
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    results = run_all([int(k) for k in args.phones.split(",")], args.runs, args.think, warm=not args.no_warm)
    table, missed = report(results)
    print()
    print(f"{args.runs} runs of bug-repro, think time {args.think:g}s per step, warm starts {'off' if args.no_warm else 'on'}")
    print(table)
    print("CPU columns are seconds per run: pytest = everything but the runs' MCP servers and agents")
    print("(agents started cold are not told apart: '-', their CPU is in pytest);")
    print("warm starts = programs the warm-start servers ran (each run's agent and MCP server, each worker's tools/list probe)")
    for problem in missed:
        print(f"MISSED: {problem}")
    if not missed and any(m.phones == 4 for m in results):
        print(f"goals met at K=4: speedup >= {SPEEDUP_GOAL}x and CPU <= {CPU_GOAL_S:g}s per run")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
