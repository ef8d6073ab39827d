"""Every kind of saved run the fault tests make -> `--agentbench-from-result` reproduces its recorded verdict and reasons exactly.

Three real sessions save the runs: fake agents that hang, die by a signal, run out of budget,
print garbage or answer without the device (on `--device sim`); an agent whose MCP server cannot
list its tools (an empty AutoMobile checkout); and an agent that kills the phone mid-run. Each
run directory is then re-rendered in a session with no device at all.
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
from fakeagents import UNCONFINED, Behaviour, make_project, run_session, session_env, write_agent, write_dispatcher

ANSWER = "Done.\nEXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"
FAST = {"preflight": {"settleSeconds": 0.3}}
WAIT_S = 120  # hang detector for the simulated phone to attach; never a timing assertion


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


def _runs(output: Path) -> dict[str, dict]:
    """Suite name -> its saved result.json (one run each)."""
    found = {}
    for path in output.rglob("result.json"):
        if "rerendered" not in path.parts:
            document = json.loads(path.read_text(encoding="utf-8"))
            found[document["suite"]] = document
    return found


@pytest.fixture(scope="module")
def saved_runs(adb_server: PrivateAdbServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("faults")
    output = tmp / "out"
    # Session 1: misbehaving agents on a simulated phone.
    project = make_project(tmp / "project", {
        "hangs": {**FAST, "claude": {"timeoutSeconds": 2}},
        "killed": FAST,
        "over-budget": FAST,
        "garbage": FAST,
        "no-device-use": FAST,
    })
    agent = write_dispatcher(tmp / "agent", {
        "hangs": Behaviour("hang", {"marker": str(tmp / "hang.json")}),
        "killed": Behaviour("signal", {"signal": int(signal.SIGKILL)}),
        "over-budget": Behaviour("error-result", {"final": ANSWER}),
        "garbage": Behaviour("garbage", {"final": ANSWER}),
        "no-device-use": Behaviour("answer", {"final": ANSWER}),
    })
    env = session_env(adb_server.port, tmp / "claims")
    done = run_session(project, ["benchmark/", *UNCONFINED, "--device", "sim", "--claude", str(agent), "--agentbench-output", str(output)], env)
    assert done.returncode == 1, done.stdout[-3000:]

    # Session 2: the server cannot list its tools (an empty AutoMobile checkout), the agent answers.
    probe_project = make_project(tmp / "probe-project", {"probe-failed": FAST})
    (probe_project / "pytest.ini").write_text(
        f"[pytest]\nagentbench_server = auto-mobile\nagentbench_automobile_dir = {tmp / 'empty-checkout'}\n", encoding="utf-8",
    )
    (tmp / "empty-checkout").mkdir()
    answering = write_agent(tmp / "answering", "answer", final=ANSWER)
    done = run_session(probe_project, ["benchmark/", "--device", "sim", "--claude", str(answering), "--agentbench-output", str(output)], env)
    assert done.returncode == 1, done.stdout[-3000:]

    # Session 3: the agent kills the phone (its agentbench-sim process), then answers.
    serial_file = tmp / "serials"
    sim = subprocess.Popen(["agentbench-sim", "--serial-file", str(serial_file)], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    serial = None
    try:
        deadline = time.monotonic() + WAIT_S
        while not serial_file.exists():
            assert sim.poll() is None and time.monotonic() < deadline, "agentbench-sim never attached its phone"
            time.sleep(0.05)
        serial = serial_file.read_text(encoding="utf-8").split()[0]
        lost_project = make_project(tmp / "lost-project", {"device-lost": FAST})
        killer = write_agent(tmp / "killer", "kill-then-answer", pid=sim.pid, final=ANSWER)
        done = run_session(lost_project, ["benchmark/", *UNCONFINED, "--device", serial, "--claude", str(killer), "--agentbench-output", str(output)], env)
    finally:
        if sim.poll() is None:
            os.killpg(sim.pid, signal.SIGKILL)
        sim.wait(timeout=30)
        if serial:
            adb_server.run_adb("disconnect", serial)
    assert done.returncode == 1, done.stdout[-3000:]
    return _runs(output)


# Suite -> the verdict it must have been recorded with and a reason fragment, so the test proves
# each fault really happened before it proves the re-render reproduces it.
FAULTS = {
    "hangs": ("incomplete", "the agent timed out after claude.timeoutSeconds=2s"),
    "killed": ("incomplete", "the agent was killed by SIGKILL"),
    "over-budget": ("incomplete", "the run ended in error_max_budget_usd"),
    "garbage": ("incomplete", "stream lines did not parse"),
    "no-device-use": ("failed", "no successful call to a device-aware tool"),
    "probe-failed": ("incomplete", "the harness could not list the MCP server's tools"),
    "device-lost": ("incomplete", "the device went away during the run"),
}


@pytest.mark.parametrize("suite", list(FAULTS))
def test_a_rerender_reproduces_the_recorded_verdict(saved_runs: dict[str, dict], adb_server: PrivateAdbServer, tmp_path: Path, suite: str) -> None:
    recorded = saved_runs[suite]
    status, fragment = FAULTS[suite]
    assert recorded["verdict"]["status"] == status and any(fragment in reason for reason in recorded["verdict"]["reasons"]), recorded["verdict"]

    project = tmp_path / "rerender"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    json_path = tmp_path / "session.json"
    # No device, no adb server the re-render could use: a re-render runs nothing.
    env = session_env(adb_server.port, tmp_path / "claims")
    done = run_session(project, ["--agentbench-from-result", recorded["runDirectory"], "--agentbench-json", str(json_path),
                                 "--agentbench-output", str(tmp_path / "out")], env)
    (result,) = json.loads(json_path.read_text(encoding="utf-8"))["runs"]
    assert result["verdict"] == recorded["verdict"], done.stdout[-3000:]
    assert result["checks"] == recorded["checks"]
    assert result["rerendered"]["verdictWhenRecorded"] == recorded["verdict"]
    assert done.returncode == (0 if status == "passed" else 1)
    # The saved run directory is only read: the re-render's document lives under the output.
    assert Path(result["runDirectory"]) == Path(recorded["runDirectory"])
    assert not list(Path(recorded["runDirectory"]).glob("rerendered*"))
