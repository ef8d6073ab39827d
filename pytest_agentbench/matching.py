"""Expected strings and texts into match decisions: standalone matches and final-answer line rules.

Pure text rules shared by the audit (answer and screen checks) and preflight
(`startScreenIncludes`). No I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# "A word, then a colon": the key starts with a letter of any script so that times such as
# `12:30` are not mistaken for `KEY: value` lines.
_KEY_VALUE = re.compile(r"^\s*[^\W\d_]\w*\s*:", re.UNICODE)
_FENCE = re.compile(r"^\s*(```|~~~)")
_SPACES = re.compile(r"\s+")


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


def is_key_value(expected: str) -> bool:
    """Tell whether an expected answer string is a `KEY: value` line (a word, then a colon)."""
    return bool(_KEY_VALUE.match(expected))


def normalize_answer_line(line: str) -> str:
    """Reduce a line to what a `KEY: value` comparison looks at.

    Case, runs of spaces, spaces around the first colon, backticks and one trailing period
    are ignored; anything else (bold markers, bullets, extra words) still counts.
    """
    text = line.replace("`", "")
    text = _SPACES.sub(" ", text).strip()
    if text.endswith("."):
        text = text[:-1].rstrip()
    key, colon, value = text.partition(":")
    if colon:
        text = f"{key.rstrip()}:{value.lstrip()}"
    return text.casefold()


def last_nonblank_lines(reply: str, count: int) -> list[str]:
    """Return up to `count` last nonblank lines of a reply, code fence lines left out."""
    lines = [line for line in reply.splitlines() if line.strip() and not _FENCE.match(line)]
    return lines[-count:] if count > 0 else []


@dataclass(frozen=True)
class AnswerMatch:
    """One expected answer string judged against a reply."""

    expected: str
    passed: bool
    seen: str


def match_answer(reply: str | None, expected: Sequence[str]) -> list[AnswerMatch]:
    """Judge every `answerIncludes` entry against the agent's final reply.

    Plain strings must occur standalone anywhere in the reply, ignoring case. `KEY: value`
    strings must be the reply's last nonblank lines (code fences aside), one expected string
    per line, in the suite's order, each equal after `normalize_answer_line`: a different value,
    extra text on the line or a disclaimer after the lines fails.

    Args:
        reply: The final reply text; None when the agent gave none.
        expected: The suite's `verify.answerIncludes`, in order.

    Returns:
        One `AnswerMatch` per expected string, in the same order; `seen` is the reply's last lines.
    """
    key_values = [item for item in expected if is_key_value(item)]
    tail_size = max(len(key_values), 3)
    if reply is None or not reply.strip():
        seen = "(no final reply)"
        return [AnswerMatch(item, False, seen) for item in expected]
    seen = "\n".join(last_nonblank_lines(reply, tail_size))
    tail = last_nonblank_lines(reply, len(key_values))
    if len(tail) < len(key_values):
        tail = [""] * (len(key_values) - len(tail)) + tail
    key_value_position = {}
    for position, item in enumerate(key_values):
        key_value_position.setdefault(item, []).append(position)
    matches: list[AnswerMatch] = []
    for item in expected:
        if is_key_value(item):
            position = key_value_position[item].pop(0)
            passed = normalize_answer_line(tail[position]) == normalize_answer_line(item)
        else:
            passed = standalone_match(reply, item, ignore_case=True)
        matches.append(AnswerMatch(item, passed, seen))
    return matches


def screen_includes(texts: Iterable[str], expected: str) -> bool:
    """Tell whether one of the app's on-screen texts shows `expected` standalone, case-sensitively."""
    return any(standalone_match(text, expected, ignore_case=False) for text in texts)
