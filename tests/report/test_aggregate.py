"""Tests for report/aggregate.py and report/ab.py: result documents -> per-suite statistics, the A/B comparison, their text, JSON and JUnit properties."""

from __future__ import annotations

import json
import re
from math import comb
from pathlib import Path
from typing import Any

import pytest
import scipy.stats

from pytest_agentbench.report.ab import (
    compare_with,
    comparison_block,
    fingerprint_flags,
    load_session_document,
    pairing_keys,
    render_comparison,
)
from pytest_agentbench.report.aggregate import (
    Unrecorded,
    junit_properties,
    outcome_of,
    render_statistics,
    session_statistics,
    statistics_block,
)
from pytest_agentbench.records import RunResult, SessionResult


def _runs(documents):
    return [RunResult.from_json(document) for document in documents]

FINGERPRINTS = {
    "appBuild": {"versionName": "1.0", "versionCode": 1},
    "suiteDigest": "sha256:0123456789abcdef",
    "deviceFingerprint": {"sdk": "34", "model": "sim"},
    "claudeCodeVersion": "2.1.197",
    "serverBuild": "sha256:fedcba9876543210",
    "observedModel": "claude-sonnet-5-5",
}


def result(suite: str, status: str, repeat: int, *, seeded: bool = True, calls: int = 6, **fingerprints: Any) -> dict[str, Any]:
    values = {"n": repeat * 11} if seeded else {}
    return {
        "suite": suite,
        "nodeid": f"suites/{suite}.yml::{suite}[r{repeat}]",
        "verdict": {"status": status, "reasons": [] if status == "passed" else [f"{status} for a reason"]},
        "metrics": {"toolCalls": calls, "turns": calls + 1, "inputTokens": 100, "outputTokens": 20, "costUsd": 0.01,
                    "wallClockSeconds": 10.0 + repeat},
        "instance": {"id": f"r{repeat}-{values['n']}" if seeded else f"r{repeat}", "repeat": repeat, "seed": 0, "values": values},
        "fingerprints": {**FINGERPRINTS, **fingerprints},
    }


def seven_of_ten(suite: str = "contacts-add", incomplete: int = 2, passes: set[int] | None = None, **kw: Any) -> list[dict[str, Any]]:
    """Runs r1..r(10+incomplete): `passes` (default r1-r7) passed, the rest of r1-r10 failed, the last ones incomplete."""
    passes = set(range(1, 8)) if passes is None else passes
    runs = [result(suite, "passed" if r in passes else "failed", r, **kw) for r in range(1, 11)]
    return runs + [result(suite, "incomplete", r, **kw) for r in range(11, 11 + incomplete)]


# ----------------------------------------------------------------------------- statistics


def test_seven_of_ten_with_two_incomplete() -> None:
    statistics = session_statistics(_runs(seven_of_ten()))
    (stats,) = statistics.suites
    assert (stats.passed, stats.failed, stats.incomplete, stats.judged, stats.runs) == (7, 3, 2, 10, 12)
    assert round(stats.interval.low, 2) == 0.40 and round(stats.interval.high, 2) == 0.89
    assert stats.pass_at[3] == pytest.approx(1 - comb(3, 3) / comb(10, 3)) and stats.pass_hat[3] == pytest.approx(comb(7, 3) / comb(10, 3))
    # pass@k exists up to the number of runs; beyond the judged runs it is unknown, not 1.0.
    assert stats.pass_at[10] == 1.0 and stats.pass_at[11] is None and stats.pass_at[12] is None


def test_incomplete_runs_change_neither_numerator_nor_denominator() -> None:
    without = session_statistics(_runs(seven_of_ten(incomplete=0))).suites[0]
    with_five = session_statistics(_runs(seven_of_ten(incomplete=5))).suites[0]
    assert (without.passed, without.judged, without.interval) == (with_five.passed, with_five.judged, with_five.interval)
    assert (without.incomplete, with_five.incomplete) == (0, 5)


def test_a_run_without_a_result_counts_as_incomplete() -> None:
    lost = [Unrecorded("suites/contacts-add.yml::contacts-add[r13]", "contacts-add", "r13-143", "setup: device busy")]
    stats = session_statistics(_runs(seven_of_ten()), lost).suites[0]
    assert (stats.passed, stats.judged, stats.incomplete) == (7, 10, 3)


