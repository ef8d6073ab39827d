r"""`report`: the agent's final answer + planted bugs (each a list of regular expressions) -> the bugs found -> Check.

```yaml
- kind: report
  name: qa-shop-bugs
  bugs:
    - name: stale-total
      patterns: ['total', 'decreas|fewer|reduc', '\$?36\.00']   # all in one sentence
    - name: flat-discount
      patterns: ['discount', 'flat|10\.00']
  minFound: 2                 # default: every bug
```

No model grades. A bug is found when one sentence of the answer matches every one of its patterns
(case-insensitive). Sentences end at a full stop (or `!`, `?`) followed by a space or a line break,
and at a line break: never at the decimal point in `$36.00` (seed 001).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.checks.base import Check, CheckContext, DeviceReads, Read, cut, failed, passed

KIND = "report"
USES_BEFORE = False
# A full stop (or ! ?) followed by whitespace ends a sentence; so does a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])[ \t]+|\r?\n+")


@dataclass(frozen=True)
class Bug:
    name: str
    patterns: tuple[str, ...]

    def found_in(self, sentence: str) -> bool:
        return all(re.search(pattern, sentence, re.IGNORECASE) for pattern in self.patterns)


@dataclass(frozen=True)
class Spec:
    name: str
    bugs: tuple[Bug, ...]
    min_found: int

    def describe(self) -> str:
        names = ", ".join(bug.name for bug in self.bugs)
        return f"the answer reports at least {self.min_found} of {len(self.bugs)} planted bugs ({names})"


def parse(entry: Mapping[str, Any]) -> Spec:
    """A validated `verify.device` entry -> Spec."""
    bugs = tuple(Bug(bug["name"], tuple(bug["patterns"])) for bug in entry["bugs"])
    return Spec(entry["name"], bugs, entry.get("minFound", len(bugs)))


def reads(spec: Spec) -> tuple[Read, ...]:
    return ()


def split_sentences(text: str) -> list[str]:
    """Sentences of a report: split at a full stop followed by a space or a newline, and at line breaks."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


def snapshot(spec: Spec, device: DeviceReads) -> dict[str, Any]:
    return {}


def found_bugs(spec: Spec, answer: str) -> dict[str, str]:
    """Bug name -> the first sentence that reports it."""
    sentences = split_sentences(answer)
    found = {}
    for bug in spec.bugs:
        sentence = next((s for s in sentences if bug.found_in(s)), None)
        if sentence is not None:
            found[bug.name] = sentence
    return found


def validate(before: Mapping[str, Any] | None, after: Mapping[str, Any], spec: Spec, context: CheckContext) -> Check:
    """Count the planted bugs the final answer reports, sentence by sentence."""
    expected = spec.describe()
    if not context.answer or not context.answer.strip():
        return failed(KIND, spec.name, expected, "the agent gave no final answer to judge")
    found = found_bugs(spec, context.answer)
    missing = [bug.name for bug in spec.bugs if bug.name not in found]
    seen = "; ".join(f"found {name} in {cut(sentence, 120)!r}" for name, sentence in found.items()) or "no planted bug found"
    if missing:
        seen += f"; not found: {', '.join(missing)}"
    if len(found) >= spec.min_found:
        return passed(KIND, spec.name, expected, seen)
    return failed(KIND, spec.name, expected, f"{len(found)} of {len(spec.bugs)} found, {spec.min_found} needed: {seen}")
