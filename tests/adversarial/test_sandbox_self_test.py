"""The sandbox's self-test in every confined run (issue 28 H) -> result.json says what the agent could reach; a hole is the harness's.

Two sessions on one simulated phone with the honest replay agent, confined:
- as shipped: the self-test, run from inside before the agent, finds the run directory, the
  project and the output tree hidden, the adb server refused, the relay's socket there; the run
  passes;
- with a harness fault planted by the project's conftest.py (the policy forgets to hide the run
  directory and the trees above it): the agent never starts, and the run is incomplete with cause
  harness, naming what was reachable. Before the self-test, that run passed with nobody the wiser.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from adbserver import PrivateAdbServer, start_private_adb_server
from fakeagents import Behaviour, make_project, results_by_suite, run_session, session_env, write_dispatcher

pytestmark = pytest.mark.skipif(sys.platform != "linux" or shutil.which("bwrap") is None,
                                reason="no bubblewrap here (apt-get install bubblewrap)")

FAST = {"preflight": {"settleSeconds": 0.3}}
LEAKY_CONFTEST = '''
import dataclasses
from pytest_agentbench.run import confine

_real = confine.build_policy

def _leaky(**kwargs):
    policy = _real(**kwargs)
    run_dir = kwargs["run_dir"].resolve()
    return dataclasses.replace(policy, hide=tuple(p for p in policy.hide if not run_dir.is_relative_to(p)))

confine.build_policy = _leaky
'''


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


def _session(tmp: Path, adb_server: PrivateAdbServer, *, conftest: str = "") -> dict:
    project = make_project(tmp / "project", {"honest": FAST})
    if conftest:
        (project / "conftest.py").write_text(conftest, encoding="utf-8")
    agent = write_dispatcher(tmp / "agent", {"honest": Behaviour("replay")}, project=project)
    done = run_session(project, ["benchmark/", "--device", "sim", "--claude", str(agent), f"--junitxml={tmp / 'r.xml'}",
                                 "--agentbench-output", str(tmp / "out"), "--agentbench-sandbox", "on", "-rA"],
                       session_env(adb_server.port, tmp / "claims"))
    results = results_by_suite(tmp / "r.xml") if (tmp / "r.xml").exists() else {}
    assert set(results) == {"honest"}, done.stdout[-4000:] + done.stderr[-2000:]
    return results["honest"]

def test_a_confined_run_records_from_inside_what_its_agent_could_reach(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    result = _session(tmp_path, adb_server)
    assert result["outcome"] == "passed", result["verdict"]
    test = result["sandbox"]["selfTest"]
    checks = {check["what"]: check for check in test["checks"]}
    assert test["ok"] is True
    for hidden in ("the run directory", "the project", "the output tree"):
        assert checks[hidden]["expected"] == "hidden" and checks[hidden]["reached"] is False, checks[hidden]
    assert checks[f"TCP 127.0.0.1:{adb_server.port}"]["reached"] is False
    relay = [check for what, check in checks.items() if what.startswith("socket ") and what.endswith("agentbench.sock")]
    assert relay and relay[0]["reached"] is True


def test_a_sandbox_with_a_hole_ends_the_run_incomplete_as_the_harness_s(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    result = _session(tmp_path, adb_server, conftest=LEAKY_CONFTEST)
    verdict = result["verdict"]
    assert (verdict["status"], verdict.get("incompleteCause")) == ("incomplete", "harness"), verdict
    assert verdict["reasons"][0].startswith("the sandbox's self-test failed, so the agent was not confined as promised: ")
    assert "the run directory: reachable" in verdict["reasons"][0]
    assert result["sandbox"]["selfTest"]["ok"] is False
    # The agent never started: its stream is empty.
    assert (result["run_dir"] / "claude.jsonl").read_text(encoding="utf-8") == ""