def flat(text: str) -> str:
    """The text with its line wrapping undone (the section wraps long lines at the terminal width)."""
    return " ".join(text.split())


def table_row(text: str, suite: str) -> list[str]:
    (row,) = [line.split() for line in text.splitlines() if line.split()[:1] == [suite]]
    return row


def test_the_section_shows_counts_interval_and_estimates_in_columns() -> None:
    text = render_statistics(session_statistics(_runs(seven_of_ten())), width=80)
    lines = text.splitlines()
    header = lines[0].split()
    assert header == ["suite", "runs", "passed", "incomplete", "rate", "95%", "CI", "pass@1", "pass@3", "pass^3"]
    assert table_row(text, "contacts-add") == ["contacts-add", "12", "7/10", "2", "70%", "40–89%", "0.700", "0.992", "0.292"]
    # Quartiles equal to the median are left out; the others are shown.
    assert "contacts-add: tool calls 6, turns 7, tokens 120, cost $0.010, wall time 15.5s (13.2s–17.8s)" in flat(text)
    assert "all suites: mean pass rate 70% (95% CI 40–89%, Wilson, one suite); 7/10 runs passed, 2 incomplete" in flat(text)
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]


def test_fewer_judged_runs_than_k_show_n_a() -> None:
    runs = [result("flaky", "passed", 1), result("flaky", "incomplete", 2), result("flaky", "incomplete", 3)]
    assert table_row(render_statistics(session_statistics(_runs(runs))), "flaky")[-3:] == ["1.000", "n/a", "n/a"]


def test_a_long_suite_name_is_never_cut() -> None:
    name = "settings-wifi-toggle-on-from-the-internet-screen-of-the-settings-app"
    text = render_statistics(session_statistics(_runs(seven_of_ten(name))), width=80)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "…" not in text
    # Too long for the column: the name has a line of its own and its cells follow.
    lines = text.splitlines()
    index = lines.index(name)
    assert lines[index + 1].split()[:3] == ["12", "7/10", "2"]


def test_json_block_and_junit_properties() -> None:
    statistics = session_statistics(_runs(seven_of_ten() + seven_of_ten("other", incomplete=0, passes={1, 2})))
    block = statistics_block(statistics)
    suite = block["suites"]["contacts-add"]
    assert (suite["passed"], suite["judged"], suite["incomplete"], suite["rate"]) == (7, 10, 2, 0.7)
    assert suite["passAtK"]["3"] == pytest.approx(119 / 120) and suite["passHatK"]["3"] == pytest.approx(35 / 120)
    assert block["session"]["suites"] == 2 and block["session"]["meanRate"] == pytest.approx(0.45)
    json.dumps(block, allow_nan=False)  # no NaN or Infinity leaks into the document
    properties = dict(junit_properties(statistics))
    assert properties["agentbench.contacts-add.passed"] == "7" and properties["agentbench.contacts-add.incomplete"] == "2"
    assert properties["agentbench.contacts-add.passAt3"] == "0.991667"
    assert properties["agentbench.session.meanRate"] == "0.45"


def test_outcome_pairs_only_seeded_runs() -> None:
    assert outcome_of(result("a", "passed", 3)).instance == "r3-33"
    assert outcome_of(result("a", "passed", 3, seeded=False)).instance is None
    assert outcome_of({"suite": "a", "verdict": {"status": "weird"}}).status == "incomplete"


# ----------------------------------------------------------------------------- A/B comparison


