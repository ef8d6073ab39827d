"""`pytest benchmark/ --device SERIAL --agentbench-doctor` as a user runs it: a line per suite, exit 0 only when every one is ready."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from adbserver import one_simulated_phone
from fakeagents import REPO, make_project, run_session, session_env

ALL_SUITES = sorted(path.stem for path in (REPO / "benchmark" / "agent" / "suites").glob("*.yml"))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    with one_simulated_phone(tmp_path_factory.mktemp("adb")) as lab:
        yield lab


def _doctor(lab, project: Path, tmp: Path, *args: str):
    server, fleet = lab
    env = session_env(server.port, tmp / "claims", COLUMNS="400")
    return run_session(project, ["benchmark/", "--device", fleet.serials[0], "--agentbench-doctor",
                                 "--agentbench-output", str(tmp / "out"), *args], env)


def test_every_committed_suite_reads_ready_on_the_simulated_phone(lab, tmp_path: Path) -> None:
    done = _doctor(lab, REPO, tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    section = output.split("agentbench doctor", 1)[1]
    lines = [line for line in section.splitlines() if ": ready" in line]
    assert sorted(line.split(":", 1)[0] for line in lines) == ALL_SUITES
    assert "clock-world-clock: ready (com.android.deskclock 14, root: su 0)" in lines
    assert "21 passed" in output
    # No run: no run directory was made and no agent started.
    assert not list((tmp_path / "out").rglob("result.json"))


def test_a_suite_the_image_cannot_run_fails_the_session_with_its_line(lab, tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", {
        "needs-an-app": {"app": {"packageName": "com.example.absent"}},
        "runs-here": {},
    })
    done = _doctor(lab, project, tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-3000:]
    assert ("needs-an-app: not ready: com.example.absent is not installed (needed for the suite's app): install it on the image"
            in output)
    assert "runs-here: ready (dev.jasonpearson.automobile.playground 1.0.0)" in output
    assert "1 failed, 1 passed" in output
    assert "Traceback" not in output


def test_the_doctor_runs_no_suite_so_it_refuses_the_run_options(lab, tmp_path: Path) -> None:
    done = _doctor(lab, REPO, tmp_path, "--agentbench-prove")
    assert done.returncode == 4
    assert "--agentbench-doctor reads the device and runs no suite: it cannot be combined with" in done.stderr


def test_a_phone_whose_su_takes_dash_c_reads_ready_with_that_form(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """A Magisk-style su (`su 0 id` is not root there): the doctor names `su -c`, the fingerprint's suForm, and reads bugle_db with it."""
    from pytest_agentbench.sim.phone import Phone

    def magisk(index: int) -> Phone:
        return Phone(serial_hint=f"sim{index}", su_variant="magisk")

    with one_simulated_phone(tmp_path_factory.mktemp("adb-magisk"), phone_factory=magisk) as lab:
        lab[1].phones[0].launch("com.google.android.apps.messaging")  # creates bugle_db: its schema is read as root
        done = _doctor(lab, REPO, tmp_path, "-k", "chrome-search-engine or messages-pin-archive")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "chrome-search-engine: ready (com.android.chrome 131.0.6778.200, root: su -c)" in output
    assert "messages-pin-archive: ready (com.google.android.apps.messaging 20240205_00_RC00, root: su -c)" in output
    assert "2 passed" in output
