"""checks/records.py as pure tables: which values of a record are candidates of a random value, and when records hold a flood.

A flood split over records (a million contacts, one code each) passes every per-field rule; a check
whose operand is random fails when the records where the rest of it holds also hold another value
the instance could have drawn, or, for a value with a digit, another value of its shape. The same
value twice, a value of another shape and a field of another record kind are no candidates.
"""

from __future__ import annotations

import pytest

from pytest_agentbench.checks.records import candidate_values, flood_over, is_candidate
from pytest_agentbench.checks.values import Matcher

NAMES = "(?:Courier|Depot|Dispatch)"


@pytest.mark.parametrize(
    ("text", "wanted", "space", "holds"),
    [
        ("123456", "482913", None, True),          # a code's shape
        ("12345", "482913", None, False),          # another length
        ("AB-1234", "CD-5678", None, True),        # letters where it has letters, the dash as is
        ("AB 1234", "CD-5678", None, False),
        ("Depot", "Courier", NAMES, True),         # another value the instance could have drawn
        ("Mum", "Courier", NAMES, False),          # a name no instance draws
        ("Depot", "Courier", None, False),         # a word has no shape rule without its space
        ("+15552020001", "+15552010001", None, True),
    ],
    ids=["code-shape", "other-length", "mixed-shape", "mixed-other", "drawn-choice", "not-drawn", "word-no-space", "phone-shape"],
)
def test_a_candidate_is_a_value_the_instance_could_have_drawn_or_one_of_a_codes_shape(text, wanted, space, holds) -> None:
    assert is_candidate(text, wanted, space) is holds


@pytest.mark.parametrize(
    ("matcher", "wanted", "value", "found"),
    [
        (Matcher("equals", "Courier", random=True, space=NAMES), "Courier", "Depot", ["Depot"]),
        (Matcher("equals", "Courier", random=True, space=NAMES), "Courier", "Depot Street", []),  # equals takes the whole field
        (Matcher("token", "482913", random=True), "482913", "Pickup 482913, parcel AB-1234", ["482913"]),
        (Matcher("token", "482913", random=True), "482913", "code 100000 or 482913", ["100000", "482913"]),
        (Matcher("token", "482913", random=True), "482913", "no code here", []),
        (Matcher("token", "C27", random=True, space="(?:C27|C15|C5)"), "C27", ["C27", "C5", "X1"], ["C27", "C5"]),
        (Matcher("token", "Tokyo", random=True, space="(?:Tokyo|Lisbon)"), "Tokyo", "Tokyo and Lisbon", ["Tokyo", "Lisbon"]),
        (Matcher("digits", "5552341234", random=True), "5552341234", "+1 555-999-0000", ["5559990000"]),
        # The shape counts beside the space: a number outside the drawn pattern is still a candidate.
        (Matcher("digits", "5552341234", random=True, space="5552[0-9]{2}1[0-9]{3}"), "5552341234", "+1 555-999-0000", ["5559990000"]),
        (Matcher("digits", "5552341234", random=True), "5552341234", "911", []),                 # too few digits
        (Matcher("digits", "5552341234", random=True), "5552341234", "1" * 20, []),              # no phone number
        (Matcher("exists", True, random=True), True, "x", []),
        (Matcher("equals", "482913", random=True), "482913", None, []),
    ],
    ids=["equals-drawn", "equals-whole", "token-one", "token-two", "token-none", "token-members", "token-words", "digits-shape",
         "digits-shape-and-space", "digits-short", "digits-flood", "exists", "absent"],
)
def test_the_candidate_values_of_one_record(matcher: Matcher, wanted, value, found: list[str]) -> None:
    assert candidate_values(matcher, wanted, value) == found


def test_records_holding_other_candidates_are_a_flood_that_counts_them() -> None:
    code = Matcher("token", "4821", random=True)
    flood = flood_over([f"code {n:04d}" for n in range(10_000)], code, "4821", "data1", "new row")
    assert flood is not None and flood.holders == 10_000 and len(flood.others) == 9_999
    assert flood.sentence().startswith("10,000 new rows held candidate values of data1 (9,999 other than the one wanted: "
                                       "'0000', '0001', '0002', ...): a flood of records holds every value")


@pytest.mark.parametrize(
    "values",
    [
        ["Pickup 4821"],                              # the one record
        ["Pickup 4821", "Pickup code: 4821"],         # the same value twice is no other candidate
        ["Pickup 4821", "call back at noon", None],   # records without a candidate
        ["code 1234", "code 5678"],                   # no record holds it: a wrong value, which the check fails on its own
        ["4821 or 1234", "call back"],                # candidates in one field: the per-field rule's to refuse
        [],
    ],
    ids=["one", "same-twice", "no-candidates", "wrong-values", "one-field", "none"],
)
def test_no_flood_without_another_candidate(values: list) -> None:
    assert flood_over(values, Matcher("token", "4821", random=True), "4821", "data1", "new row") is None
