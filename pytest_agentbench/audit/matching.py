"""A final reply and the suite's `answerIncludes` -> one match decision per expected string (pure).

Plain strings match standalone anywhere (`text.standalone_match`); `KEY: value` strings must be the
reply's last lines, compared after `normalize_answer_line` (case, spacing, markdown emphasis) and,
when the expected value is a phone number or a size, by its form (`text.same_answer_value`). A reply longer
than `MAX_ANSWER_CHARS` is judged by nothing (`answer_size_problem`). The screen's rule lives
beside the screen parser (`device/uiautomator.py`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_agentbench.text import (
    answer_key_values,
    is_key_value,
    key_value_line_matches,
    normalize_answer_line,
    same_answer_value,
    split_key_value,
    standalone_match,
)

__all__ = ["MAX_ANSWER_CHARS", "AnswerMatch", "answer_key_values", "answer_size_problem", "is_key_value",
           "key_value_line_matches", "last_nonblank_lines", "match_answer", "normalize_answer_line",
           "same_answer_value", "split_key_value", "standalone_match"]

_FENCE = re.compile(r"^\s*(```|~~~)")

#: A final reply longer than this is not judged: every check that reads the answer fails.
#: Long enough for any report the suites ask for; far too short for a dump of guesses.
MAX_ANSWER_CHARS = 8000


def answer_size_problem(reply: str | None) -> str | None:
    """Why a final reply is too long to judge (None when it is not): over `MAX_ANSWER_CHARS`."""
    if reply is not None and len(reply) > MAX_ANSWER_CHARS:
        return (f"the final answer is {len(reply):,} characters, over the {MAX_ANSWER_CHARS:,}-character limit "
                "(an answer that lists many candidates is not an answer)")
    return None


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
            passed = key_value_line_matches(tail[position], item)
        else:
            passed = standalone_match(reply, item, ignore_case=True)
        matches.append(AnswerMatch(item, passed, seen))
    return matches
