"""jsonschema errors -> sentences naming the key path, the value and what was expected; the suite schema shipped in the package.

Shared by the suite loader and the params validator, so both word a bad suite the same way.
"""

from __future__ import annotations

import difflib
import json
import re
from functools import cache
from importlib import resources
from typing import Any

from jsonschema.exceptions import ValidationError


@cache
def suite_schema() -> dict:
    """Return the suite JSON Schema shipped in the package."""
    text = resources.files("pytest_agentbench.suite").joinpath("suite.schema.json").read_text("utf-8")
    return json.loads(text)


def key_path(parts: Any) -> str:
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(top level)"


def show(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_TYPE_WORDS = {
    "object": "a mapping", "array": "a list", "string": "a string", "number": "a number",
    "integer": "an integer", "boolean": "true or false",
}


def python_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return {int: "an integer", float: "a number", str: "a string"}.get(type(value), type(value).__name__)


def schema_problems(error: ValidationError) -> list[str]:
    """Turn one jsonschema error into sentences naming the key path, the value and what was expected."""
    path = list(error.absolute_path)
    where = key_path(path)
    kind = error.validator
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        allowed = list(error.schema.get("properties", {}))
        problems = []
        for key in error.instance:
            if key in allowed:
                continue
            hint = difflib.get_close_matches(str(key), allowed, n=1)
            guess = f" (did you mean {hint[0]!r}?)" if hint else ""
            expected = f"; allowed keys: {', '.join(allowed)}" if allowed else ""
            problems.append(f"{key_path([*path, key])}: unknown key{guess}{expected}")
        if problems:
            return problems
    if kind == "required":
        missing = re.match(r"'([^']+)'", error.message)
        name = missing.group(1) if missing else "?"
        return [f"{key_path([*path, name])}: required key is missing"]
    if kind == "type":
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        words = " or ".join(_TYPE_WORDS.get(w, w) for w in wanted)
        return [f"{where}: expected {words}, got {show(error.instance)} ({python_type(error.instance)})"]
    expected = error.schema.get("x-expected")
    if kind == "const":
        expected = repr(error.validator_value)
    elif kind == "minLength":
        expected = "a non-empty string"
    elif kind == "minItems":
        expected = f"a list with at least {error.validator_value} entr{'y' if error.validator_value == 1 else 'ies'}"
    elif kind == "minimum":
        expected = f"a number >= {error.validator_value}"
    elif kind == "exclusiveMinimum":
        expected = f"a number > {error.validator_value}"
    elif kind == "anyOf" and not expected:
        expected = "one of the allowed shapes"
    return [f"{where}: expected {expected or error.message}, got {show(error.instance)}"]
