"""usage.py's checks before collection: a mistyped agent program -> the close name to use, not a hint to activate a virtualenv."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentbench.usage import agent_problem, console_scripts


def _program(directory: Path, name: str) -> None:
    directory.mkdir(exist_ok=True)
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
