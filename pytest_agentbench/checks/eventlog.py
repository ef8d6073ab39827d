"""`eventLog`: an app's JSON-lines event log before and after -> the new events -> an ordered subsequence -> Check.

```yaml
- kind: eventLog
  name: invalid-then-ignored-then-ok
  package: com.example.testbed
  file: files/events.jsonl          # default
  sequence:                         # in this order among the events added during the run
    - {event: submit, valid: false}
    - {event: create_ignored}
    - {event: submit, valid: true}
```

A step matches an event when every field it names matches (a bare value means equals, or a
matcher such as `{matches: "^order"}`). Only events added after the before-snapshot count: when the
log still starts with the lines it had before, the new ones are those after them; when it was
replaced (the app cleared it), every event newer than the last one seen before counts.

A step field whose value is drawn per instance (`{param}`) must also be the only candidate among
the new events where the step's other fields hold (`checks.records`): a run that made the app log
the step once for every value it could have been fails, saying how many events held candidates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.checks.base import (
    Check,
    CheckContext,
    DeviceReads,
    Read,
    app_path,
    failed,
    is_missing_file,
    passed,
    root_file_read,
    show,
    snapshot_error,
    unreadable,
)
from pytest_agentbench.checks.records import RecordFlood, first_flood, flood_over
from pytest_agentbench.checks.values import Matcher, matcher_problems, parse_matcher_at

KIND = "eventLog"
#: A random operand is also looked for over records (`checks.records`): `parse` takes the spaces of drawn values.
SEARCHES_RECORDS = True
USES_BEFORE = True
DEFAULT_FILE = "files/events.jsonl"
_SHOWN_EVENTS = 12


def _plain(value: Any) -> str:
    # As a suite writes it in YAML: bare strings, JSON for the rest (false, 3, null).
    return value if isinstance(value, str) else show(value)


@dataclass(frozen=True)
class Step:
    fields: tuple[tuple[str, Matcher], ...]

    def describe(self) -> str:
        return "{" + ", ".join(f"{key}: {_plain(matcher.value) if matcher.op == 'equals' else matcher.describe()}"
                               for key, matcher in self.fields) + "}"

    def matches(self, event: Mapping[str, Any]) -> bool:
        return self.judge(event)[0]

    def judge(self, event: Mapping[str, Any]) -> tuple[bool, str | None]:
        """Whether the event matches every field, and the first field refused as a flood (`Matcher.judge`)."""
        holds, refused = True, None
        for key, matcher in self.fields:
            ok, why = matcher.judge(key in event, event.get(key))
            holds = holds and ok
            if why and refused is None:
                refused = f"its {key}: {why}"
        return holds, refused

    def flood(self, events: Sequence[Mapping[str, Any]]) -> RecordFlood | None:
        """New events holding another candidate of a random field's value, among those where the step's other fields hold."""
        floods = []
        for index, (key, matcher) in enumerate(self.fields):
            if matcher.random:
                others = Step(self.fields[:index] + self.fields[index + 1:])
                values = (event.get(key) for event in events if others.matches(event))
                floods.append(flood_over(values, matcher, matcher.value, f"{key} in step {self.describe()}", "new event"))
        return first_flood(floods)


@dataclass(frozen=True)
class Spec:
    name: str
    package: str
    file: str
    sequence: tuple[Step, ...]

    @property
    def device_path(self) -> str:
        return app_path(self.package, self.file)

    def describe(self) -> str:
        return f"new events of {self.package} in order: " + " -> ".join(step.describe() for step in self.sequence)


def problems(entry: Mapping[str, Any], where: str) -> list[str]:
    """The rules of an `eventLog` entry a schema cannot say: each step's matchers well formed."""
    found = []
    for index, step in enumerate(entry.get("sequence") or []):
        for field, raw in step.items():
            found += matcher_problems(f"{where}.sequence[{index}].{field}", raw)
    return found


def matchers(entry: Mapping[str, Any], where: str) -> list[tuple[str, Any]]:
    """Each step field's matcher with its key path (the loader's rule for values random per run reads them)."""
    return [(f"{where}.sequence[{index}].{field}", raw) for index, step in enumerate(entry.get("sequence") or [])
            if isinstance(step, Mapping) for field, raw in step.items()]


