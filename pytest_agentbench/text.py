"""Expected strings and texts -> standalone-match decisions (a needle that does not run on into a letter or digit).

Pure and shared: the answer rules (`audit/matching.py`), the screen rules (`device/uiautomator.py`)
and preflight's start-screen check all match with it.
"""

from __future__ import annotations

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
