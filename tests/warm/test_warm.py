"""Tests for warm/: a launcher hands its stdio to the fork server's program and stands in for it, keeping the process-group rules."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakeagents import pid_alive
from pytest_agentbench.warm.forkserver import WarmStarts, start_fork_server
from pytest_agentbench.warm.launch import SOCKET_VARIABLE, START_WAIT_S, group_members

# Programs the test server serves besides the real two (module `warmprograms` in tmp_path).
PROGRAMS = '''
import json, os, signal, subprocess, sys, time

def echo():
    data = sys.stdin.read()
    print(json.dumps({"stdin": data, "argv": sys.argv, "cwd": os.getcwd(), "env": os.environ.get("WARM_TEST"),
                      "pid": os.getpid(), "pgid": os.getpgrp()}))
    sys.stderr.write("to stderr\\n")
    return int(os.environ.get("WARM_EXIT", "0"))

def sleeper():
    # A child in the program's group that ignores SIGTERM, as a stuck MCP server might.
    child = subprocess.Popen([sys.executable, "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
    with open(sys.argv[1] + ".partial", "w") as out:
        json.dump({"pid": os.getpid(), "child": child.pid}, out)
    os.replace(sys.argv[1] + ".partial", sys.argv[1])
    time.sleep(600)

def suicide():
    os.kill(os.getpid(), signal.SIGKILL)

def crash():
    raise RuntimeError("boom")
'''
NAMES = {name: f"warmprograms:{name}" for name in ("echo", "sleeper", "suicide", "crash")}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[WarmStarts]:
    (tmp_path / "warmprograms.py").write_text(PROGRAMS, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    handle = start_fork_server(programs={f"warm-{name}": target for name, target in NAMES.items()}, env=env,
                               log_path=tmp_path / "forkserver.log")
    try:
        assert handle.wait_ready(60), handle.log_path.read_text()
        yield handle
    finally:
        handle.stop()
        assert not group_members(handle.process.pid) and not handle.directory.exists()


def launch(server: WarmStarts, program: str, *args: str, **kwargs) -> subprocess.Popen:
    """A launcher process in its own session (like the agent's group), standing in for `program`."""
    code = f"import sys\nfrom pytest_agentbench.warm.launch import handoff\nr = handoff({program!r})\nprint('in process' if r is None else '', end='')\nsys.exit(r or 0)"
    env = {**os.environ, **server.environ(), **kwargs.pop("env", {})}
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, start_new_session=True, text=True, **kwargs)


def wait_for(path: Path, timeout_s: float = 30) -> dict:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    return json.loads(path.read_text())


