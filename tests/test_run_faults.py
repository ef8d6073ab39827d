"""Fault tests for the measured run: hung, killed and interrupted agents, held and crashed locks, a vanishing phone -> outcomes and clean-up.

Every scenario is a real pytest session (a subprocess) on a simulated phone behind a private adb
server, with a private claim root, so what it leaves behind (processes, claim files) can be checked.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from adbserver import PrivateAdbServer, start_private_adb_server
from fakeagents import (
    Behaviour,
    junit_cases,
    make_project,
    pid_alive,
    processes_in_group,
    pytest_argv,
    run_session,
    session_env,
    write_agent,
    write_dispatcher,
)

from pytest_agentbench.device.adb import AdbEndpoint
from pytest_agentbench.device.claims import benchmark_lock_path
from pytest_agentbench.sim.fleet import SimFleet

ANSWER = "Done.\nEXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"
FAST = {"preflight": {"settleSeconds": 0.3}}
# Hang-detector bound for waiting on a marker file or a process; never a timing assertion.
WAIT_S = 120


def _wait_for(path: Path, proc: subprocess.Popen | None = None) -> dict:
    deadline = time.monotonic() + WAIT_S
    while not path.exists():
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"pytest exited {proc.returncode} before {path.name} appeared:\n{out[-3000:]}\n{err[-2000:]}")
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return json.loads(path.read_text(encoding="utf-8"))


def _claim_files(root: Path) -> list[str]:
    """Every file under a claim root."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.exists() else []


def _held(root: Path) -> list[str]:
    """Claim and lock files under a claim root (a reclaim's `.reclaim` flock guard is kept by design)."""
    return [name for name in _claim_files(root) if not name.endswith(".reclaim")]


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    """A private real adb server for this module's sessions (never port 5037), stopped afterwards."""
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


@pytest.fixture(scope="module")
def phone(adb_server: PrivateAdbServer) -> Iterator[str]:
    """One simulated phone attached to the module's adb server (for sessions run with --device SERIAL)."""
    fleet = SimFleet(count=1, adb=adb_server.client())
    try:
        yield fleet.serials[0]
    finally:
        fleet.stop()


# ----------------------------------------------------------------------------- hung and killed agents


