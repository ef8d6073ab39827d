"""Tests for run/artifacts.py: the run directory layout."""

from __future__ import annotations

import re

from pytest_agentbench.run.artifacts import new_run_dir


def test_run_dirs_are_unique_per_run(tmp_path):
    first, second = new_run_dir(tmp_path, "bug-repro"), new_run_dir(tmp_path, "bug-repro")
    assert first != second and first.parent == second.parent == tmp_path / "bug-repro"
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{8}", first.name)
    assert new_run_dir(tmp_path, "../../etc").parent == tmp_path / "etc"
