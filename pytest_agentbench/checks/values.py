"""A suite's value matcher (`equals`, `contains`, `matches`, `digits`, `exists`, `inAnswer`, `token`) + a device value -> whether it holds, and a JSON path lookup.

Typed on purpose, as Android reads values: `equals: true` does not match the string "true" a
SharedPreferences file stored under `<string>`, and 1 is not True. Text sources (a `content`
query prints text) compare through `as_text`, so `equals: 1` matches the printed `1`.

A value random per run or per instance (a `{param}`, a run-time value, an operand read from the
device with `fromPrefs`) may only be matched whole (`equals`, `digits`, `inAnswer`) or as one
delimited `token` of a field no longer than MAX_TOKEN_FIELD: `contains` and `matches` would let a
flood of text (a de Bruijn sequence holds every six-digit code) match it without the work.
`random_value_problems` is that rule for the suite loader.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.checks.base import app_path, show
from pytest_agentbench.text import answer_key_values, normalize_answer_line, same_answer_value

__all__ = ["MATCHER_KEYS", "MAX_PHONE_DIGITS", "MAX_TOKEN_FIELD", "MAX_TOKEN_MEMBERS", "MIN_PHONE_DIGITS", "Matcher", "PrefRef",
           "RANDOM_VALUE_MATCHERS", "alternatives_matchers", "alternatives_problems", "as_text", "digits_of", "drawn_placeholder", "json_lookup",
           "is_coded", "matcher_problems", "mentions", "parse_matcher", "parse_matcher_at", "path_text", "random_value_problems",
           "same_value", "shape_pattern", "split_path", "token_verdict"]

MATCHER_KEYS = ("equals", "contains", "matches", "digits", "exists", "inAnswer", "token")
#: The matchers a value random per run or per instance may use: each takes a whole field, a phone
#: number's last digits, or one delimited token of a bounded field, so no flood of text matches it.
RANDOM_VALUE_MATCHERS = ("equals", "token", "digits", "inAnswer", "exists")
#: Phone numbers compare by their last digits; fewer than this many would match almost anything.
MIN_PHONE_DIGITS = 4
#: E.164: no phone number has more digits, so a longer "number" is a flood of digits, not a number.
MAX_PHONE_DIGITS = 15
#: The longest text a `token` is looked for in (a note, a label): a longer field is a flood.
MAX_TOKEN_FIELD = 256
#: The most members a list or set a `token` is looked for in may have.
MAX_TOKEN_MEMBERS = 32
# Run-time placeholders whose values differ per run (the run directory) or per device; {packageName} does not.
_RUN_TIME_RANDOM = ("deviceSerial", "runDirectory")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


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


def alternatives_matchers(where: str, entry: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The matchers of an entry written `key`/`path` + matcher, or `anyOf` of such: (key path, {op: operand})."""
    items = [(f"{where}.anyOf[{index}]", item) for index, item in enumerate(entry.get("anyOf") or [])
             if isinstance(item, Mapping)] if "anyOf" in entry else [(where, entry)]
    return [(at, {key: item[key]}) for at, item in items for key in MATCHER_KEYS if key in item]


def drawn_placeholder(value: Any, names: tuple[str, ...]) -> str | None:
    """The first placeholder in a string (or a list of them) whose value is random: drawn by the params (`names`) or known at run time only."""
    items = value if isinstance(value, list) else [value]
    texts = [item for item in items if isinstance(item, str)]
    return next((name for text in texts for name in _PLACEHOLDER.findall(text) if name in names or name in _RUN_TIME_RANDOM), None)


def _random_operand(operand: Any, names: tuple[str, ...]) -> str | None:
    """What makes a matcher's operand random, as a phrase, or None for a value the suite fixes."""
    if isinstance(operand, Mapping) and "fromPrefs" in operand:
        ref = operand["fromPrefs"]
        key = ref.get("key", "?") if isinstance(ref, Mapping) else "?"
        return f"its operand is read from the device (fromPrefs {key}), a value random per run"
    drawn = drawn_placeholder(operand, names)
    return f"its operand holds {{{drawn}}}, a value random per instance" if drawn else None


