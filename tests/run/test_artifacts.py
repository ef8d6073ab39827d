"""Tests for run/artifacts.py: the run directory layout and where the agent's working directory may go."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_agentbench.errors import ConfigError
from pytest_agentbench.run.artifacts import agent_workdir_parent, new_run_dir


def test_run_dirs_are_unique_per_run(tmp_path):
    first, second = new_run_dir(tmp_path, "bug-repro"), new_run_dir(tmp_path, "bug-repro")
    assert first != second and first.parent == second.parent == tmp_path / "bug-repro"
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{8}", first.name)
    assert new_run_dir(tmp_path, "../../etc").parent == tmp_path / "etc"


@pytest.mark.parametrize(
    ("layout", "chosen"),
    [
        ({"tmp": "outside"}, "outside"),
        ({"tmp": "project/tmp"}, "fallback"),
        ({"tmp": "project"}, "fallback"),
        ({"tmp": "claude-parent/tmp", "CLAUDE.md": "claude-parent"}, "fallback"),
        ({"tmp": "local-parent/tmp", "CLAUDE.local.md": "local-parent"}, "fallback"),
        ({"tmp": "missing"}, "fallback"),
    ],
    ids=["a safe TMPDIR is used", "TMPDIR inside the project", "TMPDIR is the project", "a CLAUDE.md above TMPDIR",
         "a CLAUDE.local.md above TMPDIR", "TMPDIR does not exist"],
)
def test_the_agent_workdir_goes_outside_the_project_and_below_no_claude_md(tmp_path: Path, layout: dict[str, str], chosen: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "CLAUDE.md").write_text("repository instructions\n", encoding="utf-8")
    for name in ("CLAUDE.md", "CLAUDE.local.md"):
        if name in layout:
            (tmp_path / layout[name]).mkdir(parents=True, exist_ok=True)
            (tmp_path / layout[name] / name).write_text("instructions\n", encoding="utf-8")
    if layout["tmp"] != "missing":
        (tmp_path / layout["tmp"]).mkdir(parents=True, exist_ok=True)
    (tmp_path / "fallback").mkdir()
    parent = agent_workdir_parent(project, [str(tmp_path / layout["tmp"]), str(tmp_path / "fallback")])
    assert parent == (tmp_path / chosen).resolve()


def test_no_safe_workdir_is_a_sentence_naming_every_place_tried(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "tmp").mkdir(parents=True)
    (tmp_path / "CLAUDE.md").write_text("instructions\n", encoding="utf-8")
    (tmp_path / "other").mkdir()
    with pytest.raises(ConfigError) as error:
        agent_workdir_parent(project, [str(project / "tmp"), str(tmp_path / "other")])
    message = str(error.value)
    assert f"{project / 'tmp'} is inside the project" in message
    assert f"{tmp_path / 'other'} lies under {tmp_path / 'CLAUDE.md'}" in message
    assert "Point TMPDIR at a directory outside the project" in message
