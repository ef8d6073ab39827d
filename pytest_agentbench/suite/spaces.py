"""A suite's ``params`` declaration + its `verify.device` templates -> for each string holding a drawn `{param}`, a regular expression of every value it could have been filled with.

A check that looks for a drawn value among many records (`checks.records`) fails when the records
also hold another value the instance could have drawn in its place: a contact named `Depot` beside
`Courier`, a thread muted beside the drawn one. That needs the values the template could have
taken, which only the declaration knows; the instance's filled checks get them as one regular
expression per key path (`device_spaces`), over a whole value:

* ``choice``: each choice (a record choice: each record's field, its own `{param}`s expanded);
* ``word``: each word of WORDS, in the param's case;
* ``code``: its pattern's classes (``#`` a digit, ...) or its alphabet, its length;
* ``integer``: each integer from min to max (over 1,000 of them: any integer of at most as many digits).

A template's literal text stays as written; a run-time placeholder (`{deviceSerial}`) is not drawn
and stays literal. A `digits` matcher compares a phone number's digits only, so its expression is
over digits: literal non-digits dropped, each value's digits kept.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from pytest_agentbench.suite.params import PLACEHOLDER_RE, WORDS, _pattern_slots, _record_fields

__all__ = ["device_spaces", "entry_spaces", "param_spaces", "value_space"]

# An integer param with more values than this is "any integer of its length", not a list.
_LISTED_INTEGERS = 1000


def _either(options: list[str]) -> str:
    unique = list(dict.fromkeys(options))
    return unique[0] if len(unique) == 1 else "(?:" + "|".join(unique) + ")"


def _digits(text: str) -> str:
    return "".join(char for char in text if "0" <= char <= "9")


def _literal(text: str, digits: bool) -> str:
    return re.escape(_digits(text) if digits else text)


def _class(alphabet: str, digits: bool) -> str | None:
    chars = _digits(alphabet) if digits else alphabet
    if not chars:
        return None
    named = {string.digits: "[0-9]", string.ascii_uppercase: "[A-Z]", string.ascii_lowercase: "[a-z]"}
    if chars in named:
        return named[chars]
    return re.escape(chars) if len(chars) == 1 else "[" + "".join(re.escape(char) for char in chars) + "]"


def _spec_space(spec: Mapping[str, Any], digits: bool) -> str:
    """The values one plain (not record) param can draw, as a regular expression over a whole value."""
    kind = spec["type"]
    if kind == "choice":
        return _either([_literal(str(value), digits) for value in spec["values"]])
    if kind == "integer":
        low, high = spec["min"], spec["max"]
        if high - low < _LISTED_INTEGERS:
            return _either([_literal(str(number), digits) for number in range(low, high + 1)])
        width = max(len(str(abs(low))), len(str(abs(high))))
        return f"[0-9]{{1,{width}}}" if digits else f"-?[0-9]{{1,{width}}}"
    if kind == "word":
        case = spec.get("case", "lower")
        words = [word.upper() if case == "upper" else word.title() if case == "title" else word for word in WORDS]
        return "" if digits else _either([re.escape(word) for word in words])
    if "pattern" in spec:
        slots = _pattern_slots(spec["pattern"]) or []
        # A slot is a class (several characters) or one literal character.
        parts = [_class(slot, digits) if len(slot) > 1 else _literal(slot, digits) for slot in slots]
        return "".join(part for part in parts if part)
    alphabet = _class(spec["alphabet"], digits)
    return f"{alphabet}{{{spec['length']}}}" if alphabet else ""


def param_spaces(declaration: Mapping[str, Any] | None, *, digits: bool = False) -> dict[str, str]:
    """Placeholder name -> the values it can be filled with (a record choice gives one per field).

    A record's field may name a plain param (`first: "{pinNumber}"`), so its values are expanded
    with that param's space.
    """
    plain: dict[str, str] = {}
    records: dict[str, list[Any]] = {}
    for name, spec in (declaration or {}).items():
        fields = _record_fields(spec) if isinstance(spec, Mapping) else []
        if fields:
            for field in fields:
                records.setdefault(field, []).extend(record.get(field) for record in spec["values"])
        elif isinstance(spec, Mapping):
            plain[name] = _spec_space(spec, digits)
    spaces = dict(plain)
    for field, values in records.items():
        spaces[field] = _either([_template_space(str(value), plain, digits) for value in values])
    return spaces


def _template_space(template: str, spaces: Mapping[str, str], digits: bool) -> str:
    parts, last = [], 0
    for placeholder in PLACEHOLDER_RE.finditer(template):
        parts.append(_literal(template[last:placeholder.start()], digits))
        name = placeholder.group(1)
        parts.append(f"(?:{spaces[name]})" if name in spaces else _literal(placeholder.group(0), digits))
        last = placeholder.end()
    parts.append(_literal(template[last:], digits))
    return "".join(parts)


def value_space(template: str, declaration: Mapping[str, Any] | None, *, digits: bool = False) -> str | None:
    """Every value a template string can be filled with, as a regular expression over a whole value; None when it holds no drawn placeholder.

    Args:
        template: A string of a suite as written (`"5552{exchange}{line}"`, `"https://{site}/"`).
        declaration: The suite's `params`.
        digits: The string is a `digits` operand: only digits count.
    """
    spaces = param_spaces(declaration, digits=digits)
    if not any(match.group(1) in spaces for match in PLACEHOLDER_RE.finditer(template)):
        return None
    return _template_space(template, spaces, digits)


def entry_spaces(entry: Any, declaration: Mapping[str, Any] | None) -> dict[str, str]:
    """Each string of one `verify.device` entry that holds a drawn placeholder: its key path (`.match.data1.token`, `.rows[0][1]`) -> its space."""
    found: dict[str, str] = {}

    def walk(value: Any, where: str) -> None:
        if isinstance(value, str):
            space = value_space(value, declaration, digits=where.endswith(".digits"))
            if space is not None:
                found[where] = space
        elif isinstance(value, Mapping):
            for key, child in value.items():
                walk(child, f"{where}.{key}")
        elif isinstance(value, list):
            for index, child in enumerate(value):
                walk(child, f"{where}[{index}]")

    walk(entry, "")
    return found


def device_spaces(raw: Mapping[str, Any]) -> tuple[dict[str, str], ...]:
    """A suite mapping as declared -> one `entry_spaces` per `verify.device` entry, in order."""
    verify = raw.get("verify") if isinstance(raw.get("verify"), Mapping) else {}
    declaration = raw.get("params") if isinstance(raw.get("params"), Mapping) else None
    return tuple(entry_spaces(entry, declaration) for entry in verify.get("device") or [])
