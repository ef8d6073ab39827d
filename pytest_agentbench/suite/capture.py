"""A step's `capture: {name, pattern}` + the text the step printed -> the value kept as `{name}` for later steps and the answer.

Prove scenarios and replay plans read values off the device that no suite can hold, such as a
code drawn at random for each run: the step that shows it (a screen listing, a log) captures it,
and later tool arguments and the final answer say `{name}`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Capture:
    """Keep the last match of `pattern` in a step's output (its first group, else the whole match) as `{name}`."""

    name: str
    pattern: str

    def find(self, text: str) -> str | None:
        """The value in `text` (the last match: the newest line of a log), or None when nothing matches."""
        matches = list(re.finditer(self.pattern, text))
        if not matches:
            return None
        last = matches[-1]
        return last.group(1) if last.re.groups else last.group(0)


def capture_problems(raw: Any, where: str) -> list[str]:
    """A `capture:` mapping -> what is wrong with it (name, pattern), one sentence each."""
    if not isinstance(raw, Mapping):
        return [f"{where}: expected {{name: NAME, pattern: REGEX}}, got {raw!r}"]
    problems = []
    extra = sorted(set(raw) - {"name", "pattern"})
    if extra:
        problems.append(f"{where}: unknown key(s) {', '.join(map(repr, extra))}; a capture has 'name' and 'pattern'")
    name, pattern = raw.get("name"), raw.get("pattern")
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        problems.append(f"{where}.name: expected a placeholder name of letters, digits and '_', got {name!r}")
    if not isinstance(pattern, str) or not pattern:
        problems.append(f"{where}.pattern: expected a regular expression, got {pattern!r}")
    else:
        try:
            re.compile(pattern)
        except re.error as exc:
            problems.append(f"{where}.pattern: expected a regular expression, got {pattern!r} ({exc})")
    return problems
