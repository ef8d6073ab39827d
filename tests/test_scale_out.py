"""tests/perf/scale_out.py's arithmetic: measured sessions -> the speedup and CPU-per-run table and the missed goals (the sessions themselves take minutes)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "perf" / "scale_out.py"
spec = importlib.util.spec_from_file_location("scale_out", SCRIPT)
scale_out = importlib.util.module_from_spec(spec)
sys.modules["scale_out"] = scale_out  # dataclasses look their module up while the class is built
spec.loader.exec_module(scale_out)  # type: ignore[union-attr]


def measured(phones: int, wall: float, cpu: float, warm: int = 25) -> object:
    return scale_out.Measured(phones, wall, cpu, server_s=1.2, agent_s=0.6, warm_programs=warm, runs=12)


@pytest.mark.parametrize(
    ("k4_wall", "k4_cpu", "missed"),
    [
        (54.6, 9.1, []),
        (70.0, 9.1, ["speedup at K=4 is 2.88x, below the goal of 3.5x"]),
        (54.6, 16.2, ["CPU per run at K=4 is 1.35s, above the goal of 1s"]),
    ],
    ids=["both-goals-met", "too-slow", "too-much-cpu"],
)
def test_the_table_and_the_goals(k4_wall: float, k4_cpu: float, missed: list[str]) -> None:
    table, problems = scale_out.report([measured(1, 201.6, 3.7), measured(2, 104.1, 5.7), measured(4, k4_wall, k4_cpu)])
    assert problems == missed
    rows = [line.split() for line in table.splitlines()[2:]]
    assert [row[:3] for row in rows] == [["1", "201.6", "1.00x"], ["2", "104.1", "1.94x"], ["4", f"{k4_wall:.1f}", f"{201.6 / k4_wall:.2f}x"]]
    # Per run: all CPU, then pytest = all - server - agent.
    assert rows[0][3:7] == ["0.31", "0.16", "0.10", "0.05"]


def test_an_agent_started_cold_is_not_claimed_to_cost_nothing() -> None:
    table, _ = scale_out.report([measured(1, 200.0, 9.7, warm=0)])
    assert table.splitlines()[2].split()[6] == "-"
