"""The prove judgement (pure): a scenario's checks -> proven or not, with a sentence that says which check and why."""

from __future__ import annotations

import dataclasses

import pytest
from auditfakes import make_suite

from pytest_agentbench.audit.prove import ProveStep, Scenario, judge, scenarios_of
from pytest_agentbench.checks.base import Check

PINNED = Check("sqlite", "exactly the rows [[\"Alice\"]]", True, 'the query returned 1 row: [["Alice"]]', "pinned")
UNPINNED = dataclasses.replace(PINNED, passed=False, seen="the query returned 0 rows: []")
SAVED = Check("content", "at least one new row", True, "1 new row, 1 matching", "saved")
UNSAVED = dataclasses.replace(SAVED, passed=False, seen="0 new rows, 0 matching")
ANSWERED = Check("answer", "LAB: done", True, "LAB: done", "answer")
UNANSWERED = dataclasses.replace(ANSWERED, passed=False, seen="(no final reply)")

PASS = Scenario("pass", "pass")
FRESH = Scenario("fresh", "fresh")
NO_PIN = Scenario("fail", "no-pin", check="pinned", reason_includes="0 ROWS")


@pytest.mark.parametrize(
    ("scenario", "checks", "proven", "says"),
    [
        (PASS, [PINNED, SAVED, ANSWERED], True, "passes all 3 checks"),
        (PASS, [UNPINNED, SAVED, ANSWERED], False, "the pass scenario fails sqlite check 'pinned' failed"),
        (FRESH, [UNPINNED, UNSAVED, UNANSWERED], True, "all 3 checks fail"),
        # The acceptance: a check that passes on the fresh state fails the fresh item, naming it.
        (FRESH, [PINNED, UNSAVED, UNANSWERED], False, "the suite passes with no action: on the fresh state (preflight, then nothing) pinned passes"),
        (FRESH, [PINNED, SAVED], False, "the suite passes with no action: every check passes"),
        (NO_PIN, [UNPINNED, SAVED, ANSWERED], True, "fails exactly 'pinned'"),
        # ... and a fail scenario that passes fails its item, saying the check does not catch it.
        (NO_PIN, [PINNED, SAVED, ANSWERED], False, "the fail scenario 'no-pin' passes every check: 'pinned' does not catch it"),
        (NO_PIN, [PINNED, UNSAVED, ANSWERED], False, "does not fail 'pinned'; it fails saved instead"),
        (NO_PIN, [UNPINNED, SAVED, UNANSWERED], False, "fails 'pinned' but also answer: a fail scenario must fail exactly the check it names"),
        (dataclasses.replace(NO_PIN, reason_includes="locked"), [UNPINNED, SAVED, ANSWERED], False,
         "fails 'pinned', but its reason does not contain 'locked'"),
    ],
    ids=["pass", "pass-broken", "fresh", "fresh-one-passes", "fresh-all-pass", "fail", "fail-scenario-passes",
         "fails-another", "fails-two", "wrong-word"],
)
def test_judge(scenario: Scenario, checks: list[Check], proven: bool, says: str) -> None:
    judgement = judge(scenario, checks)
    assert judgement.passed is proven and says in judgement.reason, judgement.reason


CLEAN = {"actions": [{"action": "delete contacts row _id=7", "status": 0}], "failed": [], "left": []}


@pytest.mark.parametrize(
    ("scenario", "checks", "cleanup", "proven", "says"),
    [
        (PASS, [PINNED, SAVED], CLEAN, True, "passes all 2 checks"),
        (PASS, [PINNED, SAVED], None, True, "passes all 2 checks"),
        (PASS, [PINNED, SAVED], {**CLEAN, "left": ["contacts: rows _id=7 added by the run are still there"]}, False,
         "passes all 2 checks, but cleanup did not put the phone back: contacts: rows _id=7 added by the run are still there"),
        (FRESH, [UNPINNED, UNSAVED], {**CLEAN, "failed": ["cleanup could not reach the device: gone"]}, False,
         "but cleanup did not put the phone back: cleanup could not reach the device: gone"),
        # The checks' own failure is the reason; cleanup's comes second.
        (PASS, [UNPINNED, SAVED], {**CLEAN, "left": ["x"]}, False, "the pass scenario fails sqlite check 'pinned' failed"),
    ],
    ids=["clean", "nothing-watched", "left", "failed-step", "checks-first"],
)
def test_a_proof_includes_its_cleanup(scenario, checks, cleanup, proven: bool, says: str) -> None:
    judgement = judge(scenario, checks, cleanup)
    assert judgement.passed is proven and says in judgement.reason, judgement.reason


def test_scenarios_of_a_suite_in_item_order() -> None:
    suite = make_suite()
    assert [s.item_name for s in scenarios_of(suite)] == ["prove-fresh"]
    proved = dataclasses.replace(suite, prove={
        "pass": {"steps": [{"tool": "tapOn", "args": {"text": "Pin"}}, {"wait": 0.5}, {"adb": ["input", "keyevent", "BACK"]}],
                 "answer": "done"},
        "fail": [{"name": "no-pin", "check": "pinned", "reasonIncludes": "0 rows", "steps": []}],
    })
    scenarios = scenarios_of(proved)
    assert [s.item_name for s in scenarios] == ["prove-pass", "prove-fail-no-pin", "prove-fresh"]
    assert scenarios[0].steps == (ProveStep(tool="tapOn", args={"text": "Pin"}), ProveStep(wait=0.5),
                                  ProveStep(adb=("input", "keyevent", "BACK")))
    assert scenarios[0].answer == "done" and scenarios[1].check == "pinned" and scenarios[2].steps == ()
    assert [step.describe() for step in scenarios[0].steps] == ["tapOn(text='Pin')", "wait 0.5s", "adb shell input keyevent BACK"]
