"""Fault tests for the measured run: hung, silent, lingering, killed and interrupted agents, held and crashed locks, a vanishing phone -> outcomes and clean-up.

Every scenario is a real pytest session (a subprocess) on a simulated phone behind a private adb
server, with a private claim root, so what it leaves behind (processes, claim files) can be checked.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from adbserver import PrivateAdbServer, free_port, start_private_adb_server
from fakeagents import (
    UNCONFINED,
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

from pytest_agentbench.fixtures import WARM_LOG_NAME
from pytest_agentbench.device.adb import Adb, AdbEndpoint
from pytest_agentbench.device.claims import benchmark_lock_path
from pytest_agentbench.run.runner import DEFAULT_GRACE_SECONDS
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
    """One session: an agent that hangs (timeoutSeconds: 3), one killed by SIGKILL, one silent past
    idleTimeoutSeconds, and one that plays its plan and then lingers after its result event."""
    tmp = tmp_path_factory.mktemp("hang")
    marker, silent, linger = tmp / "hang-marker.json", tmp / "silent-marker.json", tmp / "linger-marker.json"
    project = make_project(tmp / "project", {
        "agent-hangs": {**FAST, "claude": {"timeoutSeconds": 3}},
        "agent-killed": FAST,
        "agent-silent": {**FAST, "claude": {"idleTimeoutSeconds": 5}},
        "agent-lingers": FAST,
    })
    agent = write_dispatcher(tmp / "agent", {
        "agent-hangs": Behaviour("hang", {"marker": str(marker)}),
        "agent-killed": Behaviour("signal", {"signal": int(signal.SIGKILL)}),
        "agent-silent": Behaviour("hang", {"marker": str(silent)}),
        "agent-lingers": Behaviour("replay-linger", {"marker": str(linger)}),
    }, project=project)
    env = session_env(adb_server.port, tmp / "claims")
    done = run_session(project, ["benchmark/", *UNCONFINED, "--device", "sim", "--claude", str(agent), f"--junitxml={tmp / 'r.xml'}", "-rA",
                                 "--agentbench-output", str(tmp / "out")], env)
    return {"done": done, "cases": junit_cases(tmp / "r.xml"), "markers": [marker, silent, linger],
            "claims": tmp / "claims", "project": project, "env": env}


@pytest.mark.parametrize(
    ("suite", "reason"),
    [
        ("agent-hangs", "incomplete: the agent timed out after claude.timeoutSeconds=3s"),
        ("agent-killed", "incomplete: the agent was killed by SIGKILL"),
        ("agent-silent", "incomplete: no output for 5 s (claude.idleTimeoutSeconds)"),
    ],
    ids=["hang-times-out", "killed-by-signal", "silent-past-idle-timeout"],
)
def test_hung_or_killed_agent_is_incomplete(hung_and_killed: dict, suite: str, reason: str) -> None:
    case = hung_and_killed["cases"][suite]
    assert (case.outcome, case.type) == ("skipped", "pytest.xfail"), case
    assert case.message.startswith(reason), case.message
    assert case.properties["agentbench_verdict"] == "incomplete"


def test_silent_agent_is_ended_at_the_idle_timeout_not_the_timeout(hung_and_killed: dict) -> None:
    result = _result(hung_and_killed["cases"]["agent-silent"])
    process = result["auditInputs"]["process"]
    assert process["stoppedBecause"] == "no output for 5 s (claude.idleTimeoutSeconds)"
    assert not process["timedOut"]
    # Bounded by the suite's default timeoutSeconds (900) otherwise; a hang detector, not a timing test.
    assert process["wallClockSeconds"] < 120, process


def test_agent_lingering_after_its_result_is_ended_and_keeps_its_verdict(hung_and_killed: dict) -> None:
    case = hung_and_killed["cases"]["agent-lingers"]
    assert case.outcome == "passed", case.text[-2000:]
    result = _result(case)
    process = result["auditInputs"]["process"]
    # Recorded as it happened: the harness ended the group (SIGTERM) after the result event.
    assert process["endedAfterResult"] is True and process["signal"] == signal.SIGTERM, process
    assert result["verdict"] == {"status": "passed", "reasons": []}
    # The agent would have slept 600 s; the grace after the result is 5 s.
    assert process["wallClockSeconds"] < 120, process
    assert result["timing"]["agent"]["afterResultSeconds"] >= 4.5, result["timing"]


def test_incomplete_runs_alone_make_the_session_exit_1(hung_and_killed: dict) -> None:
    done = hung_and_killed["done"]
    assert done.returncode == 1, done.stdout[-3000:]
    assert "3 xfailed" in done.stdout and "1 passed" in done.stdout


def test_hung_agents_leave_nothing_running(hung_and_killed: dict) -> None:
    for marker in hung_and_killed["markers"]:
        started = json.loads(marker.read_text(encoding="utf-8"))
        # The hang agents' children ignore SIGTERM: only the group's SIGKILL after the grace ends them.
        assert processes_in_group(started["pgid"]) == [], marker.name
        assert not pid_alive(started["pid"]) and not pid_alive(started.get("child", started["pid"])), marker.name
    assert _claim_files(hung_and_killed["claims"]) == []


@pytest.mark.parametrize("suite", ["agent-silent", "agent-lingers"])
def test_rerender_of_harness_ended_runs_keeps_the_recorded_verdict(hung_and_killed: dict, suite: str, tmp_path: Path) -> None:
    recorded = _result(hung_and_killed["cases"][suite])
    document = tmp_path / "rerendered.json"
    run_session(hung_and_killed["project"], ["--agentbench-from-result", recorded["runDirectory"],
                                             "--agentbench-json", str(document), "--agentbench-output", str(tmp_path / "out")],
                hung_and_killed["env"])
    (rerendered,) = json.loads(document.read_text(encoding="utf-8"))["runs"]
    assert rerendered["verdict"] == recorded["verdict"]
    assert rerendered["timing"] == recorded["timing"]


def _result(case) -> dict:
    return json.loads((Path(case.properties["agentbench_run_dir"]) / "result.json").read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------- Ctrl+C, SIGTERM, SIGHUP


def _default_signals() -> None:
    # A signal ignored by whoever started this test run (a background job ignores SIGINT, nohup
    # SIGHUP) stays ignored in children, and Python then never turns SIGINT into KeyboardInterrupt:
    # the pytest under test must get the default dispositions for the signal it is sent to mean anything.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


class _Interrupted:
    """A pytest session under test, started in its own process group, with a hung agent in another."""

    def __init__(self, tmp_path: Path, env: dict[str, str], suites: dict) -> None:
        self.marker = tmp_path / "agent-started.json"
        project = make_project(tmp_path / "project", suites)
        agent = write_agent(tmp_path / "agent", "hang", marker=str(self.marker))
        self.proc = subprocess.Popen(
            pytest_argv("benchmark/", *UNCONFINED, "--device", "sim", "--claude", str(agent), "--agentbench-output", str(tmp_path / "out")),
            cwd=project, env={**env, "PYTHONFAULTHANDLER": "1"}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_default_signals,
        )
        self.agent: dict | None = None
        self.warm_log = tmp_path / "out" / WARM_LOG_NAME

    def warm_server_gone(self, within_s: float = 10.0) -> bool:
        """Whether the session's warm-start server (the pid its log names) has exited, waiting up to `within_s`."""
        ready = [line for line in self.warm_log.read_text(encoding="utf-8").splitlines() if " ready pid=" in line]
        assert ready, f"the session started no warm-start server: the check proves nothing ({self.warm_log})"
        pid = int(ready[-1].split(" ready pid=")[1].split()[0])
        deadline = time.monotonic() + within_s
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        return not pid_alive(pid)

    def wait_for_agent(self) -> dict:
        self.agent = _wait_for(self.marker, self.proc)
        return self.agent

    def finish(self) -> tuple[str, str]:
        """Wait for pytest to exit; a hang dumps its threads (faulthandler) into the failure."""
        try:
            return self.proc.communicate(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGABRT)
            out, err = self.proc.communicate(timeout=30)
            raise AssertionError(f"pytest did not exit within {WAIT_S}s of the signal:\n{out[-3000:]}\n{err[-12000:]}") from None

    def cleanup(self) -> None:
        """Whatever happened: kill pytest's group and the agent's group (the marker names it)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        agent = self.agent
        if agent is None and self.marker.exists():
            agent = json.loads(self.marker.read_text(encoding="utf-8"))
        if agent is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(agent["pgid"], signal.SIGKILL)


def test_sigint_mid_run_releases_claims_and_lock_and_leaves_no_child(
    adb_server: PrivateAdbServer, tmp_path: Path
) -> None:
    claims = tmp_path / "claims"
    session = _Interrupted(tmp_path, session_env(adb_server.port, claims, own_warm_starts=True), {"interrupted": FAST})
    try:
        started = session.wait_for_agent()
        # While the agent runs, the run holds the benchmark lock (the claim was handed over).
        assert any(name.endswith(".agent-benchmark") for name in _claim_files(claims)), _claim_files(claims)
        os.kill(session.proc.pid, signal.SIGINT)  # pytest only, as a terminal's Ctrl+C would reach it
        out, err = session.finish()
    finally:
        session.cleanup()
    assert session.proc.returncode == 2, out[-3000:] + err[-2000:]
    assert "KeyboardInterrupt" in out + err
    assert processes_in_group(started["pgid"]) == [], "the agent's process group outlived pytest"
    assert not pid_alive(started["child"])
    assert processes_in_group(session.proc.pid) == [], "pytest left a child in its own process group"
    assert _claim_files(claims) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_mid_run_stops_the_agent_and_what_the_session_started(tmp_path: Path, signum: int) -> None:
    # No adb server listens on this port: the session starts one, and must stop it again.
    port = free_port()
    claims = tmp_path / "claims"
    session = _Interrupted(tmp_path, session_env(port, claims, own_warm_starts=True), {"terminated": FAST})
    adb = Adb(AdbEndpoint("127.0.0.1", port))
    try:
        started = session.wait_for_agent()
        assert adb.server_running(), "the session did not start its own adb server"
        os.kill(session.proc.pid, signum)  # how CI cancels a job, `timeout` ends it, a closed terminal hangs up
        out, err = session.finish()
    finally:
        session.cleanup()
        deadline = time.monotonic() + 10
        while adb.server_running() and time.monotonic() < deadline:
            time.sleep(0.1)
        stopped_adb = not adb.server_running()
        if not stopped_adb:
            adb.kill_server(timeout_s=10)
    assert session.proc.returncode == 2, out[-3000:] + err[-2000:]
    assert f"{signal.Signals(signum).name} received" in out + err, out[-3000:]
    assert processes_in_group(started["pgid"]) == [], "the agent's process group outlived pytest"
    assert not pid_alive(started["pid"]) and not pid_alive(started["child"])
    assert processes_in_group(session.proc.pid) == [], "pytest left a child in its own process group"
    assert _claim_files(claims) == []
    assert stopped_adb, "the adb server the session started outlived it"
    assert session.warm_server_gone(), "the warm-start server outlived the session"


def test_a_second_ctrl_c_ends_at_once(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    claims = tmp_path / "claims"
    session = _Interrupted(tmp_path, session_env(adb_server.port, claims, own_warm_starts=True), {"impatient": FAST})
    try:
        started = session.wait_for_agent()
        os.kill(session.proc.pid, signal.SIGINT)
        # The agent dies of the group's SIGTERM; its child ignores it, so pytest now waits out the
        # 5 s grace before SIGKILL. The second Ctrl+C must not wait for it.
        deadline = time.monotonic() + WAIT_S
        while pid_alive(started["pid"]):
            assert time.monotonic() < deadline, "the first Ctrl+C did not stop the agent"
            time.sleep(0.02)
        assert pid_alive(started["child"]), "the child did not survive SIGTERM: the test proves nothing"
        second = time.monotonic()
        os.kill(session.proc.pid, signal.SIGINT)
        out, err = session.finish()
        took = time.monotonic() - second
    finally:
        session.cleanup()
    assert session.proc.returncode == 2, out[-3000:] + err[-2000:]
    assert "a second signal (SIGINT): killed 1 agent process group(s), exiting now" in err, err[-3000:]
    assert took < DEFAULT_GRACE_SECONDS - 1, f"the second Ctrl+C took {took:.1f}s"
    # SIGKILL takes effect asynchronously: a loaded machine may still be tearing the child down.
    deadline = time.monotonic() + 10
    while processes_in_group(started["pgid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_in_group(started["pgid"]) == []
    assert not pid_alive(started["child"])
    assert _claim_files(claims) == []
    assert session.warm_server_gone(), "the warm-start server outlived a forced exit"


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
        done = run_session(project, ["benchmark/", *UNCONFINED, "--device", serial, "--claude", str(agent),
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
    # Unconfined, the agent could reach the phone itself (this one killed it): its doing, in the rate.
    verdict = json.loads((Path(case.properties["agentbench_run_dir"]) / "result.json").read_text(encoding="utf-8"))["verdict"]
    assert verdict["incompleteCause"] == "agent" and "the agent could reach the device itself" in verdict["reasons"][0], verdict
    assert done.returncode == 1
    assert _claim_files(tmp_path / "claims") == []
