"""A suite's value matcher (`equals`, `contains`, `matches`, `digits`, `exists`, `inAnswer`) + a value read from the device -> whether it holds, and a JSON path lookup.

Typed on purpose, as Android reads values: `equals: true` does not match the string "true" a
SharedPreferences file stored under `<string>`, and 1 is not True. Text sources (a `content`
query prints text) compare through `as_text`, so `equals: 1` matches the printed `1`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.checks.base import app_path, show
from pytest_agentbench.text import answer_key_values, normalize_answer_line, same_answer_value

__all__ = ["MATCHER_KEYS", "MIN_PHONE_DIGITS", "Matcher", "PrefRef", "alternatives_problems", "as_text", "digits_of", "json_lookup",
           "matcher_problems", "mentions", "parse_matcher", "path_text", "same_value", "split_path"]

MATCHER_KEYS = ("equals", "contains", "matches", "digits", "exists", "inAnswer")
#: Phone numbers compare by their last digits; fewer than this many would match almost anything.
MIN_PHONE_DIGITS = 4


# ----------------------------------------------------------------------------- a suite's matchers, validated
# The rules a schema cannot say, for the kinds that hold matchers; each problem names the key path,
# the value and what was expected, like the schema's own.


def matcher_problems(where: str, raw: Any) -> list[str]:
    """A bad regular expression or a phone number with too few digits in one matcher."""
    if not isinstance(raw, Mapping):
        return []
    problems = []
    pattern = raw.get("matches")
    if isinstance(pattern, str):
        try:
            re.compile(pattern)
        except re.error as exc:
            problems.append(f"{where}.matches: expected a regular expression, got {pattern!r} ({exc})")
    digits = raw.get("digits")
    if isinstance(digits, str) and sum(char.isdigit() for char in digits) < MIN_PHONE_DIGITS:
        problems.append(f"{where}.digits: expected a phone number with at least {MIN_PHONE_DIGITS} digits, got {digits!r}")
    return problems


def _one_matcher(where: str, entry: Mapping[str, Any], subject: str) -> list[str]:
    present = [key for key in MATCHER_KEYS if key in entry]
    if len(present) != 1:
        got = ", ".join(present) if present else "none"
        return [f"{where}: expected exactly one matcher ({', '.join(MATCHER_KEYS)}) for its {subject}, got {got}"]
    return matcher_problems(where, entry)


def _subject_problems(where: str, entry: Mapping[str, Any], subjects: tuple[str, ...]) -> list[str]:
    """Exactly one of the subjects (`key` or `list` of a preference; `path` of a JSON file)."""
    given = [subject for subject in subjects if subject in entry]
    if len(given) > 1:
        return [f"{where}: expected one of {' or '.join(subjects)}, got both"]
    if not given:
        wanted = " (or ".join(subjects) + ")" * (len(subjects) - 1)
        return [f"{where}.{subjects[0]}: required key is missing (expected {wanted})"]
    return []


def _given(entry: Mapping[str, Any], subjects: tuple[str, ...]) -> str:
    return next(subject for subject in subjects if subject in entry)


def alternatives_problems(where: str, entry: Mapping[str, Any], *subjects: str) -> list[str]:
    """`key`/`list`/`path` with one matcher, or `anyOf` of such, never both."""
    if "anyOf" in entry:
        extra = [key for key in (*subjects, "type", *MATCHER_KEYS) if key in entry]
        if extra:
            subject = next((key for key in subjects if key in entry), subjects[0])
            return [f"{where}: expected either anyOf or {subject} with a matcher, got both (anyOf and {', '.join(extra)})"]
        problems = []
        for index, item in enumerate(entry["anyOf"]):
            at = f"{where}.anyOf[{index}]"
            problems += _subject_problems(at, item, subjects) or _one_matcher(at, item, _given(item, subjects))
        return problems
    if not any(candidate in entry for candidate in subjects):
        return [f"{where}.{subjects[0]}: required key is missing (or give anyOf: a list of {{{subjects[0]}, matcher}})"]
    return _subject_problems(where, entry, subjects) or _one_matcher(where, entry, _given(entry, subjects))


def mentions(value: Any, key: str) -> bool:
    """Whether a key appears anywhere in a suite value (mappings and lists, at any depth)."""
    if isinstance(value, Mapping):
        return key in value or any(mentions(child, key) for child in value.values())
    if isinstance(value, list):
        return any(mentions(child, key) for child in value)
    return False


@dataclass(frozen=True)
class PrefRef:
    """A matcher's operand read from the device: a key of an app's SharedPreferences (a code random per run).

    Written `{contains: {fromPrefs: {package: P, file: F, key: K}}}`; the check reads the file in
    the same batch and compares with the value it holds after the run.
    """

    package: str
    file: str
    key: str

    @property
    def path(self) -> str:
        name = self.file if self.file.endswith(".xml") else self.file + ".xml"
        return app_path(self.package, f"shared_prefs/{name}")

    @property
    def ref_id(self) -> str:
        return f"{self.path}#{self.key}"

    def describe(self) -> str:
        return f"the {self.key} in {self.path}"


@dataclass(frozen=True)
class Matcher:
    """One test on one value: `op` is a MATCHER_KEYS entry, `value` its operand."""

    op: str
    value: Any

    def describe(self) -> str:
        """What the matcher wants, as a phrase (`equals true`, `has the digits …5551230001`)."""
        if self.op == "exists":
            return "is present" if self.value else "is absent"
        if self.op == "digits":
            return f"has a number ending in the digits {digits_of(str(self.value))}"
        if self.op == "matches":
            return f"matches /{self.value}/"
        if self.op == "inAnswer":
            return "is the value of a closing KEY: value line of the final answer"
        if isinstance(self.value, PrefRef):
            return f"{self.op} {self.value.describe()}"
        return f"{self.op} {show(self.value)}"

    def test(self, present: bool, value: Any = None, *, text: bool = False, answer: str | None = None) -> bool:
        """Whether the matcher holds for a value.

        Args:
            present: Whether the value exists at all (a missing key, a NULL column is absent).
            value: The value (a Python value of the source's type).
            text: The source prints text (a content query), so numbers and booleans compare as text.
            answer: The agent's final answer (for `inAnswer`: a value read from the device, such as
                a code random per run, must be the whole value of one of the answer's closing
                `KEY: value` lines, see `in_answer`).

        Returns:
            True when it holds; an absent value holds only `exists: false`.
        """
        if self.op == "exists":
            return present == bool(self.value)
        if not present or value is None:
            return False
        if self.op == "equals":
            return as_text(self.value) == str(value) if text else same_value(self.value, value)
        if self.op == "contains":
            if isinstance(value, str):
                return as_text(self.value) in value
            if isinstance(value, (list, tuple, set, frozenset)):
                return any(same_value(self.value, item) for item in value)
            return False
        if self.op == "matches":
            return re.search(str(self.value), value if isinstance(value, str) else as_text(value)) is not None
        if self.op == "digits":
            wanted = digits_of(str(self.value))
            return bool(wanted) and digits_of(str(value)).endswith(wanted)
        if self.op == "inAnswer":
            return in_answer(value if isinstance(value, str) else as_text(value), answer) is None
        raise ValueError(f"unknown matcher {self.op!r}; expected one of {', '.join(MATCHER_KEYS)}")


def in_answer(value: str, answer: str | None) -> str | None:
    """Why a device value is not the answer's (None when it is): the `inAnswer` rule.

    The value must be the whole value of one of the answer's closing `KEY: value` lines (the run
    of such lines that ends the answer, normalised as `answerIncludes` lines are), and no key may
    appear twice there. A value anywhere else in the text (a list of 900,000 candidate codes, a
    sentence) does not count.
    """
    wanted = value.strip()
    if not wanted:
        return "the value read from the device is empty"
    if not answer or not answer.strip():
        return "there is no final answer"
    pairs = answer_key_values(answer)
    if not pairs:
        return "the answer does not end with a KEY: value line"
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        return f"the answer's closing lines give {', '.join(repeated)} more than once"
    _, normalised = normalize_answer_line(f"x: {wanted}").split(":", 1)
    if any(same_answer_value(normalised.strip(), given) for _, given in pairs):
        return None
    return "no closing KEY: value line of the answer has it as its value (" + "; ".join(f"{k}: {v}" for k, v in pairs[:5]) + ")"


def parse_matcher(raw: Any) -> Matcher:
    """A suite's matcher: a bare value means `equals`, a mapping has exactly one MATCHER_KEYS key.

    Raises:
        ValueError: The mapping has no known key or several (the suite schema refuses these first).
    """
    if isinstance(raw, Mapping):
        keys = [key for key in raw if key in MATCHER_KEYS]
        if len(keys) != 1 or len(raw) != 1:
            raise ValueError(f"a matcher has exactly one of {', '.join(MATCHER_KEYS)}, got {show(raw)}")
        operand = raw[keys[0]]
        if isinstance(operand, Mapping) and "fromPrefs" in operand:
            ref = operand["fromPrefs"]
            return Matcher(keys[0], PrefRef(ref["package"], ref["file"], ref["key"]))
        return Matcher(keys[0], operand)
    return Matcher("equals", raw)


def digits_of(text: str) -> str:
    """Only the ASCII digits of a phone number (`+1 (555) 123-0001` -> `15551230001`)."""
    return "".join(char for char in text if "0" <= char <= "9")


def as_text(value: Any) -> str:
    """A suite value as a text source prints it: booleans as 1/0 (Android stores them as ints)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def same_value(expected: Any, actual: Any) -> bool:
    """Typed equality: booleans only equal booleans, numbers compare numerically, lists/sets by members."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return expected == actual
    if isinstance(expected, (list, tuple)) and isinstance(actual, (set, frozenset)):
        return len(expected) == len(actual) and all(any(same_value(e, a) for a in actual) for e in expected)
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(same_value(e, a) for e, a in zip(expected, actual))
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return expected.keys() == actual.keys() and all(same_value(expected[k], actual[k]) for k in expected)
    return type(expected) is type(actual) and expected == actual


def split_path(path: str | Sequence[str | int]) -> tuple[str | int, ...]:
    """A JSON path: `a.b.0.c` (dotted, as Chrome names its preferences) or a list of keys and indexes."""
    if isinstance(path, str):
        return tuple(int(part) if part.isdigit() else part for part in path.split("."))
    return tuple(path)


def json_lookup(document: Any, path: str | Sequence[str | int]) -> tuple[bool, Any]:
    """Follow a JSON path; returns (found, value)."""
    current = document
    for part in split_path(path):
        if isinstance(current, Mapping) and str(part) in current:
            current = current[str(part)]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
        else:
            return False, None
    return True, current


def path_text(path: str | Sequence[str | int]) -> str:
    return path if isinstance(path, str) else ".".join(str(part) for part in path)
