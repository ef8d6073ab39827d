"""The `report` check (checks/report.py): one sentence per bug, denials, values this run's app logged, and the phrasing corpora of tests/data/report-phrasings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_agentbench.suite import params

from pytest_agentbench.checks import report
from pytest_agentbench.checks.base import CheckContext

ROOT = Path(__file__).resolve().parents[2]
CORPORA = sorted((ROOT / "tests" / "data" / "report-phrasings").glob("*.yml"))


def _corpus(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _spec(corpus: dict[str, Any]) -> report.Spec:
    suite = yaml.safe_load((ROOT / "benchmark" / "agent" / "suites" / f"{corpus['suite']}.yml").read_text(encoding="utf-8"))
    entry = next(entry for entry in suite["verify"]["device"] if entry["name"] == corpus["check"])
    # The corpus is one seeded instance of the suite: its `values` fill the check's {params}.
    return report.parse(params.fill(entry, corpus.get("values") or {}).value)


def _events(spec: report.Spec, corpus: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {path: corpus["events"] for path in spec.logs}


#: Each class of sentence that must not count, and a phrase of the reason it fails for.
NOT_FOUND_REASONS = {
    "denials": "denies it",
    "negations": "denies it",
    "copies": "names none of the values this run's app showed",
    "no value": "names none of the values this run's app showed",
    "not the bug": "no sentence reports it",
}


def _found_cases() -> list[Any]:
    cases = []
    for path in CORPORA:
        corpus = _corpus(path)
        for bug, sides in corpus["bugs"].items():
            for number, sentence in enumerate(sides.get("found") or []):
                cases.append(pytest.param(path, bug, sentence, id=f"{corpus['suite']}-{bug}-{number}"))
    return cases


def _not_found_cases() -> list[Any]:
    cases = []
    for path in CORPORA:
        corpus = _corpus(path)
        for bug, sides in corpus["bugs"].items():
            for kind, sentences in (sides.get("not_found") or {}).items():
                for number, sentence in enumerate(sentences):
                    cases.append(pytest.param(path, bug, kind, sentence, id=f"{corpus['suite']}-{bug}-{kind}-{number}"))
    return cases


def test_every_qa_suite_has_a_corpus_of_every_class() -> None:
    # Issue 28 E: the three qa suites, each with honest phrasings and soups, denials and copies to fail.
    suites = {path.stem for path in (ROOT / "benchmark" / "agent" / "suites").glob("qa-*.yml")}
    assert suites == {path.stem for path in CORPORA} == {"qa-forms-bug-report", "qa-shop-bug-report", "qa-tasks-bug-report"}
    for path in CORPORA:
        corpus = _corpus(path)
        for bug, sides in corpus["bugs"].items():
            assert sides["found"] and set(sides["not_found"]) == set(NOT_FOUND_REASONS), (path.name, bug)
        assert {case["kind"] for case in corpus["reports"]} == {"honest", "soup", "doubled soup", "denial", "copy"}, path.name


def test_every_planted_bug_of_the_qa_suites_needs_a_value_the_app_logged() -> None:
    # A report copied from another run must fail on every bug, not on one: each names this run's values.
    for path in CORPORA:
        spec = _spec(_corpus(path))
        assert all(bug.shows is not None for bug in spec.bugs), path.name


@pytest.mark.parametrize(("path", "bug", "sentence"), _found_cases())
def test_a_human_phrasing_of_a_planted_bug_counts(path: Path, bug: str, sentence: str) -> None:
    corpus = _corpus(path)
    spec = _spec(corpus)
    finding = report.find_bugs(spec, sentence, _events(spec, corpus))
    assert bug in finding.found, finding.why_not


@pytest.mark.parametrize(("path", "bug", "kind", "sentence"), _not_found_cases())
def test_a_denial_a_copy_or_a_partial_phrasing_does_not_count(path: Path, bug: str, kind: str, sentence: str) -> None:
    corpus = _corpus(path)
    spec = _spec(corpus)
    finding = report.find_bugs(spec, sentence, _events(spec, corpus))
    assert bug not in finding.found, finding.found
    assert NOT_FOUND_REASONS[kind] in finding.why_not[bug], finding.why_not[bug]


def _reports() -> list[Any]:
    return [pytest.param(path, case, id=f"{_corpus(path)['suite']}-{case['kind'].replace(' ', '-')}-{number}")
            for path in CORPORA for number, case in enumerate(_corpus(path)["reports"])]


@pytest.mark.parametrize(("path", "case"), _reports())
def test_whole_reports_find_exactly_their_bugs(path: Path, case: dict[str, Any]) -> None:
    corpus = _corpus(path)
    spec = _spec(corpus)
    finding = report.find_bugs(spec, case["answer"], _events(spec, corpus))
    assert len(finding.found) == case["found"], (finding.found, finding.why_not)
    if "reason" in case:
        assert any(case["reason"] in why for why in finding.why_not.values()), finding.why_not


@pytest.mark.parametrize(
    ("sentence", "denies"),
    [
        ("No bugs found.", "No bugs"),
        ("There are no real issues here.", "no real issues"),
        ("I did not find the bug.", "did not find"),
        ("I couldn't reproduce it.", "couldn't reproduce"),
        ("The discount works.", "works"),
        ("The total is correct.", "correct"),
        ("Everything is fine.", "fine"),
        ("It behaves as expected.", "as expected"),
        ("The total did not work out.", None),
        ("The total is not correct.", None),
        ("The total does not update correctly.", None),
        ("It isn't fine at all.", None),
        ("The total is incorrect.", None),
        ("SAVE10 works as a flat $10.00 discount.", None),
        ("The total stayed at $48.00.", None),
    ],
)
def test_denial(sentence: str, denies: str | None) -> None:
    assert report.denial(sentence) == denies


@pytest.mark.parametrize(
    ("text", "numbers"),
    [("$48.00 not $36", {48, 36}), ("1,200 px and 32.40", {1200, "32.40"}), ("version 3.", {3}), ("none", set())],
)
def test_numbers_in(text: str, numbers: set[Any]) -> None:
    from decimal import Decimal
    assert report.numbers_in(text) == {Decimal(str(number)) for number in numbers}


SPEC = report.parse({"kind": "report", "name": "shop", "bugs": [
    {"name": "stale-total", "patterns": ["total", "remov"],
     "shows": {"package": "dev.agentbench.testbed", "event": "item_removed", "fields": ["total_shown", "total_expected"]}},
    {"name": "flat-discount", "patterns": ["discount", "flat"]},
]})
LOG = "/data/data/dev.agentbench.testbed/files/events.jsonl"


def _snapshot(*events: dict[str, Any]) -> dict[str, Any]:
    return {"logs": {LOG: {"events": list(events), "unparseable": 0, "missing": False}}}


OLD = {"event": "item_removed", "total_shown": "$48.00", "total_expected": "$36.00", "ts": 1}
NEW = {"event": "item_removed", "total_shown": "$24.00", "total_expected": "$12.00", "ts": 2}


@pytest.mark.parametrize(
    ("before", "after", "answer", "passed", "seen"),
    [
        (_snapshot(), _snapshot(NEW), "After removing one the total stayed at $24. The discount is flat.", True, "found stale-total"),
        # a report copied from a run that showed other totals
        (_snapshot(), _snapshot(NEW), "After removing one the total stayed at $48. The discount is flat.", False,
         "names none of the values this run's app showed (total_shown/total_expected: $24.00, $12.00)"),
        # an event from before the run is not this run's
        (_snapshot(OLD), _snapshot(OLD), "After removing one the total stayed at $48. The discount is flat.", False,
         "no new item_removed event was logged"),
        (_snapshot(), _snapshot(NEW), "Total removed $24 discount flat", False, "a sentence that fits more than one bug counts for none"),
        (_snapshot(), {"logs": {LOG: {"error": "needs root"}}}, "x", False, "needs root"),
    ],
    ids=["this-runs-values", "copied-values", "old-event", "soup", "unreadable-log"],
)
def test_report_validate_reads_this_runs_event_log(before: dict, after: dict, answer: str, passed: bool, seen: str) -> None:
    check = report.validate(before, after, SPEC, CheckContext(answer=answer))
    assert check.passed is passed and seen in check.seen, check


def test_a_bug_with_shows_reads_its_event_log_before_and_after() -> None:
    assert [read.key for read in report.reads(SPEC)] == [f"file:{LOG}"] or len(report.reads(SPEC)) == 1
    assert report.USES_BEFORE
    plain = report.parse({"kind": "report", "name": "x", "bugs": [{"name": "a", "patterns": ["a"]}]})
    assert report.reads(plain) == ()


SWIPE = report.Bug("swipe", ("swip", "Book flights|below|instead", "delet|remov|disappear"))
STALE = report.Bug("stale", ("total", "remov", r"stale|stayed|not (update|drop)|n.t (update|drop)"))
WELCOME = report.Bug("welcome", ("welcome", "e-?mail|ada@", r"last char|drop|truncat|example\.co\b"))


@pytest.mark.parametrize(
    ("bug", "sentence", "values", "negated"),
    [
        (SWIPE, "Swiping Email Sam did not delete the task below it.", (), "did not delete"),
        (STALE, "After removing a notebook the total was not stale.", (), "was not stale"),
        (STALE, "After removing a notebook the total never stayed at $48.", (), "total never stayed"),
        (WELCOME, "The welcome line did not drop the last character of the email.", (), "did not drop"),
        # the observation a pattern also matches is not a word about the bug
        (WELCOME, "The welcome line showed ada@example.co; the email was never truncated.", ("ada@example.co",), "was never truncated"),
        # what happened, said as well
        (SWIPE, "The swipe did not remove Email Sam but deleted Book flights.", (), None),
        (SWIPE, "Swiping Email Sam didn't remove it; Book flights below it disappeared instead.", (), None),
        # a negation that is the bug's own word turns nothing around
        (STALE, "The total did not drop after I removed a notebook: it stayed at $48.", (), None),
        (STALE, "The total, not the subtotal, stayed at $48 after I removed one.", (), None),
        # more than two words from the negation: not its object
        (WELCOME, "The welcome line did not show my full email: it cut the last character.", (), None),
        (WELCOME, "The welcome screen shows ada@example.co instead of ada@example.com.", ("ada@example.co",), None),
    ],
    ids=["did-not-delete", "was-not-stale", "never-stayed", "did-not-drop", "value-then-never", "but-deleted",
         "clause-then-disappeared", "negation-is-the-bug", "contrast-in-commas", "far-object", "observation-only"],
)
def test_a_negation_of_the_bugs_own_words_denies_it(bug: report.Bug, sentence: str, values: tuple, negated: str | None) -> None:
    assert report.negated(bug, sentence, values) == negated


@pytest.mark.parametrize(
    ("sentence", "value", "named"),
    [
        ('It says "Welcome, ada@example.co!"', "ada@example.co", True),
        ("It says ada@example.co.", "ada@example.co", True),
        ("It says ada@example.com", "ada@example.co", False),
        ("It says ada@example.co.uk", "ada@example.co", False),
        ("deleted book  flights", "Book flights", True),
        ("deleted Book flightsX", "Book flights", False),
        ("Tasks (6) stayed", 6, True),
        ("stayed at $48", "$48.00", True),
        ("stayed at 148", "$48.00", False),
    ],
    ids=["quoted", "full-stop", "longer-email", "longer-domain", "case-and-spaces", "glued", "int", "money", "other-number"],
)
def test_a_logged_value_is_named_as_a_number_or_a_whole_phrase(sentence: str, value, named: bool) -> None:
    assert report.names_value(sentence, value) is named


def test_a_sentence_written_twice_counts_once() -> None:
    text = "BUG: the total stayed.\n- The total  stayed\n* BUG 2: the total stayed!\nAnother one."
    assert report.distinct_sentences(text) == ["BUG: the total stayed.", "Another one."]
