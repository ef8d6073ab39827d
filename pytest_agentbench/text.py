"""Expected strings and texts -> standalone-match decisions (a needle that does not run on into a letter or digit), and `KEY: value` answer lines -> normalised (key, value) pairs.

Pure and shared: the answer rules (`audit/matching.py`), the screen rules (`device/uiautomator.py`),
preflight's start-screen check and the device checks' `inAnswer` matcher (`checks/values.py`) all
match with it.
"""

from __future__ import annotations

import re
import unicodedata


def _is_word_char(char: str) -> bool:
    """A letter, digit or combining mark of any script (a mark continues the letter before it)."""
    return unicodedata.category(char)[0] in "LNM"


def _runs_on_before(text: str, start: int, first: str) -> bool:
    """Whether the text before `start` continues the needle's first character."""
    if start == 0 or not _is_word_char(first):
        return False
    before = text[start - 1]
    if _is_word_char(before):
        return True
    # `1.3` or `1,3`: a separator between digits continues the number.
    return first.isdigit() and before in ".," and start >= 2 and text[start - 2].isdigit()


def _runs_on_after(text: str, end: int, last: str) -> bool:
    """Whether the text from `end` continues the needle's last character."""
    if end >= len(text) or not _is_word_char(last):
        return False
    after = text[end]
    if _is_word_char(after):
        return True
    # `3.5` and `3,000`: a `.` or `,` followed by a digit continues the number.
    return last.isdigit() and after in ".," and end + 1 < len(text) and text[end + 1].isdigit()


def normalize_spaces(text: str) -> str:
    """Every run of Unicode whitespace as one ASCII space, stripped: what the observe text shows.

    Android 14+ formats times with U+202F (narrow no-break space) before AM/PM and many apps use
    U+00A0; the observe text shows them as plain spaces (`str.split` splits on every Unicode
    space), so a suite or an agent writing `12:30 PM` must match the real `12:30\u202fPM`. The
    screen oracle, `tapOn(text)` and the observe text all go through this one rule.
    """
    return " ".join(text.split())


def standalone_match(haystack: str, needle: str, *, ignore_case: bool) -> bool:
    """Tell whether `needle` occurs in `haystack` without running on into a letter or digit.

    A needle edge that is a letter or digit (any script) must not touch another letter, digit or
    combining mark, and a digit edge must not continue a number through `.` or `,` followed by a
    digit: `EXPECTED_COUNT: 3` does not match `EXPECTED_COUNT: 30`, `3.5` or `3,000`, and `完了`
    does not match inside `未完了`. Edges that are punctuation need no boundary.

    Args:
        haystack: The text searched.
        needle: The expected string; an empty needle never matches.
        ignore_case: Compare with Unicode case folding.

    Returns:
        True when at least one occurrence stands alone.
    """
    if not needle:
        return False
    if ignore_case:
        haystack, needle = haystack.casefold(), needle.casefold()
    first, last = needle[0], needle[-1]
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        if not _runs_on_before(haystack, start, first) and not _runs_on_after(haystack, end, last):
            return True
        start = haystack.find(needle, start + 1)
    return False


# "A word, then a colon": the key starts with a letter of any script so that times such as
# `12:30` are not mistaken for `KEY: value` lines.
_KEY_VALUE = re.compile(r"^\s*[^\W\d_]\w*\s*:", re.UNICODE)
_SPACES = re.compile(r"\s+")
# Markdown emphasis and inline code around a line or its parts: `**KEY:** value`, `_value_`.
_EMPHASIS = re.compile(r"[*`]+")
_UNDERSCORE_EMPHASIS = re.compile(r"(?<!\w)_+|_+(?!\w)")
_BULLET = re.compile(r"^(?:[-*+•]|\d+[.)])\s+")
# A value that is a phone number: digits with phone punctuation (an expected one starts with `+`).
_PHONE = re.compile(r"^\+?[\d\s().-]{7,}$")
_MIN_PHONE_DIGITS = 7
# An expected value that is a size: `800 x 800`, `800x800`, `800×800`, `800 X 800`.
_SIZE = re.compile(r"^(\d+)\s*[x×X]\s*(\d+)(?:\s*px)?$")


def is_key_value(expected: str) -> bool:
    """Tell whether an expected answer string is a `KEY: value` line (a word, then a colon)."""
    return bool(_KEY_VALUE.match(expected))


def normalize_answer_line(line: str) -> str:
    """Reduce a line to what a `KEY: value` comparison looks at.

    Case, runs of spaces (any Unicode space), spaces around the first colon, markdown emphasis
    and inline code (`**KEY:** value`, `` `KEY: value` ``, `_value_`), one leading list bullet
    and one trailing period are ignored; anything else (extra words, a second value) still counts.
    """
    text = _EMPHASIS.sub("", line)
    text = _UNDERSCORE_EMPHASIS.sub("", text)
    text = _SPACES.sub(" ", text).strip()
    text = _BULLET.sub("", text)
    if text.endswith("."):
        text = text[:-1].rstrip()
    key, colon, value = text.partition(":")
    if colon:
        text = f"{key.rstrip()}:{value.lstrip()}"
    return text.casefold()


def split_key_value(line: str) -> tuple[str, str] | None:
    """A normalised `KEY: value` line -> (key, value); None when the line is not one."""
    text = normalize_answer_line(line)
    if not is_key_value(text):
        return None
    key, _, value = text.partition(":")
    return key.strip(), value.strip()


def same_answer_value(expected: str, given: str) -> bool:
    """Whether a `KEY: value` line's value gives the expected value (both normalised).

    The expected value's form decides how: a phone number written with a leading `+`
    (`+15551230001`, at least 7 digits; a bare number such as `1234567` is a number) matches a value of phone characters whose digits end the same way, the shorter at least 7
    digits long (`+1 555-123-0001`, `555-123-0001`); a size (`800 x 800`) matches any of
    `800x800`, `800 x 800`, `800×800` (and a trailing `px`); anything else must be equal.
    """
    if expected == given:
        return True
    if expected.startswith("+") and _PHONE.match(expected) and sum(ch.isdigit() for ch in expected) >= _MIN_PHONE_DIGITS:
        if not _PHONE.match(given):
            return False
        want, got = "".join(ch for ch in expected if ch.isdigit()), "".join(ch for ch in given if ch.isdigit())
        shorter, longer = sorted((want, got), key=len)
        return len(shorter) >= _MIN_PHONE_DIGITS and longer.endswith(shorter)
    size = _SIZE.match(expected)
    if size:
        other = _SIZE.match(given)
        return other is not None and other.groups() == size.groups()
    return False


def key_value_line_matches(line: str, expected: str) -> bool:
    """Whether an answer line is the expected `KEY: value` line (same key, the value by `same_answer_value`)."""
    wanted, given = split_key_value(expected), split_key_value(line)
    if wanted is None or given is None:
        return False
    return wanted[0] == given[0] and same_answer_value(wanted[1], given[1])


_FENCE = re.compile(r"^\s*(```|~~~)")


def answer_key_values(reply: str) -> list[tuple[str, str]]:
    """The reply's closing `KEY: value` lines, (key, value) normalised, in order.

    They are the run of `KEY: value` lines at the reply's end (blank lines and code fences
    aside); a line of anything else ends the run.
    """
    lines = [line for line in reply.splitlines() if line.strip() and not _FENCE.match(line)]
    found: list[tuple[str, str]] = []
    for line in reversed(lines):
        pair = split_key_value(line)
        if pair is None:
            break
        found.append(pair)
    return found[::-1]
