"""--agentbench-sandbox: auto/on/off resolved once -> on where bwrap works, a usage error for 'on' without it, 'off' recorded and flagged."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from adbserver import PrivateAdbServer, start_private_adb_server
from fakeagents import make_project, run_session, session_env

from pytest_agentbench.run import sandbox
from pytest_agentbench.run.confine import SandboxMode, resolve_mode

UNUSABLE = sandbox.Availability(False, reason="bwrap is not installed (apt-get install bubblewrap)")
USABLE = sandbox.Availability(True, version="bubblewrap 0.8.0")


def test_modes_resolve_against_what_the_probe_found() -> None:
    assert resolve_mode("auto", USABLE) == SandboxMode("on", "auto", tool="bubblewrap 0.8.0")
    assert resolve_mode("on", USABLE).on
    off = resolve_mode("auto", UNUSABLE)
    assert not off.on and off.reason == UNUSABLE.reason and off.component() == "off"
    assert resolve_mode("off", USABLE) == SandboxMode("off", "off", reason="--agentbench-sandbox off")
    with pytest.raises(ValueError, match=r"apt-get install bubblewrap"):
        resolve_mode("on", UNUSABLE)


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


def test_on_without_bwrap_is_a_usage_error_before_collection(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", {"job": {}})
    # Only the interpreter's own directory on PATH: no bwrap to be found.
    env = {**session_env(1, tmp_path / "claims"), "PATH": str(Path(sys.executable).parent)}
    done = run_session(project, ["benchmark/", "--device", "sim", "--claude", "agentbench-replay", "--agentbench-sandbox", "on"], env)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "--agentbench-sandbox on" in done.stderr and "apt-get install bubblewrap" in done.stderr, done.stderr
    assert "collected" not in done.stdout


@pytest.mark.skipif(not sandbox.probe().usable, reason="needs a working bwrap to compare with")
def test_off_is_recorded_in_result_json_and_the_fingerprints_and_flagged(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", {"job": {"preflight": {"settleSeconds": 0.3}}})
    output = tmp_path / "out"
    env = session_env(adb_server.port, tmp_path / "claims", COLUMNS="200")
    done = run_session(project, ["benchmark/", "--device", "sim", "--claude", "agentbench-replay", "--agentbench-sandbox", "off",
                                 "--agentbench-output", str(output)], env)
    assert done.returncode == 0, done.stdout[-3000:]
    (result_file,) = output.glob("job/*/result.json")
    result = json.loads(result_file.read_text())
    assert result["verdict"]["status"] == "passed"
    assert result["sandbox"] == {"mode": "off", "requested": "off", "reason": "--agentbench-sandbox off"}
    assert result["fingerprints"]["serverBuildComponents"]["sandbox"] == "off"
    assert "UNCONFINED: 1 of 1 runs ran without the sandbox (--agentbench-sandbox off)" in done.stdout
    # The same job confined: on by default, a different serverBuild (not comparable with the unconfined one).
    confined_out = tmp_path / "confined"
    done = run_session(project, ["benchmark/", "--device", "sim", "--claude", "agentbench-replay", "--agentbench-output", str(confined_out)], env)
    assert done.returncode == 0 and "UNCONFINED" not in done.stdout, done.stdout[-3000:]
    (confined_file,) = confined_out.glob("job/*/result.json")
    confined = json.loads(confined_file.read_text())
    assert confined["sandbox"]["mode"] == "on" and confined["sandbox"]["requested"] == "auto"
    assert confined["fingerprints"]["serverBuild"] != result["fingerprints"]["serverBuild"]
    assert os.environ.get("AGENTBENCH_SUITE_FILE") is None
