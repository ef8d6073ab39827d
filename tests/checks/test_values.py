"""The matchers of checks/values.py: `token` (one delimited token of a bounded field, no other candidate), `digits` bounded, and the loader's rule for values random per run."""

from __future__ import annotations

import pytest

from pytest_agentbench.checks.values import MAX_TOKEN_FIELD, parse_matcher, random_value_problems, token_verdict


@pytest.mark.parametrize(
    ("wanted", "value", "holds", "refusal"),
    [
        ("482913", "482913", True, None),
        ("482913", "Pickup code: 482913 (parcel AB-1234)", True, None),
        ("482913", "Code 482913.", True, None),
        ("482913", "4829131", False, None),                       # part of a longer number
        ("482913", "x482913", False, None),                       # glued to a letter
        ("482913", "482913 or 123456", False, "1 other value shaped like it ('123456')"),
        ("482913", "0" * (MAX_TOKEN_FIELD - 6) + " 482913", False, f"the field is {MAX_TOKEN_FIELD + 1:,} characters long"),
        ("482913", "0" * (MAX_TOKEN_FIELD - 7) + " 482913", True, None),  # at the limit; the run of zeros is no code's shape
        ("C27", ["C27"], True, None),
        ("C27", ["C27", "C5"], True, None),                       # another shape: not a candidate for C27
        ("C27", ["C27", "C15"], False, "('C15'): a list of candidates is not an answer"),
        ("C27", [f"C{n}" for n in range(40)], False, "the list has 40 members, over the 32"),
        ("Tokyo", "Tokyo clock", True, None),                     # words: no shape rule ("clock" is ordinary text)
        ("Sign up", "tap Sign up now", True, None),
    ],
    ids=["whole", "in-a-sentence", "before-a-full-stop", "longer-number", "glued", "candidates", "over-the-limit",
         "at-the-limit", "member", "member-other-shape", "member-candidates", "members-over-the-limit", "word", "phrase"],
)
def test_token_is_one_delimited_token_of_a_bounded_field(wanted: str, value, holds: bool, refusal: str | None) -> None:
    found, why = token_verdict(wanted, value)
    assert found is holds
    assert (why is None) if refusal is None else (refusal in (why or "")), why


def test_a_phone_number_of_more_digits_than_any_number_fails_with_a_sentence() -> None:
    digits = parse_matcher({"digits": "5552341234"})
    assert digits.judge(True, "+1 555-234-1234") == (True, None)
    assert digits.judge(True, "1" * 6 + "5552341234") == (False, "the field holds 16 digits; a phone number has at most 15")


@pytest.mark.parametrize(
    ("raw", "refused"),
    [
        ({"contains": "{code}"}, True),
        ({"matches": "^x{code}$"}, True),
        ({"contains": {"fromPrefs": {"package": "p.q", "file": "f", "key": "k"}}}, True),
        ({"contains": "{runDirectory}"}, True),
        ({"contains": "fixed"}, False),
        ({"contains": "{packageName}"}, False),
        ({"token": "{code}"}, False),
        ({"equals": "{code}"}, False),
        ({"digits": "555{code}"}, False),
        ("{code}", False),
    ],
    ids=["contains-param", "matches-param", "contains-from-prefs", "contains-run-time", "contains-fixed",
         "contains-package", "token", "equals", "digits", "bare"],
)
def test_a_random_value_may_not_be_searched_for(raw, refused: bool) -> None:
    problems = random_value_problems("verify.device[0].match.data1", raw, ("code",))
    assert bool(problems) is refused, problems
