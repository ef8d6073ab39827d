"""The run's own leftover daemon -> stopped before the take-back (screen read, verdict kept); an interloper's claim -> left alone, screen not read.

A daemon that detaches from the agent's process group outlives the runner's group stop; holding
the device claim it would block the take-back, and the screen oracle would falsely fail the run.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from adbserver import PrivateAdbServer, start_private_adb_server
from fakeagents import UNCONFINED, junit_cases, make_project, pid_alive, run_session, session_env, write_agent

from pytest_agentbench.run.postrun import processes_with_token

ANSWER = "Done.\nEXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"
# The start screen already shows what the screen check wants, so only the take-back decides it.
SUITE = {"preflight": {"settleSeconds": 0.3}, "verify": {"screenIncludes": ["Bug Reproduction Demo"]}}


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


def _session(tmp_path: Path, adb_server: PrivateAdbServer, kind: str) -> tuple[object, dict, Path]:
    project = make_project(tmp_path / "project", {"daemon": SUITE})
    marker = tmp_path / "daemon.json"
    agent = write_agent(tmp_path / "agent", "detached-daemon", kind=kind, marker=str(marker), final=ANSWER,
                        socket=str(tmp_path / "elsewhere" / "other.sock"), output=str(tmp_path / "out"))
    env = session_env(adb_server.port, tmp_path / "claims")
    done = run_session(project, ["benchmark/", *UNCONFINED, "--device", "sim", "--claude", str(agent), f"--junitxml={tmp_path / 'r.xml'}",
                                 "--agentbench-output", str(tmp_path / "out")], env)
    return done, json.loads(marker.read_text(encoding="utf-8")), tmp_path / "out"


def test_the_runs_own_detached_daemon_is_stopped_and_the_screen_read(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    done, started, output = _session(tmp_path, adb_server, "own")
    try:
        case = junit_cases(tmp_path / "r.xml")["daemon"]
        assert case.outcome == "passed", done.stdout[-3000:]
        assert not pid_alive(started["daemon"]), "the run's daemon outlived the run"
        (log,) = output.rglob("postrun.log")
        assert f"stopped the run's leftover pid {started['daemon']}" in log.read_text(encoding="utf-8")
        assert list(output.rglob("screen.xml")), "the screen was not read"
    finally:
        if pid_alive(started["daemon"]):
            os.killpg(started["daemon"], signal.SIGKILL)


def test_an_interlopers_claim_is_left_alone_and_the_screen_not_read(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    done, started, output = _session(tmp_path, adb_server, "interloper")
    try:
        case = junit_cases(tmp_path / "r.xml")["daemon"]
        assert case.outcome == "failure", done.stdout[-3000:]
        assert "another session claimed the device during the run, so the screen was not read" in case.message, case.message
        assert pid_alive(started["daemon"]), "the harness stopped a process that was not the run's"
        assert not list(output.rglob("screen.xml"))
    finally:
        if pid_alive(started["daemon"]):
            os.killpg(started["daemon"], signal.SIGKILL)


def test_processes_are_found_by_the_run_token_they_inherit(tmp_path: Path) -> None:
    import subprocess
    import sys

    token = "feedfacecafebeef"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env={**os.environ, "AGENTBENCH_RUN_TOKEN": token},
                             start_new_session=True)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env={**os.environ, "AGENTBENCH_RUN_TOKEN": "another"},
                             start_new_session=True)
    try:
        found = processes_with_token(token)
        assert [(p.pid, p.pgid) for p in found] == [(child.pid, child.pid)]
    finally:
        for process in (child, other):
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