def random_value_problems(where: str, raw: Any, names: tuple[str, ...]) -> list[str]:
    """A matcher whose operand is random per run or per instance but may match part of a field (the loader's rule).

    Args:
        where: The matcher's key path (`verify.device[1].match.data1`).
        raw: The matcher as written (a bare value means equals).
        names: The placeholders the suite's params draw.

    Returns:
        One sentence when the matcher is `contains` or `matches` with a random operand, else none.
    """
    if not isinstance(raw, Mapping) or len(raw) != 1:
        return []
    (op, operand), = raw.items()
    if op in RANDOM_VALUE_MATCHERS or op not in MATCHER_KEYS:
        return []
    why = _random_operand(operand, names)
    if why is None:
        return []
    flood = ("a flood of text contains it: a de Bruijn sequence holds every six-digit code" if op == "contains"
             else "a pattern searched in a field also finds it in text written to hold every value")
    return [f"{where}.{op}: {why}, so it must match a whole field or one delimited token: "
            f"use equals, token, digits or inAnswer, not {op} ({flood})"]


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

    Written `{token: {fromPrefs: {package: P, file: F, key: K}}}`; the check reads the file in
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
    #: The operand is random per run or per instance (a drawn `{param}`, or read from the device with
    #: `fromPrefs`): the check also looks for other candidates of it over records (`checks.records`).
    random: bool = False
    #: The values the instance could have drawn in its place, as a regular expression over a whole
    #: value (`suite.spaces`); None for an operand read from the device or fixed by the suite.
    space: str | None = None

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
        if self.op == "token":
            operand = self.value.describe() if isinstance(self.value, PrefRef) else show(self.value)
            return f"has {operand} as one token"
        if isinstance(self.value, PrefRef):
            return f"{self.op} {self.value.describe()}"
        return f"{self.op} {show(self.value)}"

    def test(self, present: bool, value: Any = None, *, text: bool = False, answer: str | None = None) -> bool:
        """Whether the matcher holds for a value (`judge` without the sentence)."""
        return self.judge(present, value, text=text, answer=answer)[0]

    def judge(self, present: bool, value: Any = None, *, text: bool = False,
              answer: str | None = None) -> tuple[bool, str | None]:
        """Whether the matcher holds for a value, and the sentence when a field is refused outright.

        Args:
            present: Whether the value exists at all (a missing key, a NULL column is absent).
            value: The value (a Python value of the source's type).
            text: The source prints text (a content query), so numbers and booleans compare as text.
            answer: The agent's final answer (for `inAnswer`: a value read from the device, such as
                a code random per run, must be the whole value of one of the answer's closing
                `KEY: value` lines, see `in_answer`).

        Returns:
            (holds, why): an absent value holds only `exists: false`; `why` is a sentence when the
            field cannot hold a value random per run at all (a `token` field over MAX_TOKEN_FIELD
            characters or listing other candidates, a `digits` field over MAX_PHONE_DIGITS digits),
            else None.
        """
        if self.op == "exists":
            return present == bool(self.value), None
        if not present or value is None:
            return False, None
        if self.op == "equals":
            return (as_text(self.value) == str(value) if text else same_value(self.value, value)), None
        if self.op == "contains":
            if isinstance(value, str):
                return as_text(self.value) in value, None
            if isinstance(value, (list, tuple, set, frozenset)):
                return any(same_value(self.value, item) for item in value), None
            return False, None
        if self.op == "matches":
            return re.search(str(self.value), value if isinstance(value, str) else as_text(value)) is not None, None
        if self.op == "digits":
            wanted, held = digits_of(str(self.value)), digits_of(str(value))
            if len(held) > MAX_PHONE_DIGITS:
                return False, f"the field holds {len(held):,} digits; a phone number has at most {MAX_PHONE_DIGITS}"
            return bool(wanted) and held.endswith(wanted), None
        if self.op == "inAnswer":
            return in_answer(value if isinstance(value, str) else as_text(value), answer) is None, None
        if self.op == "token":
            return token_verdict(as_text(self.value), value, self.space)
        raise ValueError(f"unknown matcher {self.op!r}; expected one of {', '.join(MATCHER_KEYS)}")


def shape_pattern(token: str) -> str:
    """What a value like this one looks like, as a regular expression: a digit where it has a digit, a letter where it has a letter, the rest as is."""
    return "".join("[0-9]" if char.isdigit() else "[^\\W\\d_]" if char.isalpha() else re.escape(char) for char in token)


