"""A suite's `verify.device`, `cleanup` and `prove` blocks (schema-valid) -> the problems a schema cannot say.

Each problem names the key path, the value and what was expected, like the schema's own. Parts
are checked only when their shape is right (the schema reports the rest).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pytest_agentbench.suite.capture import capture_problems

MATCHER_KEYS = ("equals", "contains", "matches", "digits", "exists", "inAnswer")
#: Phone numbers compare by their last digits; fewer than this many would match almost anything.
MIN_PHONE_DIGITS = 4
#: Names of the checks that are not device checks, as a prove fail scenario may name them.
OTHER_CHECK_NAMES = ("answer", "screen")


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


def _alternatives(where: str, entry: Mapping[str, Any], *subjects: str) -> list[str]:
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


def _given(entry: Mapping[str, Any], subjects: tuple[str, ...]) -> str:
    return next(subject for subject in subjects if subject in entry)


def _mentions(value: Any, key: str) -> bool:
    if isinstance(value, Mapping):
        return key in value or any(_mentions(child, key) for child in value.values())
    if isinstance(value, list):
        return any(_mentions(child, key) for child in value)
    return False


def _check_problems(where: str, entry: Mapping[str, Any]) -> list[str]:
    kind = entry.get("kind")
    if kind != "content" and _mentions(entry, "fromPrefs"):
        return [f"{where}: fromPrefs (an operand read from the device) works in a content check's match only, not in {kind}"]
    if kind == "sharedPreferences":
        # A list's items are compared as read; a stored-type constraint applies to a single key only.
        typed_lists = [f"{where}{at}: type applies to a key, not to a list (its items are compared as read)"
                       for at, item in [("", entry), *((f".anyOf[{i}]", x) for i, x in enumerate(entry.get("anyOf") or ()))]
                       if isinstance(item, Mapping) and "list" in item and "type" in item]
        return typed_lists or _alternatives(where, entry, "key", "list")
    if kind == "jsonFile":
        return _alternatives(where, entry, "path")
    if kind == "sqlite":
        problems = []
        given = [key for key in ("rows", "includes", "count") if key in entry]
        if len(given) != 1:
            problems.append(f"{where}: expected exactly one of rows, includes or count, got {', '.join(given) or 'none'}")
        if ("query" in entry) == ("schemas" in entry):
            problems.append(f"{where}: expected exactly one of query or schemas (one query per known schema)")
        queries = [(f"{where}.query", entry["query"])] if "query" in entry else [
            (f"{where}.schemas[{index}].query", schema.get("query", ""))
            for index, schema in enumerate(entry.get("schemas") or []) if isinstance(schema, Mapping)]
        for key, query in queries:
            if not re.match(r"\s*(SELECT|WITH)\b", query, re.IGNORECASE):
                problems.append(f"{key}: expected one SELECT (or WITH ... SELECT) statement, got {query[:80]!r}")
        return problems
    if kind == "content":
        problems = []
        projection = entry.get("projection") or []
        for column, raw in (entry.get("match") or {}).items():
            if column not in projection:
                problems.append(f"{where}.match.{column}: expected a column of the projection ({', '.join(projection)}), "
                                f"got {column!r}")
            problems += matcher_problems(f"{where}.match.{column}", raw)
        return problems
    if kind == "eventLog":
        problems = []
        for index, step in enumerate(entry.get("sequence") or []):
            for field, raw in step.items():
                problems += matcher_problems(f"{where}.sequence[{index}].{field}", raw)
        return problems
    if kind == "report":
        problems = []
        names: dict[str, int] = {}
        for index, bug in enumerate(entry.get("bugs") or []):
            if bug["name"] in names:
                problems.append(f"{where}.bugs[{index}].name: expected a name no other bug has, got {bug['name']!r} "
                                f"(also bugs[{names[bug['name']]}])")
            names.setdefault(bug["name"], index)
            for number, pattern in enumerate(bug.get("patterns") or []):
                try:
                    re.compile(pattern)
                except re.error as exc:
                    problems.append(f"{where}.bugs[{index}].patterns[{number}]: expected a regular expression, "
                                    f"got {pattern!r} ({exc})")
        if isinstance(entry.get("minFound"), int) and entry["minFound"] > len(entry.get("bugs") or []):
            problems.append(f"{where}.minFound: expected at most the number of bugs ({len(entry['bugs'])}), got {entry['minFound']}")
        return problems
    return []


def _steps_problems(where: str, steps: list[Any]) -> list[str]:
    problems = []
    for index, step in enumerate(steps):
        kinds = [key for key in ("tool", "adb", "seed", "wait") if key in step]
        at = f"{where}[{index}]"
        if len(kinds) != 1:
            problems.append(f"{at}: expected exactly one of tool, adb, seed or wait, got {', '.join(kinds) or 'none'}")
        elif kinds != ["tool"] and ("args" in step or "expect_error" in step):
            problems.append(f"{at}: args and expect_error belong to a tool step, not to {kinds[0]}")
        elif kinds[0] in ("seed", "wait") and "capture" in step:
            problems.append(f"{at}: capture keeps a value from a tool or adb step's output, not from {kinds[0]}")
        capture = step.get("capture")
        if isinstance(capture, Mapping) and isinstance(capture.get("pattern"), str):
            # The schema checks the shape; only the regular expression is left to compile.
            problems += [problem for problem in capture_problems(capture, f"{at}.capture") if ".capture.pattern:" in problem]
    return problems


def device_problems(data: Mapping[str, Any]) -> list[str]:
    """Problems in `verify.device`, `verify.screenIncludes` (the oracle rule), `cleanup` and `prove`.

    Args:
        data: The parsed suite (already checked against the schema).

    Returns:
        One sentence per problem.
    """
    problems: list[str] = []
    verify = data.get("verify")
    if not isinstance(verify, Mapping):
        return problems
    entries = [entry for entry in verify.get("device") or [] if isinstance(entry, Mapping)]
    # A suite needs an oracle that is not the answer: the screen, or a check of device state.
    if "screenIncludes" not in verify and not any(entry.get("kind") not in (None, "report") for entry in entries):
        problems.append("verify.screenIncludes: required key is missing (or add a verify.device check that reads the device)")
    names: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = f"verify.device[{index}]"
        name = entry.get("name")
        if isinstance(name, str):
            if name in names:
                problems.append(f"{where}.name: expected a name no other check has, got {name!r} (also verify.device[{names[name]}])")
            elif name in OTHER_CHECK_NAMES:
                problems.append(f"{where}.name: expected a name other than {', '.join(OTHER_CHECK_NAMES)}, got {name!r}")
            names.setdefault(name, index)
        problems += _shaped(lambda: _check_problems(where, entry))
    prove = data.get("prove")
    if isinstance(prove, Mapping):
        problems += _shaped(lambda: _prove_problems(prove, names, verify))
    return problems


def _shaped(rule: Any) -> list[str]:
    # The schema has already reported a part of the wrong shape; a rule that trips over it adds nothing.
    try:
        return rule()
    except (KeyError, TypeError, AttributeError):
        return []


def _prove_problems(prove: Mapping[str, Any], names: Mapping[str, int], verify: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    known = set(names)
    known |= {"answer"} if verify.get("answerIncludes") else set()
    known |= {"screen"} if verify.get("screenIncludes") else set()
    if isinstance(prove.get("pass"), Mapping):
        problems += _steps_problems("prove.pass.steps", prove["pass"].get("steps") or [])
    seen: dict[str, int] = {}
    for index, scenario in enumerate(prove.get("fail") or []):
        where = f"prove.fail[{index}]"
        if scenario["name"] in seen or scenario["name"] in ("pass", "fresh"):
            problems.append(f"{where}.name: expected a name no other scenario has (nor pass or fresh), got {scenario['name']!r}")
        seen.setdefault(scenario["name"], index)
        if scenario["check"] not in known:
            problems.append(f"{where}.check: expected the name of one of the suite's checks "
                            f"({', '.join(sorted(known))}), got {scenario['check']!r}")
        problems += _steps_problems(f"{where}.steps", scenario.get("steps") or [])
    return problems
