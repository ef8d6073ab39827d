"""A final reply and the suite's `answerIncludes` -> one match decision per expected string (pure).

Plain strings match standalone anywhere (`text.standalone_match`); `KEY: value` strings must be the
reply's last lines. The screen's rule lives beside the screen parser (`device/uiautomator.py`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_agentbench.text import standalone_match

# "A word, then a colon": the key starts with a letter of any script so that times such as
# `12:30` are not mistaken for `KEY: value` lines.
_KEY_VALUE = re.compile(r"^\s*[^\W\d_]\w*\s*:", re.UNICODE)
_FENCE = re.compile(r"^\s*(```|~~~)")
_SPACES = re.compile(r"\s+")


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
