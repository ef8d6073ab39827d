"""A session interrupted mid-way -> its document says so (what stopped it, the runs that got no verdict), and --agentbench-compare refuses it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from adbserver import PrivateAdbServer, start_private_adb_server
from fakeagents import UNCONFINED, make_project, pytest_argv, run_session, session_env, write_agent

FAST = {"preflight": {"settleSeconds": 0.3}}
WAIT_S = 120


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


def _default_signals() -> None:
    # A SIGINT ignored by whoever started this test run would stay ignored in the session under test.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def test_an_interrupted_session_records_it_and_is_refused_as_a_baseline(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    marker = tmp_path / "agent-started.json"
    project = make_project(tmp_path / "project", {"first": FAST, "second": FAST, "third": FAST})
    agent = write_agent(tmp_path / "agent", "hang", marker=str(marker))
    env = session_env(adb_server.port, tmp_path / "claims")
    document = tmp_path / "a.json"
    proc = subprocess.Popen(
        pytest_argv("benchmark/", *UNCONFINED, "--device", "sim", "--claude", str(agent), "--agentbench-output", str(tmp_path / "out"),
                    "--agentbench-json", str(document)),
        cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=_default_signals,
    )
    started = None
    try:
        deadline = time.monotonic() + WAIT_S
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), "the agent never started"
        started = json.loads(marker.read_text(encoding="utf-8"))
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if started is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(started["pgid"], signal.SIGKILL)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:] + err[-2000:]
    # One line says what finished and what did not; pytest's KeyboardInterrupt line names no frame of ours.
    assert "agentbench: interrupted by SIGINT: 0 of 3 runs finished; 3 did not run" in out, out[-3000:]
    assert not re.search(r"pytest_agentbench/\S+\.py:\d+: KeyboardInterrupt", out), out[-3000:]
    written = json.loads(document.read_text(encoding="utf-8"))
    nodes = [f"benchmark/agent/suites/{name}.yml::{name}" for name in ("first", "second", "third")]
    # The run the signal cut short got no verdict either: all three are listed.
    assert written["interrupted"] == {"by": "SIGINT", "runsCollected": 3, "notRun": nodes}, written.get("interrupted")

    refused = run_session(project, ["benchmark/", "--agentbench-dry-run", "--agentbench-compare", str(document)], env)
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR, refused.stdout[-2000:]
    assert (f"ERROR: --agentbench-compare {document}: the session was interrupted (SIGINT) before its end, and 3 of 3 runs "
            "never got a verdict; a baseline must be a whole session: run it again to its end") in refused.stderr


def test_a_session_stopped_by_maxfail_records_the_runs_it_never_ran(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", {"first": FAST, "second": FAST})
    # An answer without a tool call is a failed run (not an incomplete one, which -x lets by).
    agent = write_agent(tmp_path / "agent", "answer", final="Done.")
    document = tmp_path / "a.json"
    done = run_session(project, ["benchmark/", *UNCONFINED, "--device", "sim", "--claude", str(agent), "-x", "--agentbench-output",
                                 str(tmp_path / "out"), "--agentbench-json", str(document)],
                       session_env(adb_server.port, tmp_path / "claims"))
    written = json.loads(document.read_text(encoding="utf-8"))
    assert written["interrupted"]["by"].startswith("stopping after 1 failures"), done.stdout[-3000:]
    assert written["interrupted"]["notRun"] == ["benchmark/agent/suites/second.yml::second"]
