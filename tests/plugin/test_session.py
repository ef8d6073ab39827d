"""The session plugin's helpers -> what its summary lines say."""

from __future__ import annotations

from pathlib import Path

from pytest_agentbench.session import _shown_path


def test_a_written_file_is_named_as_the_user_would_type_it(tmp_path: Path) -> None:
    assert _shown_path(tmp_path / "out" / "a.json", tmp_path) == "out/a.json"
    assert _shown_path(tmp_path / "a.json", tmp_path / "elsewhere") == str(tmp_path / "a.json")
