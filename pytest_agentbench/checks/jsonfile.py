"""`jsonFile`: a path inside an app's private JSON file (Chrome's `Preferences`), read as root -> Check.

```yaml
- kind: jsonFile
  name: secure-connections
  package: com.android.chrome
  file: app_chrome/Default/Preferences
  anyOf:                                    # keys that moved between versions: either passes
    - {path: https_first_balanced_mode_enabled, equals: true}
    - {path: https_only_mode_enabled, equals: true}
# or one `path:` (dotted: default_search_provider_data.template_url_data.keyword) and a matcher
```

A missing file, or one that is not JSON, fails the check with a sentence, never a traceback.
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
    passed,
    root_file_read,
    show,
    snapshot_error,
    unreadable,
)
from pytest_agentbench.checks.values import (
    MATCHER_KEYS,
    Matcher,
    alternatives_matchers,
    alternatives_problems,
    json_lookup,
    parse_matcher,
    path_text,
)

KIND = "jsonFile"
USES_BEFORE = False


@dataclass(frozen=True)
class Expectation:
    path: str | tuple[str | int, ...]
    matcher: Matcher

    @property
    def label(self) -> str:
        return path_text(self.path)

    def describe(self) -> str:
        return f"{self.label} {self.matcher.describe()}"


@dataclass(frozen=True)
class Spec:
    name: str
    package: str
    file: str
    alternatives: tuple[Expectation, ...]

    @property
    def device_path(self) -> str:
        return app_path(self.package, self.file)

    def describe(self) -> str:
        parts = [alternative.describe() for alternative in self.alternatives]
        return parts[0] if len(parts) == 1 else "any of: " + "; ".join(parts)


def _expectation(entry: Mapping[str, Any]) -> Expectation:
    path = entry["path"]
    matcher = parse_matcher({key: value for key, value in entry.items() if key in MATCHER_KEYS})
    return Expectation(path if isinstance(path, str) else tuple(path), matcher)


def problems(entry: Mapping[str, Any], where: str) -> list[str]:
    """The rules of a `jsonFile` entry a schema cannot say: `path` with one matcher, or `anyOf` of such."""
    return alternatives_problems(where, entry, "path")


def matchers(entry: Mapping[str, Any], where: str) -> list[tuple[str, Any]]:
    """Each matcher of the entry with its key path (the loader's rule for values random per run reads them)."""
    return alternatives_matchers(where, entry)


def parse(entry: Mapping[str, Any]) -> Spec:
    """A validated `verify.device` entry -> Spec."""
    alternatives = [_expectation(item) for item in entry["anyOf"]] if "anyOf" in entry else [_expectation(entry)]
    return Spec(entry["name"], entry["package"], entry["file"], tuple(alternatives))


def reads(spec: Spec) -> tuple[Read, ...]:
    return (root_file_read(spec.device_path),)


def extract(document: Any, paths: Sequence[str | tuple[str | int, ...]]) -> dict[str, dict[str, Any]]:
    """The looked-up values of a parsed JSON document: path -> {"found", "value"}."""
    values = {}
    for path in paths:
        found, value = json_lookup(document, path)
        values[path_text(path)] = {"found": found, "value": value}
    return values


def snapshot(spec: Spec, device: DeviceReads) -> dict[str, Any]:
    raw = device.get(reads(spec)[0].key)
    problem = unreadable(raw, f"the JSON file {spec.device_path}")
    if problem:
        return snapshot_error(problem)
    try:
        document = json.loads(raw.text)  # type: ignore[union-attr]
    except ValueError as exc:
        return snapshot_error(f"{spec.device_path} is not JSON ({exc})")
    return {"file": spec.device_path, "values": extract(document, [alt.path for alt in spec.alternatives])}


def _judge(expectation: Expectation, values: Mapping[str, Any], answer: str | None) -> tuple[bool, str | None]:
    """Whether the expectation holds, and the sentence when its value is refused as a flood (`Matcher.judge`)."""
    entry = values.get(expectation.label) or {"found": False, "value": None}
    return expectation.matcher.judge(entry["found"], entry["value"], answer=answer)


def validate(before: Mapping[str, Any] | None, after: Mapping[str, Any], spec: Spec, context: CheckContext) -> Check:
    """Pass when any alternative holds in the after-snapshot."""
    expected = f"{spec.describe()} in {spec.device_path}"
    if "error" in after:
        return failed(KIND, spec.name, expected, after["error"])
    values = after["values"]
    seen = "; ".join(
        f"{alt.label} is {show(values[alt.label]['value'])}" if values.get(alt.label, {}).get("found")
        else f"{alt.label} is not in the file"
        for alt in spec.alternatives
    )
    judged = [_judge(alternative, values, context.answer) for alternative in spec.alternatives]
    if any(holds for holds, _ in judged):
        return passed(KIND, spec.name, expected, seen)
    # A value refused as a flood is said before the value itself, which the check's text cuts short.
    refused = "".join(f"{refusal}: " for refusal in dict.fromkeys(refusal for _, refusal in judged if refusal))
    return failed(KIND, spec.name, expected, refused + seen)