def document(runs: list[dict[str, Any]], tmp_path: Path, name: str = "a.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(SessionResult.of(_runs(runs), seed=0, repeat=12).to_json()), encoding="utf-8")
    return path


def test_same_seeds_pair_up_and_use_mcnemar(tmp_path: Path) -> None:
    path = document(seven_of_ten(), tmp_path)
    report = compare_with(load_session_document(path), _runs(seven_of_ten(passes={1, 2})), path=path)
    (suite,) = report.comparison.suites
    assert suite.design == "paired" and suite.test == "mcnemar-exact"
    assert (suite.passed_a, suite.judged_a, suite.passed_b, suite.judged_b) == (7, 10, 2, 10)
    assert (suite.pairs.a_only, suite.pairs.b_only, suite.pairs.dropped) == (5, 0, 2)
    assert suite.p_value == pytest.approx(scipy.stats.binomtest(0, 5).pvalue, rel=1e-12)
    text = flat(render_comparison(report, width=100))
    assert "baseline: 7/10 passed (70%, 95% CI 40–89%), 2 incomplete" in text
    assert "this run: 2/10 passed (20%, 95% CI 6–51%), 2 incomplete" in text
    assert re.search(r"difference this run - baseline: -50 points \(95% CI -\d+ to -\d+\); McNemar exact p = 0\.062", text), text
    assert "10 paired instances, 2 with a harness-incomplete side left out" in text
    block = comparison_block(report)
    assert block["suites"]["contacts-add"]["pValue"] == suite.p_value and block["overall"]["design"] == "paired"


def test_different_seeds_are_independent_and_use_fisher(tmp_path: Path) -> None:
    path = document(seven_of_ten(), tmp_path)
    other_seed = seven_of_ten(passes={1, 2})
    for run in other_seed:
        run["instance"]["values"] = {"n": run["instance"]["repeat"] * 13}
        run["instance"]["id"] = f"r{run['instance']['repeat']}-{run['instance']['values']['n']}"
    (suite,) = compare_with(load_session_document(path), _runs(other_seed), path=path).comparison.suites
    assert suite.design == "independent" and suite.test == "fisher-exact"
    assert suite.p_value == pytest.approx(scipy.stats.fisher_exact([[7, 3], [2, 8]]).pvalue, rel=1e-12)


def test_pairing_keys_name_the_values_and_which_run_of_them_it_is() -> None:
    # r1 and r4 drew the same values (a space of three, past its end): the first and second run of them.
    assert pairing_keys(["r1-Pro", "r2-Team", "r4-Pro", "r3-Basic", "r3", None]) == [
        "Pro#1", "Team#1", "Pro#2", "Basic#1", None, None]
    # The order of the runs does not matter (xdist finishes them in any order): the repeat does.
    assert pairing_keys(["r4-Pro", "r1-Pro"]) == ["Pro#2", "Pro#1"]
    assert pairing_keys(["r12-1f2e3d4c", "r2-1f2e3d4c"]) == ["1f2e3d4c#2", "1f2e3d4c#1"]


def plans(runs: list[dict[str, Any]], order: list[str]) -> list[dict[str, Any]]:
    """The runs as instances of a three-plan suite: repeat r drew order[r - 1]."""
    for run in runs:
        plan = order[(run["instance"]["repeat"] - 1) % len(order)]
        run["instance"].update(values={"plan": plan}, id=f"r{run['instance']['repeat']}-{plan}")
    return runs


def test_different_seeds_that_drew_the_same_instances_pair_up(tmp_path: Path) -> None:
    # Two seeds, each covering the three plans in another order: every run has its partner.
    path = tmp_path / "a.json"
    baseline = plans([result("ux", "passed" if r == 1 else "failed", r) for r in range(1, 4)], ["Pro", "Team", "Basic"])
    path.write_text(json.dumps(SessionResult.of(_runs(baseline), seed=5, repeat=3).to_json()), encoding="utf-8")
    this = plans([result("ux", "passed" if r == 3 else "failed", r) for r in range(1, 4)], ["Team", "Basic", "Pro"])
    report = compare_with(load_session_document(path), _runs(this), path=path, seed=9)
    (suite,) = report.comparison.suites
    # r1 of the baseline (Pro, passed) pairs with r3 of this run (Pro, passed): both passed.
    assert suite.design == "paired" and (suite.pairs.both, suite.pairs.neither, suite.pairs.pairs) == (1, 2, 3)
    text = flat(render_comparison(report, width=100))
    assert ("seeds differ (baseline 5, this run 9): a suite's runs pair only where they drew the same values, else it is "
            "compared unpaired; --agentbench-seed 5 runs the baseline's instances") in text
    assert comparison_block(report)["seeds"] == {"baseline": 5, "thisRun": 9}


def test_different_seeds_that_drew_other_instances_are_compared_unpaired_and_say_so(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps(SessionResult.of(_runs(seven_of_ten()), seed=5, repeat=12).to_json()), encoding="utf-8")
    other = seven_of_ten(passes={1, 2})
    for run in other[:5]:  # half of this session's instances coincide with the baseline's, half do not
        run["instance"]["values"] = {"n": run["instance"]["repeat"] * 13}
        run["instance"]["id"] = f"r{run['instance']['repeat']}-{run['instance']['values']['n']}"
    report = compare_with(load_session_document(path), _runs(other), path=path, seed=9)
    (suite,) = report.comparison.suites
    assert suite.design == "independent" and suite.test == "fisher-exact"
    assert "seeds differ (baseline 5, this run 9)" in flat(render_comparison(report, width=100))
    # One seed on both sides: nothing to say.
    same = compare_with(load_session_document(path), _runs(seven_of_ten(passes={1, 2})), path=path, seed=5)
    assert same.comparison.suites[0].design == "paired" and "seeds differ" not in flat(render_comparison(same, width=100))


def test_no_detectable_difference_is_said_plainly(tmp_path: Path) -> None:
    path = document(seven_of_ten(), tmp_path)
    text = flat(render_comparison(compare_with(load_session_document(path), _runs(seven_of_ten(passes={1, 2, 3, 4, 5, 6})), path=path)))
    # 10 pairs whose two runs pass independently: McNemar's exact test cannot reach 80% power, and the line says so.
    assert "no detectable difference at this N (no difference of any size would be detected with 80% power at this N)" in text
    unpaired = seven_of_ten(passes={1, 2, 3, 4, 5, 6}, seeded=False)
    path = document(seven_of_ten(seeded=False), tmp_path, "b.json")
    text = flat(render_comparison(compare_with(load_session_document(path), _runs(unpaired), path=path)))
    assert "no detectable difference at this N (could detect a drop of about 62 points with 80% power; no rise from this baseline)" in text
    assert "metric deltas over passed runs (median this run - median baseline)" in text


def with_cause(run: dict[str, Any], cause: str | None) -> dict[str, Any]:
    if cause is not None:
        run["verdict"]["incompleteCause"] = cause
    return run


def test_agent_caused_incompletes_count_as_not_passed() -> None:
    # Issue 21: 5 passes and 5 timeouts read 5/5 = 100%; an agent that gives up must not score higher.
    runs = [result("hard", "passed", r) for r in range(1, 6)] + [with_cause(result("hard", "incomplete", r), "agent") for r in range(6, 11)]
    runs.append(with_cause(result("hard", "incomplete", 11), "harness"))
    runs.append(result("hard", "incomplete", 12))  # written before causes were recorded: the harness's
    statistics = session_statistics(_runs(runs), [Unrecorded("suites/hard.yml::hard[r13]", "hard", None, "setup: device busy")])
    (stats,) = statistics.suites
    assert (stats.passed, stats.judged, stats.incomplete, stats.incomplete_agent, stats.incomplete_harness) == (5, 10, 8, 5, 3)
    assert stats.rate == 0.5
    text = render_statistics(statistics, width=100)
    assert re.search(r"hard\s+13\s+5/10\s+8 \(5 agent\)\s+50%", text), text
    assert "5/10 runs passed, 8 incomplete (5 the agent's, counted as not passed; 3 the harness's, left out)" in flat(text)
    block = statistics_block(statistics)
    assert (block["suites"]["hard"]["incompleteAgent"], block["suites"]["hard"]["incompleteHarness"]) == (5, 3)
    assert block["session"]["incompleteAgent"] == 5 and block["shownK"] == 3
    assert ("agentbench.hard.incompleteAgent", "5") in junit_properties(statistics)


def test_ab_uses_the_same_rule_for_agent_caused_incompletes(tmp_path: Path) -> None:
    baseline = [result("hard", "passed", r, seeded=False) for r in range(1, 6)] + [result("hard", "failed", r, seeded=False) for r in range(6, 11)]
    path = document(baseline, tmp_path)
    gives_up = [result("hard", "passed", r, seeded=False) for r in range(1, 6)]
    gives_up += [with_cause(result("hard", "incomplete", r, seeded=False), "agent") for r in range(6, 11)]
    report = compare_with(load_session_document(path), _runs(gives_up), path=path)
    (suite,) = report.comparison.suites
    assert (suite.passed_b, suite.judged_b, suite.incomplete_b, suite.incomplete_agent_b) == (5, 10, 5, 5)
    assert suite.difference == 0
    assert "this run: 5/10 passed (50%, 95% CI 24–76%), 5 incomplete (the agent's, counted as not passed)" in flat(render_comparison(report, width=100))
    assert comparison_block(report)["suites"]["hard"]["thisRun"]["incompleteAgent"] == 5


def test_fingerprint_differences_are_flagged(tmp_path: Path) -> None:
    path = document(seven_of_ten(), tmp_path)
    changed = seven_of_ten(observedModel="claude-opus-5", deviceFingerprint={"sdk": "35", "model": "sim"})
    report = compare_with(load_session_document(path), _runs(changed), path=path)
    kinds = [flag.kind for flag in report.flags["contacts-add"]]
    assert kinds == ["device", "model"]
    text = flat(render_comparison(report))
    assert "flag: observed model differs: claude-sonnet-5-5 -> claude-opus-5" in text
    assert "setups differ: dev (1 suite), model (1 suite)" in text
    assert fingerprint_flags(_runs(seven_of_ten()), _runs(seven_of_ten())) == ()


def test_suites_on_one_side_only_are_listed(tmp_path: Path) -> None:
    path = document(seven_of_ten("a") + seven_of_ten("b"), tmp_path)
    report = compare_with(load_session_document(path), _runs(seven_of_ten("a") + seven_of_ten("c")), path=path)
    text = flat(render_comparison(report))
    assert "only in the baseline (not compared): b" in text and "only in this run (not compared): c" in text


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        ("{not json", "not JSON"),
        ('{"runs": 3}', "expected a session document written by --agentbench-json"),
        ('[{"suite": "a"}]', "expected a session document written by --agentbench-json"),
    ],
    ids=["missing", "not-json", "runs-not-a-list", "a-list"],
)
def test_a_bad_compare_document_is_a_sentence(tmp_path: Path, content: str | None, expected: str) -> None:
    path = tmp_path / "old.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError) as excinfo:
        load_session_document(path)
    assert str(excinfo.value).startswith(f"--agentbench-compare {path}:") and expected in str(excinfo.value)