def is_coded(value: str) -> bool:
    """Whether a value holds a digit (a code, a number, an id): only such a value has candidates of its shape."""
    return any(char.isdigit() for char in value)


@functools.lru_cache(maxsize=256)
def _candidate_pattern(wanted: str, space: str | None) -> re.Pattern[str] | None:
    """The values a token is told apart from: its shape (a code only) and the values its instance could have drawn."""
    parts = ([shape_pattern(wanted)] if is_coded(wanted) else []) + ([space] if space else [])
    return re.compile(_DELIMITED.format("(?:" + "|".join(f"(?:{part})" for part in parts) + ")")) if parts else None


# A token stands alone: no letter or digit right before it or right after it.
_DELIMITED = r"(?<![^\W_]){}(?![^\W_])"


def token_verdict(wanted: str, value: Any, space: str | None = None) -> tuple[bool, str | None]:
    """Whether `wanted` is one delimited token of a field read from the device, and the sentence when the field is refused.

    A string field holds it with no letter or digit on either side, is at most MAX_TOKEN_FIELD
    characters, and holds no other candidate: when `wanted` holds a digit (a code), no other token
    of its shape (a digit where it has a digit, a letter where it has a letter), and with a `space`
    (the values its instance could have drawn, `suite.spaces`), no other of those: a list of
    candidates is not an answer. A list or set holds it as a member, has at most MAX_TOKEN_MEMBERS
    members, and no other candidate member.

    Returns:
        (holds, refusal): `refusal` says why the field is a flood or a list of candidates; it is
        None when the token is there, or simply absent.
    """
    wanted = wanted.strip()
    candidate = _candidate_pattern(wanted, space)
    if isinstance(value, (list, tuple, set, frozenset)):
        members = [item.strip() if isinstance(item, str) else as_text(item) for item in value]
        if len(members) > MAX_TOKEN_MEMBERS:
            return False, (f"the list has {len(members):,} members, over the {MAX_TOKEN_MEMBERS} a value random per run is "
                           f"looked for among (a flood of members holds every value)")
        if not wanted or wanted not in members:
            return False, None
        others = sorted({member for member in members if member != wanted and candidate and candidate.fullmatch(member)})
        return (False, _candidates(others)) if others else (True, None)
    field = value if isinstance(value, str) else as_text(value)
    if len(field) > MAX_TOKEN_FIELD:
        return False, (f"the field is {len(field):,} characters long, over the {MAX_TOKEN_FIELD} a value random per run is "
                       f"looked for in (a flood of text holds every code)")
    if not wanted or not re.search(_DELIMITED.format(re.escape(wanted)), field):
        return False, None
    others = sorted({found.group(0) for found in (candidate.finditer(field) if candidate else ()) if found.group(0) != wanted})
    return (False, _candidates(others)) if others else (True, None)


def _candidates(others: list[str]) -> str:
    listed = ", ".join(repr(other) for other in others[:3]) + (", ..." if len(others) > 3 else "")
    return (f"the field also holds {len(others)} other value{'s' if len(others) != 1 else ''} shaped like it ({listed}): "
            "a list of candidates is not an answer")


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


def parse_matcher(raw: Any, space: str | None = None) -> Matcher:
    """A suite's matcher: a bare value means `equals`, a mapping has exactly one MATCHER_KEYS key.

    `space` is given for an operand that holds a drawn `{param}` (the values it could have been,
    `suite.spaces`); an operand read from the device (`fromPrefs`) is random without one.

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
            return Matcher(keys[0], PrefRef(ref["package"], ref["file"], ref["key"]), random=True)
        return Matcher(keys[0], operand, random=space is not None, space=space)
    return Matcher("equals", raw, random=space is not None, space=space)


def parse_matcher_at(raw: Any, spaces: Mapping[str, str] | None, where: str) -> Matcher:
    """`parse_matcher` with the space of the operand at `where`, its key path in the entry (`.match.data1`; `suite.spaces`)."""
    spaces = spaces or {}
    op = next(iter(raw)) if isinstance(raw, Mapping) and len(raw) == 1 else None
    return parse_matcher(raw, (spaces.get(f"{where}.{op}") if op else None) or spaces.get(where))


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