def parse(entry: Mapping[str, Any], spaces: Mapping[str, str] | None = None) -> Spec:
    """A validated `verify.device` entry (and the spaces of its drawn values, `suite.spaces`) -> Spec."""
    steps = tuple(Step(tuple((key, parse_matcher_at(value, spaces, f".sequence[{index}].{key}")) for key, value in step.items()))
                  for index, step in enumerate(entry["sequence"]))
    return Spec(entry["name"], entry["package"], entry.get("file", DEFAULT_FILE), steps)


def reads(spec: Spec) -> tuple[Read, ...]:
    return (root_file_read(spec.device_path),)


def parse_lines(text: str) -> tuple[list[dict[str, Any]], int]:
    """JSON lines -> (the events that are JSON objects, how many lines were not)."""
    events, bad = [], 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(value, dict):
            events.append(value)
        else:
            bad += 1
    return events, bad


def snapshot(spec: Spec, device: DeviceReads) -> dict[str, Any]:
    return log_snapshot(spec.device_path, device)


def log_snapshot(path: str, device: DeviceReads) -> dict[str, Any]:
    """The read of one event log (`root_file_read(path)`) -> its snapshot: events, unparseable lines, missing."""
    raw = device.get(root_file_read(path).key)
    if raw is not None and is_missing_file(raw):
        # The app has written no event yet: an empty log, not an unreadable one.
        return {"events": [], "unparseable": 0, "missing": True}
    problem = unreadable(raw, f"the event log {path}")
    if problem:
        return snapshot_error(problem)
    events, bad = parse_lines(raw.text)  # type: ignore[union-attr]
    return {"events": events, "unparseable": bad, "missing": False}


def new_events(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The events added after `before` was read (see the module docstring)."""
    if list(after[: len(before)]) == list(before):
        return list(after[len(before):])
    stamps = [event.get("ts") for event in before if isinstance(event.get("ts"), (int, float))]
    if not stamps:
        return list(after)
    last = max(stamps)
    return [event for event in after if isinstance(event.get("ts"), (int, float)) and event["ts"] > last]


def find_sequence(steps: Sequence[Step], events: Sequence[Mapping[str, Any]]) -> int:
    """How many steps of the sequence appear in order (a greedy, earliest match is optimal here)."""
    found = 0
    for event in events:
        if found < len(steps) and steps[found].matches(event):
            found += 1
    return found


def _label(event: Mapping[str, Any]) -> str:
    extra = {key: value for key, value in event.items() if key not in ("event", "ts", "screen")}
    return f"{event.get('event', '?')}{show(extra) if extra else ''}"


def validate(before: Mapping[str, Any] | None, after: Mapping[str, Any], spec: Spec, context: CheckContext) -> Check:
    """Pass when the sequence appears, in order, among the events added during the run."""
    expected = spec.describe()
    if "error" in after:
        return failed(KIND, spec.name, expected, after["error"])
    if before is not None and "error" in before:
        return failed(KIND, spec.name, expected, f"new events cannot be told apart: before the run, {before['error']}")
    fresh = new_events((before or {}).get("events", []), after["events"])
    found = find_sequence(spec.sequence, fresh)
    shown = ", ".join(_label(event) for event in fresh[:_SHOWN_EVENTS]) + (" …" if len(fresh) > _SHOWN_EVENTS else "")
    seen = f"{len(fresh)} new event{'s' if len(fresh) != 1 else ''}: {shown or 'none'}"
    if after.get("missing"):
        seen += f" ({spec.device_path} does not exist)"
    flood = first_flood(step.flood(fresh) for step in spec.sequence)
    if flood is not None:
        return failed(KIND, spec.name, expected, f"{flood.sentence()}; {seen}")
    if found == len(spec.sequence):
        return passed(KIND, spec.name, expected, seen)
    missing = spec.sequence[found].describe()
    where = f"after step {found} ({spec.sequence[found - 1].describe()})" if found else "at all"
    # A new event whose field was refused as a flood (`token` over its length, a list of candidates) says so.
    refused = next((f" (new event {index} {why})" for index, event in enumerate(fresh, start=1)
                    for why in [spec.sequence[found].judge(event)[1]] if why), "")
    return failed(KIND, spec.name, expected, f"no new event {missing} {where}{refused}; {seen}")
