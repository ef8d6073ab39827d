"""Tests for report/terminal.py: the agentbench section at each verbosity, as pytest's conventions ask (issue 21, "Output").

An 80-run A/B is built from synthetic RunResults (8 suites x 10 seeded repeats on each side)
rather than run: the section is a pure function of the runs, and its line count is the point.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.records import RunResult, SessionResult
from pytest_agentbench.report.ab import compare_with
from pytest_agentbench.report.aggregate import Unrecorded, session_statistics
from pytest_agentbench.report.summary import render_proofs
from pytest_agentbench.report.terminal import Part, render_section

FINGERPRINTS = {"appBuild": {"versionCode": 1}, "suiteDigest": "sha256:0", "deviceFingerprint": {"sdk": "34"},
                "claudeCodeVersion": "2.1.197", "serverBuild": "sha256:1", "observedModel": "claude-sonnet-5-5"}
SUITES = [f"settings-{name}" for name in ("wifi-on", "wifi-off", "bluetooth-on", "dark-mode", "font-size", "airplane",
                                          "testbed-pickup-code", "testbed-pickup-code-p")]
#: What pytest itself prints around the section for 8 suite files: its header (11 lines with this
#: project's plugins), one progress line per file, the blank lines and rules, the final line.
PYTEST_LINES = 11 + len(SUITES) + 4
AB_MAX_LINES = 150


def run(suite: str, repeat: int, status: str, reason: str = "", *, cause: str | None = None, calls: int = 6) -> RunResult:
    verdict: dict[str, Any] = {"status": status, "reasons": [reason] if reason else []}
    if cause:
        verdict["incompleteCause"] = cause
    return RunResult.from_json({
        "suite": suite, "suiteFile": f"suites/{suite}.yml", "runDirectory": f"/runs/{suite}/{repeat}",
        "nodeid": f"suites/{suite}.yml::{suite}[r{repeat}-{repeat * 7}]",
        "instance": {"id": f"r{repeat}-{repeat * 7}", "repeat": repeat, "seed": 0, "values": {"n": repeat * 7}},
        "verdict": verdict,
        "metrics": {"toolCalls": calls + repeat % 3, "turns": calls + 1, "inputTokens": 900, "outputTokens": 90,
                    "costUsd": 0.02, "wallClockSeconds": 30.0 + repeat},
        "fingerprints": FINGERPRINTS,
    })


def session(passes: int) -> list[RunResult]:
    """Each suite: `passes` of 10 pass; the rest fail with "no final answer", one of them times out (the agent's)."""
    runs = []
    for suite in SUITES:
        for repeat in range(1, 11):
            if repeat <= passes:
                runs.append(run(suite, repeat, "passed"))
            elif repeat == 10:
                runs.append(run(suite, repeat, "incomplete", "the agent timed out after 600 s", cause="agent"))
            else:
                runs.append(run(suite, repeat, "failed", "no final answer"))
    return runs


def text_of(parts: list[Part]) -> list[str]:
    return [line for part in parts for line in (f"--- {part.text} ---" if part.kind == "rule" else part.text).splitlines()]


@pytest.fixture
def ab(tmp_path: Path):
    baseline = tmp_path / "a.json"
    baseline.write_text(__import__("json").dumps(SessionResult.of(session(7)).to_json()), encoding="utf-8")
    from pytest_agentbench.report.ab import load_session_document

    runs = session(3)
    return runs, session_statistics(runs), compare_with(load_session_document(baseline), runs, path=baseline)


def test_an_80_run_ab_prints_at_most_150_lines_by_default(ab) -> None:
    runs, statistics, comparison = ab
    assert len(runs) == 80
    lines = text_of(render_section(runs, statistics, comparison, width=80))
    assert PYTEST_LINES + 1 + len(lines) <= AB_MAX_LINES, "\n".join(lines)
    assert all(len(line) <= 80 for line in lines)
    text = "\n".join(lines)
    # Failures grouped by first reason, counted by suite.
    assert "48 runs: failed: no final answer (settings-wifi-on 6, settings-wifi-off 6," in " ".join(text.split())
    assert "8 runs: incomplete: the agent timed out after 600 s" in text
    # The statistics (with intervals, repeats make them meaningful) and one compact block per suite.
    assert "--- agentbench statistics ---" in text and "95% CI" in text
    for suite in SUITES:
        assert f"{suite}: 7/10 (1 incomplete) -> 3/10 (1 incomplete), -40 points" in " ".join(text.split())
    # Passes are silent: no per-run row, no verdict line.
    assert "PASSED" not in text and "[r1-7]" not in text


def test_with_v_every_fact_of_the_ab_is_there(ab) -> None:
    runs, statistics, comparison = ab
    lines = text_of(render_section(runs, statistics, comparison, width=80, verbose=True))
    text, joined = " ".join(" ".join(lines).split()), "".join("".join(lines).split())
    for result in runs:
        # Every run: its verdict line (with the reason) and its row, named with instance and repeat id.
        reason = "".join(result.verdict.reasons[0].split()) if result.verdict.reasons else ""
        assert f"{result.status.upper()}{result.nodeid}" in joined and reason in joined
        assert f"{result.suite}[{result.instance_id}]" in lines
    assert "baseline: 7/10 passed (70%" in text and "this run: 3/10 passed (30%" in text
    assert "metric deltas over passed runs" in text and "pass@k: chance at least one of k runs passes" in text


def test_a_single_run_per_suite_is_one_table_and_no_interval() -> None:
    runs = [run(suite, 1, "passed") for suite in SUITES[:5]] + [run(SUITES[5], 1, "failed", "answer check failed")]
    lines = text_of(render_section(runs, session_statistics(runs), width=80))
    text = "\n".join(lines)
    assert lines[0] == "6 runs of 6 suites (one run each): 5 passed, 1 failed, 0 incomplete"
    for absent in ("CI", "IQR", "pass@", "agentbench statistics", "mean pass rate"):
        assert absent not in text, text
    # The one table lists the run that did not pass; the passes are counted, not listed.
    (header,) = [line for line in lines if line.startswith("run ")]
    assert header.split()[-1] == "flags"
    # The name is too long for its column at 80 columns: it has a line of its own, its cells follow.
    index = lines.index("settings-airplane[r1-7]")
    assert lines[index + 1].split()[:2] == ["FAIL", "31.0s"]
    assert not any(f"{suite}[r1-7]" in lines for suite in SUITES[:5])
    assert "5 passing runs not listed (-rA lists them, -v shows every detail)" in lines
    assert "  1 run: failed: answer check failed (settings-airplane[r1-7])" in lines


def test_ra_lists_passing_rows_without_the_details_of_v() -> None:
    runs = [run(suite, 1, "passed") for suite in SUITES]
    lines = text_of(render_section(runs, session_statistics(runs), width=120, show_passes=True))
    assert {line.split()[0] for line in lines if line.split()[1:2] == ["pass"]} == {f"{suite}[r1-7]" for suite in SUITES}
    assert not any("passing runs not listed" in line for line in lines)
    # Each run's verdict line (as -rA lists every outcome), without the -v details.
    assert [line for line in lines if line.startswith("PASSED ")] == [f"PASSED {run.nodeid}" for run in runs]
    assert not any(line.startswith("Run directory:") for line in lines)


def test_names_that_share_both_ends_are_never_cut() -> None:
    runs = [run(suite, r, "failed", "no final answer") for suite in SUITES[-2:] for r in (1, 2)]
    text = "\n".join(text_of(render_section(runs, session_statistics(runs), width=80, show_passes=True)))
    assert "…" not in text
    for suite in SUITES[-2:]:
        assert f"{suite}[r1-7]" in text.split() and f"{suite}[r2-14]" in text.split()
        assert suite in text.split()  # the statistics table's row


def test_a_run_without_a_result_is_grouped_with_its_reason() -> None:
    runs = [run("a", 1, "passed"), run("a", 2, "passed")]
    lost = [Unrecorded(f"suites/a.yml::a[r{r}]", "a", f"r{r}", "setup: device busy") for r in (3, 4)]
    text = "\n".join(text_of(render_section(runs, session_statistics(runs, lost), width=80)))
    assert "2 runs: no result: setup: device busy (a[r3], a[r4])" in text
    assert text.splitlines()[0] == "4 runs of 1 suite: 2 passed, 0 failed, 2 incomplete"


@pytest.mark.parametrize(("verdict", "compact"), [
    ("this run passes less often than baseline, by about 40 points", "this run passes less often than baseline, by about 40 points"),
    # What this N could detect is -v's (and the overall block's), even where it holds a "; " of its own.
    ("no detectable difference at this N (could detect a drop of about 68 points with 80% power; no rise from this baseline)",
     "no detectable difference at this N"),
    ("no detectable difference at this N (no difference of any size would be detected with 80% power at this N); "
     "borderline: the exact test's p = 0.030 is below 0.05",
     "no detectable difference at this N; borderline: the exact test's p = 0.030 is below 0.05"),
    # The p-value is on the suite's first line; "not a detectable difference" repeats "borderline".
    ("borderline: the interval excludes zero but the exact test does not (p = 0.125); not a detectable difference at this N "
     "(could detect a drop of about 39 points with 80% power)", "borderline: the interval excludes zero but the exact test does not"),
    ("nothing to compare: a side has no judged run", "nothing to compare: a side has no judged run"),
])
def test_a_suites_compact_comparison_keeps_the_verdict_without_its_parentheses(verdict: str, compact: str) -> None:
    from pytest_agentbench.report.ab import compact_verdict

    assert compact_verdict(verdict) == compact


def test_a_prove_session_counts_proofs_and_says_why_each_unproven_one_is_not() -> None:
    text = render_proofs([("a", "a[prove-pass]", ""), ("a", "a[prove-fresh]", "the suite passes with no action: x passes"),
                          ("b", "b[prove-pass]", None)], width=60)
    assert text.splitlines()[0] == "3 proofs of 2 suites: 1 proven, 1 not proven, 1 skipped (-rs says why)"
    assert "  a[prove-fresh]: the suite passes with no action: x passes" in text
    assert render_proofs([("a", "a[prove-fresh]", "")]) == "1 proof of 1 suite: 1 proven, 0 not proven"