def test_the_program_gets_the_launchers_stdio_argv_environment_and_directory(server: WarmStarts, tmp_path: Path) -> None:
    proc = launch(server, "warm-echo", "one", "two words", cwd=tmp_path, env={"WARM_TEST": "x", "WARM_EXIT": "3"},
                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate("hello\n", timeout=60)
    seen = json.loads(out)
    assert proc.returncode == 3
    assert (seen["stdin"], seen["argv"], seen["cwd"], seen["env"]) == ("hello\n", ["warm-echo", "one", "two words"], str(tmp_path), "x")
    # Forked by the server, not the launcher; in a group of its own.
    assert seen["pid"] != proc.pid and seen["pgid"] == seen["pid"]
    assert err == "to stderr\n"
    assert f"exit warm-echo pid={seen['pid']} {{'exit': 3}} cpu=" in server.log_path.read_text()


def test_stopping_the_launchers_group_stops_the_program_and_its_children_first(server: WarmStarts, tmp_path: Path) -> None:
    marker = tmp_path / "marker.json"
    proc = launch(server, "warm-sleeper", str(marker))
    pids = wait_for(marker)
    os.killpg(proc.pid, signal.SIGTERM)  # what the runner does to the agent's group
    proc.wait(timeout=30)
    # By the time the stand-in is gone, so is everything it stood for (the child ignored SIGTERM).
    assert not pid_alive(pids["pid"]) and not pid_alive(pids["child"])
    assert proc.returncode == -signal.SIGTERM  # the program died by SIGTERM, and so does its stand-in


def test_a_killed_launcher_takes_its_program_with_it(server: WarmStarts, tmp_path: Path) -> None:
    marker = tmp_path / "marker.json"
    proc = launch(server, "warm-sleeper", str(marker))
    pids = wait_for(marker)
    os.killpg(proc.pid, signal.SIGKILL)  # cannot be passed on: the server sees the connection close
    proc.wait(timeout=30)
    deadline = time.monotonic() + 5
    while (pid_alive(pids["pid"]) or pid_alive(pids["child"])) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not pid_alive(pids["pid"]) and not pid_alive(pids["child"])
    assert "went away; killing its group" in server.log_path.read_text()


def test_stopping_the_server_stops_what_it_runs(server: WarmStarts, tmp_path: Path) -> None:
    marker = tmp_path / "marker.json"
    proc = launch(server, "warm-sleeper", str(marker), stderr=subprocess.PIPE)
    pids = wait_for(marker)
    server.stop()
    _, err = proc.communicate(timeout=30)
    assert not pid_alive(pids["pid"]) and not pid_alive(pids["child"])
    # The program died by the server's SIGTERM; its stand-in says so by its own status.
    assert proc.returncode in (-signal.SIGTERM, 1), err


@pytest.mark.parametrize(
    ("program", "returncode", "stderr"),
    [("warm-suicide", -signal.SIGKILL, ""), ("warm-crash", 1, "RuntimeError: boom")],
    ids=["killed-by-a-signal", "uncaught-exception"],
)
def test_how_the_program_ended_is_how_the_launcher_ends(server: WarmStarts, program: str, returncode: int, stderr: str) -> None:
    proc = launch(server, program, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == returncode and stderr in err


@pytest.mark.parametrize(
    "environment",
    [{SOCKET_VARIABLE: ""}, {SOCKET_VARIABLE: "/nonexistent/fork.sock"}, {}],
    ids=["empty-variable", "no-server-there", "unknown-program"],
)
def test_without_a_usable_server_the_program_runs_in_process(server: WarmStarts, environment: dict[str, str]) -> None:
    program = "warm-echo" if environment else "no-such-program"
    proc = launch(server, program, env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out) == (0, "in process"), err


def test_the_console_scripts_answer_the_same_warm_and_cold(server: WarmStarts) -> None:
    warm = subprocess.run(["agentbench-replay", "--version"], env={**os.environ, **server.environ()}, capture_output=True, text=True, timeout=60)
    cold = subprocess.run(["agentbench-replay", "--version"], env={k: v for k, v in os.environ.items() if k != SOCKET_VARIABLE},
                          capture_output=True, text=True, timeout=60)
    assert (warm.returncode, warm.stdout) == (cold.returncode, cold.stdout) == (0, cold.stdout)
    assert "exit agentbench-replay" in server.log_path.read_text()


def _slow_server(tmp_path: Path, module_body: str) -> WarmStarts:
    # A server whose preload takes a while (or fails): launchers come while it imports.
    (tmp_path / "slowprograms.py").write_text(module_body + PROGRAMS, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    return start_fork_server(programs={"warm-echo": "slowprograms:echo"}, env=env, log_path=tmp_path / "forkserver.log")


def test_a_launcher_that_comes_while_the_server_imports_waits_for_it(tmp_path: Path) -> None:
    # Running in process instead would import everything a second time beside the server.
    gate = tmp_path / "gate"
    handle = _slow_server(tmp_path, f"import os, time\nwhile not os.path.exists({str(gate)!r}):\n    time.sleep(0.02)\n")
    try:
        proc = launch(handle, "warm-echo", stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.5)  # the launcher is waiting, the server still importing
        assert proc.poll() is None and not handle.socket_path.exists()
        gate.touch()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "in process" not in out and json.loads(out)["pid"] != proc.pid, err
        assert "exit warm-echo" in handle.log_path.read_text()
    finally:
        handle.stop()
    assert not handle.directory.exists()


def test_a_server_that_dies_while_importing_is_not_waited_for(tmp_path: Path) -> None:
    handle = _slow_server(tmp_path, "import time\ntime.sleep(1)\nraise SystemExit('the preload failed')\n")
    try:
        started = time.monotonic()
        proc = launch(handle, "warm-echo", stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate(timeout=60)
        assert (proc.returncode, out) == (0, "in process"), err
        # Far less than the launcher's whole wait: it stopped when the server's lock went with it.
        assert time.monotonic() - started < START_WAIT_S / 2
    finally:
        handle.stop()