@pytest.fixture(scope="module")
def hung_and_killed(adb_server: PrivateAdbServer, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One session: an agent that hangs (timeoutSeconds: 3) and one killed by SIGKILL."""
    tmp = tmp_path_factory.mktemp("hang")
    marker = tmp / "hang-marker.json"
    project = make_project(tmp / "project", {
        "agent-hangs": {**FAST, "claude": {"timeoutSeconds": 3}},
        "agent-killed": FAST,
    })
    agent = write_dispatcher(tmp / "agent", {
        "agent-hangs": Behaviour("hang", {"marker": str(marker)}),
        "agent-killed": Behaviour("signal", {"signal": int(signal.SIGKILL)}),
    })
    env = session_env(adb_server.port, tmp / "claims")
    done = run_session(project, ["benchmark/", "--device", "sim", "--claude", str(agent), f"--junitxml={tmp / 'r.xml'}", "-rA",
                                 "--agentbench-output", str(tmp / "out")], env)
    return {"done": done, "cases": junit_cases(tmp / "r.xml"), "marker": marker, "claims": tmp / "claims"}


@pytest.mark.parametrize(
    ("suite", "reason"),
    [
        ("agent-hangs", "incomplete: the agent timed out after claude.timeoutSeconds=3s"),
        ("agent-killed", "incomplete: the agent was killed by SIGKILL"),
    ],
    ids=["hang-times-out", "killed-by-signal"],
)
def test_hung_or_killed_agent_is_incomplete(hung_and_killed: dict, suite: str, reason: str) -> None:
    case = hung_and_killed["cases"][suite]
    assert (case.outcome, case.type) == ("skipped", "pytest.xfail"), case
    assert case.message.startswith(reason), case.message
    assert case.properties["agentbench_verdict"] == "incomplete"


def test_incomplete_runs_alone_make_the_session_exit_1(hung_and_killed: dict) -> None:
    done = hung_and_killed["done"]
    assert done.returncode == 1, done.stdout[-3000:]
    assert "2 xfailed" in done.stdout


def test_hung_agent_leaves_nothing_running(hung_and_killed: dict) -> None:
    started = json.loads(hung_and_killed["marker"].read_text(encoding="utf-8"))
    # The child ignores SIGTERM: only the group's SIGKILL after the grace period ends it.
    assert processes_in_group(started["pgid"]) == []
    assert not pid_alive(started["pid"]) and not pid_alive(started["child"])
    assert _claim_files(hung_and_killed["claims"]) == []


# ----------------------------------------------------------------------------- Ctrl+C


def test_sigint_mid_run_releases_claims_and_lock_and_leaves_no_child(
    adb_server: PrivateAdbServer, tmp_path: Path
) -> None:
    marker = tmp_path / "agent-started.json"
    project = make_project(tmp_path / "project", {"interrupted": FAST})
    agent = write_agent(tmp_path / "agent", "hang", marker=str(marker))
    claims = tmp_path / "claims"
    env = session_env(adb_server.port, claims)
    proc = subprocess.Popen(
        pytest_argv("benchmark/", "--device", "sim", "--claude", str(agent), "--agentbench-output", str(tmp_path / "out")),
        cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    try:
        started = _wait_for(marker, proc)
        # While the agent runs, the run holds the benchmark lock (the claim was handed over).
        assert any(name.endswith(".agent-benchmark") for name in _claim_files(claims)), _claim_files(claims)
        os.kill(proc.pid, signal.SIGINT)  # pytest only, as a terminal's Ctrl+C would reach it
        out, err = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 2, out[-3000:] + err[-2000:]
    assert "KeyboardInterrupt" in out + err
    assert processes_in_group(started["pgid"]) == [], "the agent's process group outlived pytest"
    assert not pid_alive(started["child"])
    assert processes_in_group(proc.pid) == [], "pytest left a child in its own process group"
    assert _claim_files(claims) == []


# ----------------------------------------------------------------------------- the benchmark lock


def _plant_lock(path: Path, pid: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    acquired = int(time.time() * 1000)
    path.write_text(f"{pid}\nother-session-token\n{json.dumps({'socketPath': '', 'acquiredAt': acquired})}", encoding="utf-8")


def _dead_pid() -> int:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid


@pytest.mark.parametrize(
    ("holder", "outcome", "expected"),
    [
        ("live", "error", "is held by another session: benchmark lock"),
        ("crashed", "passed", ""),
    ],
    ids=["second-session-refused", "crashed-lock-reclaimed"],
)
def test_benchmark_lock_of_another_session(
    adb_server: PrivateAdbServer, phone: str, tmp_path: Path, holder: str, outcome: str, expected: str
) -> None:
    claims = tmp_path / "claims"
    env = session_env(adb_server.port, claims)
    lock = benchmark_lock_path(phone, scope=AdbEndpoint.from_environ(env).scope, root=claims)
    # A live process other than pytest (this test's own) holds it, as another benchmark session would.
    holder_pid = os.getpid() if holder == "live" else _dead_pid()
    _plant_lock(lock, holder_pid)
    project = make_project(tmp_path / "project", {"locked": FAST})
    done = run_session(project, ["benchmark/", "--device", phone, "--claude", "agentbench-replay",
                                 f"--junitxml={tmp_path / 'r.xml'}", "--agentbench-output", str(tmp_path / "out")], env)
    case = junit_cases(tmp_path / "r.xml")["locked"]
    assert case.outcome == outcome, done.stdout[-3000:]
    if holder == "live":
        assert expected in case.text and f"pid {holder_pid} (alive)" in case.text, case.text[-2000:]
        assert lock.exists(), "the other session's lock must be left alone"
        assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("claude.jsonl")), "the agent ran"
    else:
        assert not lock.exists(), "the crashed lock was neither reclaimed nor released"
        assert _held(claims) == []


# ----------------------------------------------------------------------------- the phone goes away


def test_phone_vanishing_mid_run_is_incomplete_with_the_reason(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    serial_file = tmp_path / "serials"
    env = session_env(adb_server.port, tmp_path / "claims")
    sim = subprocess.Popen(
        ["agentbench-sim", "--serial-file", str(serial_file)], env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )
    serial = None
    try:
        deadline = time.monotonic() + WAIT_S
        while not serial_file.exists():
            assert sim.poll() is None, sim.stderr.read().decode(errors="replace") if sim.stderr else ""
            assert time.monotonic() < deadline, "agentbench-sim never attached its phone"
            time.sleep(0.05)
        serial = serial_file.read_text(encoding="utf-8").split()[0]
        project = make_project(tmp_path / "project", {"phone-vanishes": FAST})
        agent = write_agent(tmp_path / "agent", "kill-then-answer", pid=sim.pid, final=ANSWER)
        done = run_session(project, ["benchmark/", "--device", serial, "--claude", str(agent),
                                     f"--junitxml={tmp_path / 'r.xml'}", "--agentbench-output", str(tmp_path / "out")], env)
    finally:
        if sim.poll() is None:
            os.killpg(sim.pid, signal.SIGKILL)
        sim.wait(timeout=30)
        if serial:
            adb_server.run_adb("disconnect", serial)
    assert sim.returncode == -signal.SIGKILL, "the agent did not kill the phone: the test proves nothing"
    case = junit_cases(tmp_path / "r.xml")["phone-vanishes"]
    assert (case.outcome, case.type) == ("skipped", "pytest.xfail"), done.stdout[-3000:]
    assert "the device went away" in case.message, case.message
    assert done.returncode == 1
    assert _claim_files(tmp_path / "claims") == []
