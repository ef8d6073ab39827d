"""A random value + the records a check looks through -> the other candidates those records hold, and the sentence of a flood over records.

The per-field rule (`values.token_verdict`, the `digits` bound) keeps one field from holding every
code. A flood can also be split over records: 1,000,000 contacts each with one code in its note
pass every per-field rule, and one of them holds this run's code. So a check whose matcher has a
random operand (`Matcher.random`) also looks at its *candidate records*, the records where every
other part of the check holds (the other matchers, the expected row's other cells, the step's other
fields, the rest of a path), and fails when more than one of them holds a *candidate value*, the
wanted one among them and another beside it: a value the instance could have drawn in its place
(`Matcher.space`) or, for a value with a digit, a value of its shape (`values.shape_pattern`). The
same value twice is not another candidate; without the wanted value the check fails on its own.

Each kind says what its records are and when the rest of the check holds; this module says which
values are candidates and words the failure. Nothing here does I/O.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.checks.values import (
    MAX_PHONE_DIGITS,
    Matcher,
    as_text,
    digits_of,
    is_coded,
    shape_pattern,
)

__all__ = ["RecordFlood", "candidate_values", "first_flood", "flood_over", "is_candidate", "wanted_text"]

# A token stands alone: no letter or digit right before it or right after it (as `values` reads a token).
_DELIMITED = r"(?<![^\W_])(?:{})(?![^\W_])"
_SHOWN_OTHERS = 3


def wanted_text(matcher: Matcher, wanted: Any) -> str:
    """The wanted value as records are compared with it: a phone number's digits, else its text."""
    return digits_of(str(wanted)) if matcher.op == "digits" else as_text(wanted).strip()


@functools.lru_cache(maxsize=256)
def _whole(wanted: str, space: str | None) -> re.Pattern[str] | None:
    """A whole candidate value: its shape (a value with a digit) or one its instance could have drawn."""
    parts = ([shape_pattern(wanted)] if is_coded(wanted) else []) + ([space] if space else [])
    return re.compile("|".join(f"(?:{part})" for part in parts)) if parts else None


@functools.lru_cache(maxsize=256)
def _delimited(wanted: str, space: str | None) -> re.Pattern[str] | None:
    """A candidate token inside a text: a whole candidate with no letter or digit on either side."""
    whole = _whole(wanted, space)
    return re.compile(_DELIMITED.format(whole.pattern)) if whole else None


def is_candidate(text: str, wanted: str, space: str | None) -> bool:
    """Whether a whole value could have been the wanted one: one the instance could have drawn, or one of its shape (a value with a digit)."""
    whole = _whole(wanted, space)
    return bool(whole and whole.fullmatch(text))


def candidate_values(matcher: Matcher, wanted: Any, value: Any) -> list[str]:
    """The candidate values one record's field holds for a random matcher (the wanted one among them, if it is there).

    Args:
        matcher: The matcher (its `op` says what it compares: a whole field, a token, a phone number's digits).
        wanted: Its operand, resolved (a value read with `fromPrefs` filled in).
        value: The record's field (None: absent).

    Returns:
        `equals`: the whole field when it is a candidate; `token`: each delimited token (or member)
        that is; `digits`: the phone number's last digits, as many as the wanted number has, when
        they are; other matchers compare no value: none.
    """
    if value is None:
        return []
    target = wanted_text(matcher, wanted)
    if not target:
        return []
    if matcher.op == "equals":
        if isinstance(value, (list, tuple, set, frozenset, dict)):
            return []
        text = as_text(value)
        return [text] if is_candidate(text, target, matcher.space) else []
    if matcher.op == "token":
        if isinstance(value, (list, tuple, set, frozenset)):
            members = [item.strip() if isinstance(item, str) else as_text(item) for item in value]
            return [member for member in members if is_candidate(member, target, matcher.space)]
        found = _delimited(target, matcher.space)
        return [hit.group(0) for hit in found.finditer(value if isinstance(value, str) else as_text(value))] if found else []
    if matcher.op == "digits":
        held = digits_of(str(value))
        if not len(target) <= len(held) <= MAX_PHONE_DIGITS:
            return []
        tail = held[-len(target):]
        # A `digits` operand's space is over its digits only (`suite.spaces` drops the rest).
        return [tail] if is_candidate(tail, target, matcher.space) else []
    return []


@dataclass(frozen=True)
class RecordFlood:
    """Records that hold candidate values of one random matcher other than the wanted one.

    Attributes:
        label: What the matcher compares (`data1`, `task`, a cell, a key).
        holders: How many candidate records hold a candidate value (the wanted one included).
        others: The distinct candidate values other than the wanted one, sorted.
        scope: What one record is called (`new row`, `row`, `new event`, `key`).
    """

    label: str
    holders: int
    others: tuple[str, ...]
    scope: str

    def sentence(self) -> str:
        plural = "s" if self.holders != 1 else ""
        shown = ", ".join(repr(other) for other in self.others[:_SHOWN_OTHERS]) + (", ..." if len(self.others) > _SHOWN_OTHERS else "")
        return (f"{self.holders:,} {self.scope}{plural} held candidate values of {self.label} ({len(self.others):,} other than "
                f"the one wanted: {shown}): a flood of records holds every value, so the value must be the only one of its "
                f"kind among the {self.scope}s the check looks at")


def flood_over(values: Iterable[Any], matcher: Matcher, wanted: Any, label: str, scope: str) -> RecordFlood | None:
    """The flood, if any, in the fields of the candidate records of one random matcher.

    Args:
        values: The matcher's field in each candidate record (the records where the rest of the check holds).
        matcher: The random matcher.
        wanted: Its operand, resolved.
        label: What it compares, for the sentence.
        scope: What one record is called, for the sentence.

    Returns:
        The flood when the candidate records hold the wanted value and another candidate, in more
        than one record; None otherwise (without the wanted value the check fails on its own: a
        wrong value, not a flood; candidates in one field are the per-field rule's, `token_verdict`).
    """
    target = wanted_text(matcher, wanted)
    holders, others, seen = 0, set(), False
    for value in values:
        found = candidate_values(matcher, wanted, value)
        if found:
            holders += 1
            seen = seen or target in found
            others.update(text for text in found if text != target)
    return RecordFlood(label, holders, tuple(sorted(others)), scope) if others and seen and holders > 1 else None


def first_flood(floods: Iterable[RecordFlood | None]) -> RecordFlood | None:
    """The first flood found (a check names one, the one its matchers list first)."""
    return next((flood for flood in floods if flood is not None), None)
