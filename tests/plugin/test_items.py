"""items.py's saved runs (`--agentbench-from-result`) -> item names as their own session gave them, one name per run."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_agentbench.items import saved_run_name


def _saved(root: Path, run_id: str, nodeid: str | None) -> Path:
    path = root / "bug-repro" / run_id / "result.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"suite": "bug-repro", **({"nodeid": nodeid} if nodeid else {})}), encoding="utf-8")
    return path


def test_a_saved_run_keeps_the_name_the_summary_table_gives_it(tmp_path: Path) -> None:
    first = _saved(tmp_path / "a", "20261203T150000Z-1", "benchmark/agent/suites/bug-repro.yml::bug-repro[r1-4-5]")
    assert saved_run_name(first, taken=set()) == "bug-repro[r1-4-5]"
    # The same instance from another session: the run id tells them apart.
    second = _saved(tmp_path / "b", "20261203T160000Z-2", "benchmark/agent/suites/bug-repro.yml::bug-repro[r1-4-5]")
    assert saved_run_name(second, taken={"bug-repro[r1-4-5]"}) == "bug-repro[r1-4-5 20261203T160000Z-2]"


def test_a_result_that_does_not_say_its_name_is_named_by_its_run_directory(tmp_path: Path) -> None:
    assert saved_run_name(_saved(tmp_path, "20261203T150000Z-1", None), taken=set()) == "bug-repro[20261203T150000Z-1]"
    broken = tmp_path / "x" / "r" / "result.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{not json", encoding="utf-8")
    assert saved_run_name(broken, taken=set()) == "x[r]"