# ----------------------------------------------------------------------------- harness demos


def test_a_harness_demo_is_shown_but_never_pooled_into_the_session_line() -> None:
    from pytest_agentbench.report.terminal import counts_line

    core = [result("contacts-add", "passed", r) for r in (1, 2)] + [result("contacts-add", "failed", 3)]
    demo = [{**result("wifi-on", "passed", r), "demo": True} for r in (1, 2, 3)]
    runs = _runs(core + demo)
    statistics = session_statistics(runs)
    # The table keeps the demo suite; the session line is the core jobs' alone (2/3, not 5/6).
    assert [stats.suite for stats in statistics.suites] == ["contacts-add", "wifi-on"]
    assert statistics.demo_suites == ("wifi-on",)
    assert (statistics.session.suites, statistics.session.passed, statistics.session.failed) == (1, 2, 1)
    pooled = session_statistics(_runs(core + [{**document, "demo": False} for document in demo]))
    assert (pooled.session.suites, pooled.session.passed) == (2, 5)
    text = render_statistics(statistics)
    assert "wifi-on (demo)" in text and "not in the session line: wifi-on (harness demos, docs/jobs.md)" in text
    assert statistics_block(statistics)["demoSuites"] == ["wifi-on"] and "demoSuites" not in statistics_block(pooled)
    # The counts line still counts every run.
    assert counts_line(runs, statistics).startswith("6 runs of 2 suites: 5 passed, 1 failed")


def test_demo_is_written_only_for_a_demo_suite_and_read_back() -> None:
    plain = RunResult.from_json(result("contacts-add", "passed", 1))
    assert plain.demo is False and "demo" not in plain.to_json()
    marked = RunResult.from_json({**result("wifi-on", "passed", 1), "demo": True})
    assert marked.demo is True and marked.to_json()["demo"] is True
    assert RunResult.from_json(marked.to_json()) == marked


def test_the_committed_wifi_on_suite_is_the_one_harness_demo() -> None:
    from pytest_agentbench.suite import load_suite

    root = Path(__file__).resolve().parents[2]
    suites = {path.stem: load_suite(path, root) for path in sorted((root / "benchmark" / "agent" / "suites").glob("*.yml"))}
    assert [name for name, suite in suites.items() if suite.demo] == ["wifi-on"]
