"""Tests for standalone matching and the final-answer line rules (matching.py)."""

from __future__ import annotations

import pytest

from pytest_agentbench.audit.matching import (
    is_key_value,
    last_nonblank_lines,
    match_answer,
    normalize_answer_line,
)
from pytest_agentbench.device.uiautomator import screen_includes
from pytest_agentbench.text import standalone_match


@pytest.mark.parametrize(
    ("haystack", "needle", "ignore_case", "matches"),
    [
        ("EXPECTED_COUNT: 3", "EXPECTED_COUNT: 3", True, True),
        ("EXPECTED_COUNT: 30", "EXPECTED_COUNT: 3", True, False),
        ("EXPECTED_COUNT: 3.5", "EXPECTED_COUNT: 3", True, False),
        ("EXPECTED_COUNT: 3,000", "EXPECTED_COUNT: 3", True, False),
        ("EXPECTED_COUNT: 3.", "EXPECTED_COUNT: 3", True, True),
        ("EXPECTED_COUNT: 3, done", "EXPECTED_COUNT: 3", True, True),
        ("expected_count: 3", "EXPECTED_COUNT: 3", True, True),
        ("expected_count: 3", "EXPECTED_COUNT: 3", False, False),
        ("XEXPECTED_COUNT: 3", "EXPECTED_COUNT: 3", True, False),
        ("作業は未完了です", "完了", False, False),
        ("作業は完了", "完了", False, False),
        ("作業：完了", "完了", False, True),
        ("完了しました", "完了", False, False),
        ("状态：完了。", "完了", False, True),
        ("Total 13 items", "3 items", False, False),
        ("Total 1.3 items", "3 items", False, False),
        ("Total: 3 items", "3 items", False, True),
        ("Saved!", "Saved", False, True),
        ("Unsaved", "Saved", False, False),
        ("Savedraft", "Saved", False, False),
        ("Count (3)", "(3)", False, True),
        ("Count(3)x", "(3)", False, True),
        ("कि", "क", False, False),
        ("", "Saved", False, False),
        ("Saved", "", False, False),
        ("Saved Saved2", "Saved", False, True),
        ("Saved2 Saved", "Saved", False, True),
    ],
    ids=[
        "the exact string matches",
        "a longer number does not match",
        "a decimal continuing the number does not match",
        "a thousands separator continuing the number does not match",
        "a sentence period after the number still matches",
        "a comma followed by a space still matches",
        "answers ignore case",
        "the screen does not ignore case",
        "a letter before the needle does not match",
        "a CJK word inside a longer CJK word does not match",
        "a CJK word after kana runs on, as there is no space in between",
        "a CJK word after CJK punctuation matches",
        "a CJK word followed by kana does not match",
        "a CJK word between punctuation matches",
        "a digit before the number does not match",
        "a decimal before the number does not match",
        "a space before the number matches",
        "punctuation after the needle matches",
        "a word containing the needle does not match",
        "a word starting with the needle does not match",
        "punctuation edges need no boundary",
        "punctuation edges may touch letters",
        "a combining mark continues the letter",
        "an empty text never matches",
        "an empty needle never matches",
        "one standalone occurrence among others is enough",
        "a later standalone occurrence is found",
    ],
)
def test_standalone_match(haystack: str, needle: str, ignore_case: bool, matches: bool) -> None:
    assert standalone_match(haystack, needle, ignore_case=ignore_case) is matches


@pytest.mark.parametrize(
    ("expected", "key_value"),
    [
        ("EXPECTED_COUNT: 3", True),
        ("status: done", True),
        ("Résultat: 3", True),
        ("完了: はい", True),
        ("Expected count: 3", False),
        ("12:30", False),
        ("Saved", False),
        ("_KEY: 1", False),
    ],
    ids=[
        "an upper-case key",
        "a lower-case key",
        "a key with accents",
        "a CJK key",
        "two words before the colon is not a key",
        "a time is not a key",
        "no colon is not a key",
        "a key must start with a letter",
    ],
)
def test_key_value_strings_are_a_word_then_a_colon(expected: str, key_value: bool) -> None:
    assert is_key_value(expected) is key_value


