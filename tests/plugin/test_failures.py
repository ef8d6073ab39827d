"""Tests for failures.py: which failed runs keep their report in pytest's summary, and the lines that name the others (issue 21, "Output").

The fold on real sessions (the whole output's line count, JUnit, -v, --tb=line, -rA) is
tests/e2e/test_output_e2e.py's.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from pytest_agentbench.errors import PreflightError, VerdictFailed
from pytest_agentbench.failures import fold_plan, folded_note, folds, run_name, summary_line
from pytest_agentbench.items import failure_text


@pytest.mark.parametrize(("reasons", "plan"), [
    ([], {}),
    (["a"], {0: []}),
    # The first of each first reason is shown; later ones fold under it, in report order.
    (["a", "a", "a"], {0: [1, 2]}),
    (["a", "b", "a", "b", "c"], {0: [2], 1: [3], 4: []}),
    # None: a failure that is not a run's failed verdict (a plain test, a prove item) is never folded.
    ([None, None, "a", None, "a"], {0: [], 1: [], 2: [4], 3: []}),
])
def test_the_first_failure_of_each_first_reason_keeps_its_report(reasons, plan) -> None:
    assert fold_plan(reasons) == plan


def config(verbosity: int = 0, tbstyle: str = "auto") -> pytest.Config:
    return SimpleNamespace(get_verbosity=lambda: verbosity, option=SimpleNamespace(tbstyle=tbstyle))  # type: ignore[return-value]


@pytest.mark.parametrize(("verbosity", "tbstyle", "reportchars", "folded"), [
    (0, "auto", "fE", True),
    (0, "short", "fE", True),
    (0, "line", "fE", True),
    (0, "no", "fE", True),
    (-1, "auto", "fE", True),
    # -v, --tb=long and -rA (pytest resolves -rA to "PpsxXEf"; -rp lists passes too): every report.
    (1, "auto", "fE", False),
    (0, "long", "fE", False),
    (0, "auto", "PpsxXEf", False),
    (0, "auto", "fEp", False),
])
def test_the_default_verbosity_folds_and_v_tb_long_and_ra_do_not(verbosity, tbstyle, reportchars, folded) -> None:
    assert folds(config(verbosity, tbstyle), reportchars) is folded


def test_the_lines_that_name_the_folded_runs() -> None:
    labels = ["ux-flow[r2]", "ux-flow[r3]", "bug-repro[r1]", "bug-repro[r2]", "bug-repro[r3]"]
    assert folded_note(labels, 80) == "and 5 more failed runs with this first reason, not printed (-v prints each)"
    assert folded_note(labels[:1], 80) == "and 1 more failed run with this first reason, not printed (-v prints each)"
    # More than four runs are counted per suite; up to four are named.
    assert summary_line("ux-flow[r1]", labels, 100) == "FAILED [5] same first reason as ux-flow[r1]: ux-flow 2, bug-repro 3"
    assert summary_line("ux-flow[r1]", labels[:2], 100) == "FAILED [2] same first reason as ux-flow[r1]: ux-flow[r2], ux-flow[r3]"
    # Cut to one line as pytest cuts its own short summary lines.
    cut = summary_line("a-suite-with-a-rather-long-name[r1]", labels, 60)
    assert len(cut) == 60 and cut.endswith("...") and cut.startswith("FAILED [5] same first reason as a-suite")
    assert run_name("benchmark/agent/suites/ux-flow.yml::ux-flow[r3]") == "ux-flow[r3]"


@pytest.mark.parametrize(("tbstyle", "expected"), [
    ("auto", "preflight failed\n\nthe app did not start"),
    ("long", "preflight failed\n\nthe app did not start"),
    ("short", "preflight failed"),
    ("line", ""),
])
def test_only_a_failed_verdict_drops_its_reasons_line(tbstyle: str, expected: str) -> None:
    # Another error's first paragraph is its message, not a line the report repeats.
    assert failure_text(PreflightError("preflight failed\n\nthe app did not start"), tbstyle) == expected
    assert failure_text(VerdictFailed({}, "failed: a\n\nbug-repro: FAILED\n  - a"), tbstyle).startswith(
        {"auto": "bug-repro: FAILED", "long": "bug-repro: FAILED", "short": "failed: a", "line": ""}[tbstyle])


def test_a_run_failure_crosses_from_an_xdist_worker_whole() -> None:
    from _pytest._code.code import ReprFileLocation

    from pytest_agentbench.items import RunFailure, run_failure_from_serializable, run_failure_to_serializable

    failure = RunFailure("bug-repro[r2]: FAILED\n  - no final answer\n", ReprFileLocation("suites/bug-repro.yml", 3, "failed: no final answer"))
    report = pytest.TestReport("suites/bug-repro.yml::bug-repro[r2]", ("suites/bug-repro.yml", 2, "suite: bug-repro[r2]"), {},
                               "failed", failure, "call", user_properties=[("agentbench_verdict", "failed")])
    data = run_failure_to_serializable(report)
    assert data is not None
    back = run_failure_from_serializable(json.loads(json.dumps(data)))
    assert back is not None and isinstance(back.longrepr, RunFailure)
    # pytest would have sent the text alone: the short summary's and JUnit's line would be lost.
    assert back.longrepr.text == failure.text and back.longrepr.reprcrash.message == "failed: no final answer"
    assert (back.longrepr.reprcrash.path, back.longrepr.reprcrash.lineno) == ("suites/bug-repro.yml", 3)
    assert (back.nodeid, back.outcome, back.when) == (report.nodeid, "failed", "call")
    assert [tuple(pair) for pair in back.user_properties] == [("agentbench_verdict", "failed")]  # JSON makes pairs lists
    # Any other report is pytest's to serialize.
    plain = pytest.TestReport("t.py::t", ("t.py", 0, "t"), {}, "failed", "AssertionError", "call")
    assert run_failure_to_serializable(plain) is None
    assert run_failure_from_serializable({**plain._to_json(), "$report_type": "TestReport"}) is None
