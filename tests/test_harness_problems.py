"""Harness and setup problems -> `incomplete` runs or one usage error, never an agent's `failed` verdict.

An agent command that cannot start is not an agent that failed, so repeat statistics must never
count it against the agent; a bad option value is refused once, before collection.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from adbserver import PrivateAdbServer, start_private_adb_server
from fakeagents import UNCONFINED, junit_cases, make_project, run_session, session_env, write_agent

FAST = {"preflight": {"settleSeconds": 0.3}}


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


def test_an_agent_that_never_started_is_incomplete_with_the_cause(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", {"no-agent": FAST})
    env = session_env(adb_server.port, tmp_path / "claims")
    done = run_session(project, ["benchmark/", "--device", "sim", "--claude", "no-such-claude", f"--junitxml={tmp_path / 'r.xml'}",
                                 "--agentbench-json", str(tmp_path / "s.json"), "--agentbench-output", str(tmp_path / "out")], env)
    case = junit_cases(tmp_path / "r.xml")["no-agent"]
    assert (case.outcome, case.type) == ("skipped", "pytest.xfail"), done.stdout[-3000:]
    assert case.message.startswith("incomplete: the agent never started: could not start the agent command 'no-such-claude'"), case.message
    assert done.returncode == 1
    (result,) = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["runs"]
    assert result["verdict"]["status"] == "incomplete"
    # Nothing a run produced is lost: the run directory still holds what was prepared.
    run_dir = Path(result["runDirectory"])
    assert (run_dir / "claude-command.json").is_file() and (run_dir / "result.json").is_file()


@pytest.mark.parametrize("value", ["sim:0", "sim:x", "sim:-2"])
def test_a_bad_device_value_is_one_usage_error_before_collection(tmp_path: Path, value: str) -> None:
    project = make_project(tmp_path / "project", {"one": FAST, "two": FAST})
    done = run_session(project, ["benchmark/", "--device", value], session_env(1, tmp_path / "claims"))
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:]
    assert done.stderr.count(f"--device {value}: expected sim or sim:N with N >= 1") == 1, done.stderr
    assert "collected" not in done.stdout


def test_a_tmpdir_inside_the_project_does_not_put_the_agent_under_its_claude_md(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", {"workdir": FAST})
    (project / "CLAUDE.md").write_text("Repository instructions the agent must never see.\n", encoding="utf-8")
    inside = project / "tmp"
    inside.mkdir()
    marker = tmp_path / "cwd.json"
    agent = write_agent(tmp_path / "agent", "report-cwd", marker=str(marker), final="Done.\nEXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0")
    env = session_env(adb_server.port, tmp_path / "claims", TMPDIR=str(inside))
    done = run_session(project, ["benchmark/", *UNCONFINED, "--device", "sim", "--claude", str(agent), "--agentbench-output", str(tmp_path / "out")], env)
    seen = json.loads(marker.read_text(encoding="utf-8"))
    cwd = Path(seen["cwd"])
    assert not cwd.is_relative_to(project.resolve()), done.stdout[-2000:]
    assert seen["claude_md_above"] == [], seen
