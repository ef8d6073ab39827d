"""usage.py's checks before collection: a mistyped agent program -> the close name to use, not a hint to activate a virtualenv."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_agentbench.run.sandbox_policy import build_policy
from pytest_agentbench.usage import agent_problem, confined_agent_problems, console_scripts


def _program(directory: Path, name: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text("#!/bin/sh\n", encoding="utf-8")
    (directory / name).chmod(0o755)


def test_a_typo_of_a_console_script_names_it(tmp_path: Path) -> None:
    # Not on PATH at all (no virtualenv active): the package's own scripts are still known.
    assert "agentbench-replay" in console_scripts()
    problem = agent_problem("agentbench-replai", {"PATH": str(tmp_path)})
    assert problem == "the agent program 'agentbench-replai' (--claude) is not on PATH: did you mean `--claude agentbench-replay`?"


def test_a_typo_of_a_program_on_path_names_it(tmp_path: Path) -> None:
    _program(tmp_path / "bin", "my-agent-cli")
    problem = agent_problem("my-agnet-cli", {"PATH": str(tmp_path / "bin")})
    assert problem == "the agent program 'my-agnet-cli' (--claude) is not on PATH: did you mean `--claude my-agent-cli`?"


@pytest.mark.parametrize(("command", "hint"), [
    ("agentbench-replay", "it is this package's console script, so activate the virtualenv it is installed in"),
    ("claude", "install Claude Code"),
    ("something-else-entirely", "is not on PATH or pass another agent with --claude"),
])
def test_a_missing_program_without_a_close_name_keeps_its_hint(tmp_path: Path, command: str, hint: str) -> None:
    problem = agent_problem(command, {"PATH": str(tmp_path)})
    assert problem is not None and hint in problem and "did you mean" not in problem


# ----------------------------------------------------------------------------- a confined agent's program and sign-in


def _confined_options(command: str, output: Path):
    from pytest_agentbench.run.confine import SandboxMode

    return SimpleNamespace(sandbox=SandboxMode("on", "on", tool="bubblewrap"), claude=command, output=output)


def test_a_program_whose_package_holds_the_project_is_refused_with_the_fix(tmp_path: Path) -> None:
    # A JavaScript project whose own package.json sits at its root: showing the agent's package would show the project.
    project = tmp_path / "project"
    _program(project / "bin", "agent.js")
    (project / "package.json").write_text("{}", encoding="utf-8")
    (problem,) = confined_agent_problems(_confined_options(str(project / "bin" / "agent.js"), tmp_path / "out"), {"PATH": ""},
                                         project_root=project)
    assert f"runs from its package {project}" in problem and "--agentbench-sandbox off" in problem


def test_a_program_in_its_own_npm_package_is_shown_with_its_package(tmp_path: Path) -> None:
    package = tmp_path / "tools" / "node_modules" / "@acme" / "agent"
    _program(package / "bin", "agent.js")
    (package / "package.json").write_text("{}", encoding="utf-8")
    options = _confined_options(str(package / "bin" / "agent.js"), tmp_path / "out")
    assert confined_agent_problems(options, {"PATH": ""}, project_root=tmp_path / "project") == []
    policy = build_policy(workdir=tmp_path, agent_command=str(package / "bin" / "agent.js"), environ={"PATH": ""},
                          run_dir=tmp_path / "out" / "r", output_root=tmp_path / "out", project_root=tmp_path / "project",
                          suite_file=tmp_path / "project" / "s.yml")
    assert package.resolve() in policy.expose


def test_a_sign_in_about_to_end_is_refused_before_any_run(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / ".credentials.json").write_text(
        json.dumps({"claudeAiOauth": {"accessToken": "sk-ant-oat01-x", "expiresAt": int((time.time() - 60) * 1000)}}), encoding="utf-8")
    (problem,) = confined_agent_problems(_confined_options("claude", tmp_path / "out"), {"HOME": str(tmp_path), "PATH": ""},
                                         project_root=tmp_path / "project")
    assert "expired" in problem and "run `claude` once" in problem and "sk-ant-oat01-x" not in problem
    # With an API key the sign-in is not used, so it is not refused.
    assert confined_agent_problems(_confined_options("claude", tmp_path / "out"), {"HOME": str(tmp_path), "ANTHROPIC_API_KEY": "k"},
                                   project_root=tmp_path / "project") == []