@pytest.mark.parametrize(
    ("line", "normal"),
    [
        ("EXPECTED_COUNT: 3", "expected_count:3"),
        ("  expected_count :   3 ", "expected_count:3"),
        ("`EXPECTED_COUNT: 3`", "expected_count:3"),
        ("EXPECTED_COUNT: 3.", "expected_count:3"),
        ("**EXPECTED_COUNT: 3**", "expected_count:3"),
        ("**WORLD_CLOCK:** London", "world_clock:london"),
        ("*WORLD_CLOCK*: _London_", "world_clock:london"),
        ("__WORLD_CLOCK__:\u00a0London", "world_clock:london"),
        ("- EXPECTED_COUNT: 3", "expected_count:3"),
        ("EXPECTED_COUNT: 3 items", "expected_count:3 items"),
        ("EXPECTED_COUNT: 3 (I think)", "expected_count:3 (i think)"),
    ],
    ids=["plain", "spacing", "backticks", "a trailing period", "bold around the line", "bold key",
         "italic key and value", "underscore bold and a no-break space", "a list bullet",
         "extra words stay", "an aside stays"],
)
def test_answer_lines_ignore_case_spacing_markdown_and_a_trailing_period(line: str, normal: str) -> None:
    assert normalize_answer_line(line) == normal


def test_last_nonblank_lines_skip_code_fences() -> None:
    reply = "Done.\n\n```\nEXPECTED_COUNT: 3\nSTATUS: ok\n```\n\n"
    assert last_nonblank_lines(reply, 2) == ["EXPECTED_COUNT: 3", "STATUS: ok"]
    assert last_nonblank_lines(reply, 5) == ["Done.", "EXPECTED_COUNT: 3", "STATUS: ok"]


TWO_KEYS = ("EXPECTED_COUNT: 3", "STATUS: done")


