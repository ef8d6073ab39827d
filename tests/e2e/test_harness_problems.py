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
    # The program exists (so the usage check lets it by) but cannot be executed: its interpreter is missing.
    project = make_project(tmp_path / "project", {"no-agent": FAST})
    agent = tmp_path / "broken-agent"
    agent.write_text("#!/nonexistent/interpreter\n", encoding="utf-8")
    agent.chmod(0o755)
    env = session_env(adb_server.port, tmp_path / "claims")
    done = run_session(project, ["benchmark/", *UNCONFINED, "--device", "sim", "--claude", str(agent), f"--junitxml={tmp_path / 'r.xml'}",
                                 "--agentbench-json", str(tmp_path / "s.json"), "--agentbench-output", str(tmp_path / "out")], env)
    case = junit_cases(tmp_path / "r.xml")["no-agent"]
    assert (case.outcome, case.type) == ("skipped", "pytest.xfail"), done.stdout[-3000:]
    assert case.message.startswith(f"incomplete: the agent never started: could not start the agent command '{agent}'"), case.message
    assert done.returncode == 1
    (result,) = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["runs"]
    assert result["verdict"]["status"] == "incomplete"
    # Nothing a run produced is lost: the run directory still holds what was prepared.
    run_dir = Path(result["runDirectory"])
    assert (run_dir / "claude-command.json").is_file() and (run_dir / "result.json").is_file()


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--claude", "no-such-claude"], {}, "ERROR: the agent program 'no-such-claude' (--claude) is not on PATH"),
        (["--claude", "agentbench-replai"], {},
         "ERROR: the agent program 'agentbench-replai' (--claude) is not on PATH: did you mean `--claude agentbench-replay`?"),
        (["--claude", "/nowhere/agent"], {}, "ERROR: the agent program /nowhere/agent (--claude) does not exist"),
        (["--claude", "agentbench-agent"], {"AGENTBENCH_OPENAI_BASE_URL": ""},
         "ERROR: the agent agentbench-agent (--claude) needs its model endpoint: AGENTBENCH_OPENAI_BASE_URL is not set"),
    ],
    ids=["not-on-path", "a-typo", "no-such-file", "agent-without-endpoint"],
)
def test_an_agent_that_cannot_start_is_one_usage_error_before_collection(
    adb_server: PrivateAdbServer, tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    project = make_project(tmp_path / "project", {"one": FAST, "two": FAST})
    done = run_session(project, ["benchmark/", "--device", "sim", "--agentbench-repeat", "3", *args],
                       session_env(adb_server.port, tmp_path / "claims", **env))
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and errors[0].startswith(message), done.stderr
    assert "collected" not in done.stdout and "Traceback" not in done.stderr


def test_a_device_that_is_not_there_is_one_usage_error_naming_what_to_do(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", {"one": FAST, "two": FAST})
    done = run_session(project, ["benchmark/", "--device", "emulator-5554", "--claude", "agentbench-replay", "--agentbench-repeat", "3"],
                       session_env(adb_server.port, tmp_path / "claims"))
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR:")]
    assert errors == ["ERROR: --device emulator-5554: the adb server does not list it; it lists nothing; check what adb sees with "
                      "`adb devices`, name a phone with `--device SERIAL`, or run on a simulated phone with "
                      "`--device sim --claude agentbench-replay`"], done.stderr
    assert "collected" not in done.stdout


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
