"""A suite's `verify.device`, `cleanup` and `prove` blocks (schema-valid) -> the problems a schema cannot say.

Each problem names the key path, the value and what was expected, like the schema's own. Parts
are checked only when their shape is right (the schema reports the rest). A device check's own
rules live with its kind (`checks.<kind>.problems`); here are the rules across entries (unique
names, an oracle that is not the answer, a value random per run or per instance matched only
whole or as one token: `checks.values.random_value_problems`, and never where it would choose the
records a check sees: each kind's `random_refusals`) and those of `prove`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_agentbench.checks import KINDS
from pytest_agentbench.checks.values import drawn_placeholder, mentions, random_value_problems
from pytest_agentbench.suite.capture import capture_problems
from pytest_agentbench.suite.params import value_names

#: Names of the checks that are not device checks, as a prove fail scenario may name them.
OTHER_CHECK_NAMES = ("answer", "screen")


def _check_problems(where: str, entry: Mapping[str, Any], drawn: tuple[str, ...]) -> list[str]:
    """One `verify.device` entry: the rules every kind shares, then its kind's own (`checks.<kind>.problems`).

    `drawn` are the placeholders the suite's params draw: a matcher whose operand holds one (or is
    read from the device) may not be `contains` or `matches`, which a flood of text satisfies.
    """
    kind = entry.get("kind")
    module = KINDS.get(kind)
    if module is None:
        return []  # the schema names the kinds
    if not getattr(module, "OPERANDS_FROM_PREFS", False) and mentions(entry, "fromPrefs"):
        return [f"{where}: fromPrefs (an operand read from the device) works in a content check's match only, not in {kind}"]
    found = module.problems(entry, where)
    for at, raw in getattr(module, "matchers", lambda _entry, _where: [])(entry, where):
        found += random_value_problems(at, raw, drawn)
    # A random value that chooses the records the check sees hides its other candidates (`checks.records`).
    for at, value, why in getattr(module, "random_refusals", lambda _entry, _where: [])(entry, where):
        name = drawn_placeholder(value, drawn)
        if name:
            found.append(f"{at}: it holds {{{name}}}, a value random per instance, but {why}")
    return found


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
    declared = data.get("params")
    drawn = value_names(declared) if isinstance(declared, Mapping) else ()
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
        problems += _shaped(lambda: _check_problems(where, entry, drawn))
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