@pytest.mark.parametrize(
    ("reply", "expected", "passed"),
    [
        ("I counted.\nEXPECTED_COUNT: 3\nSTATUS: done", TWO_KEYS, [True, True]),
        ("I counted.\nexpected_count:3\n`STATUS: done`.", TWO_KEYS, [True, True]),
        ("Result:\n```\nEXPECTED_COUNT: 3\nSTATUS: done\n```", TWO_KEYS, [True, True]),
        ("EXPECTED_COUNT: 30\nSTATUS: done", TWO_KEYS, [False, True]),
        ("EXPECTED_COUNT: 3 (I think)\nSTATUS: done", TWO_KEYS, [False, True]),
        ("EXPECTED_COUNT: 3\nSTATUS: done\nLet me know if you need more.", TWO_KEYS, [False, False]),
        ("STATUS: done\nEXPECTED_COUNT: 3", TWO_KEYS, [False, False]),
        ("EXPECTED_COUNT: 3", TWO_KEYS, [False, False]),
        ("EXPECTED_COUNT: 3\nSTATUS: done\n", ("EXPECTED_COUNT: 3",), [False]),
        ("The list shows Expected count: 3 now.", ("Expected count: 3",), [True]),
        ("The list shows expected count: 30.", ("Expected count: 3",), [False]),
        ("Done. EXPECTED_COUNT: 3", ("EXPECTED_COUNT: 3",), [False]),
        ("All steps 完了", ("完了",), [True]),
        ("作業は未完了", ("完了",), [False]),
        (None, ("Saved",), [False]),
        ("   ", TWO_KEYS, [False, False]),
        # issue 19 F: honest lines that failed before.
        ("**WORLD_CLOCK:** London\n**SNOOZE:** 15 minutes", ("WORLD_CLOCK: London", "SNOOZE: 15 minutes"), [True, True]),
        ("PINNED: +1 555-123-0001\nARCHIVED: (555) 123-0002", ("PINNED: +15551230001", "ARCHIVED: +15551230002"), [True, True]),
        ("CROPPED: 800x800", ("CROPPED: 800 x 800",), [True]),
        ("CROPPED: 800×800", ("CROPPED: 800 x 800",), [True]),
        ("CROPPED: 800 X 800 px", ("CROPPED: 800 x 800",), [True]),
        # ... and what must still fail.
        ("PINNED: +1 555-123-0003", ("PINNED: +15551230001",), [False]),
        ("PINNED: 0001", ("PINNED: +15551230001",), [False]),
        ("PINNED: +15551230001 or +15551230002", ("PINNED: +15551230001",), [False]),
        ("PINNED: Alice +15551230001", ("PINNED: +15551230001",), [False]),
        ("CROPPED: 800 x 8000", ("CROPPED: 800 x 800",), [False]),
        ("CROPPED: 1200 x 800", ("CROPPED: 800 x 800",), [False]),
        ("CROPPED: 800", ("CROPPED: 800 x 800",), [False]),
        ("**WORLD_CLOCK:** Paris", ("WORLD_CLOCK: London",), [False]),
        ("STATUS: 15551230001", ("STATUS: done",), [False]),
        ("COUNT: 01234567", ("COUNT: 1234567",), [False]),
    ],
    ids=[
        "the expected lines end the reply in order",
        "case, spacing, backticks and a trailing period are ignored",
        "code fences around the lines are ignored",
        "a different value fails that line",
        "text added to a line fails it",
        "a disclaimer after the lines fails them",
        "lines out of the suite's order fail",
        "a missing line fails",
        "an extra key line after the expected one fails",
        "a plain string may occur anywhere",
        "a plain string with a longer number fails",
        "a key line must be a line of its own",
        "a CJK plain string standing alone passes",
        "a CJK plain string inside a longer word fails",
        "no reply fails every check",
        "a blank reply fails every check",
        "markdown bold around the keys is ignored",
        "phone numbers compare by digit suffix",
        "a size without spaces",
        "a size with a multiplication sign",
        "a size in capitals with px",
        "another phone number fails",
        "too few digits fail",
        "two phone numbers fail",
        "a name beside the number fails",
        "a longer side fails",
        "another size fails",
        "half a size fails",
        "another city in bold fails",
        "a number where a word is expected fails",
        "a bare number is not a phone number",
    ],
)
def test_answer_rules(reply: str | None, expected: tuple[str, ...], passed: list[bool]) -> None:
    matches = match_answer(reply, expected)
    assert [m.expected for m in matches] == list(expected)
    assert [m.passed for m in matches] == passed


def test_answer_match_shows_the_replys_last_lines() -> None:
    reply = "one\ntwo\nthree\nEXPECTED_COUNT: 30"
    (match,) = match_answer(reply, ("EXPECTED_COUNT: 3",))
    assert match.seen == "two\nthree\nEXPECTED_COUNT: 30"
    (missing,) = match_answer(None, ("EXPECTED_COUNT: 3",))
    assert missing.seen == "(no final reply)"


@pytest.mark.parametrize(
    ("texts", "expected", "shown"),
    [
        (["Expected count: 3"], "Expected count: 3", True),
        (["expected count: 3"], "Expected count: 3", False),
        (["Expected count: 30"], "Expected count: 3", False),
        (["Expected count:", "3"], "Expected count: 3", False),
        (["Title", "Saved"], "Saved", True),
    ],
    ids=[
        "the text on screen matches",
        "the screen is case-sensitive",
        "a longer number on screen does not match",
        "a string split over two nodes does not match",
        "any one of the texts may match",
    ],
)
def test_screen_includes(texts: list[str], expected: str, shown: bool) -> None:
    assert screen_includes(texts, expected) is shown
