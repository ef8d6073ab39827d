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

A key of the path drawn per instance (`"https://{site}:443,*"`) is looked up among the keys of
its mapping, so the check also reads the other keys there that the instance could have drawn in
its place (`checks.records`): when the rest of the path holds under one of them too (a camera
blocked for every site the instance could have named), the check fails, saying how many keys did.
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
from pytest_agentbench.checks.records import RecordFlood, is_candidate
from pytest_agentbench.checks.values import (
    MATCHER_KEYS,
    Matcher,
    alternatives_matchers,
    alternatives_problems,
    as_text,
    json_lookup,
    parse_matcher_at,
    path_text,
    split_path,
)

KIND = "jsonFile"
#: A random operand is also looked for over records (`checks.records`): `parse` takes the spaces of drawn values.
SEARCHES_RECORDS = True
USES_BEFORE = False


@dataclass(frozen=True)
class Expectation:
    path: str | tuple[str | int, ...]
    matcher: Matcher
    #: The path's keys drawn per instance: (index in the path, the values it could have been; `suite.spaces`).
    drawn_keys: tuple[tuple[int, str], ...] = ()

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


def _expectation(entry: Mapping[str, Any], spaces: Mapping[str, str], where: str) -> Expectation:
    path = entry["path"]
    matcher = parse_matcher_at({key: value for key, value in entry.items() if key in MATCHER_KEYS}, spaces, where)
    drawn = tuple((index, spaces[f"{where}.path[{index}]"]) for index in range(len(path))
                  if not isinstance(path, str) and f"{where}.path[{index}]" in spaces)
    return Expectation(path if isinstance(path, str) else tuple(path), matcher, drawn)


def problems(entry: Mapping[str, Any], where: str) -> list[str]:
    """The rules of a `jsonFile` entry a schema cannot say: `path` with one matcher, or `anyOf` of such."""
    return alternatives_problems(where, entry, "path")


def matchers(entry: Mapping[str, Any], where: str) -> list[tuple[str, Any]]:
    """Each matcher of the entry with its key path (the loader's rule for values random per run reads them)."""
    return alternatives_matchers(where, entry)


def random_refusals(entry: Mapping[str, Any], where: str) -> list[tuple[str, Any, str]]:
    """Where a random value may not be (the loader's rule): a dotted `path` string, whose drawn part is no one key."""
    why = ("a dotted path does not say which key is drawn, so the check cannot set it beside the mapping's other keys: "
           "write the path as a list of keys")
    items = [(f"{where}.anyOf[{index}]", item) for index, item in enumerate(entry.get("anyOf") or [])] if "anyOf" in entry \
        else [(where, entry)]
    return [(f"{at}.path", item["path"], why) for at, item in items if isinstance(item, Mapping) and isinstance(item.get("path"), str)]


def parse(entry: Mapping[str, Any], spaces: Mapping[str, str] | None = None) -> Spec:
    """A validated `verify.device` entry (and the spaces of its drawn values, `suite.spaces`) -> Spec."""
    spaces = spaces or {}
    alternatives = ([_expectation(item, spaces, f".anyOf[{index}]") for index, item in enumerate(entry["anyOf"])]
                    if "anyOf" in entry else [_expectation(entry, spaces, "")])
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
    data = {"file": spec.device_path, "values": extract(document, [alt.path for alt in spec.alternatives])}
    others = {alt.label: other_keys(document, alt) for alt in spec.alternatives if alt.drawn_keys}
    return {**data, "otherKeys": others} if others else data


def other_keys(document: Any, expectation: Expectation) -> list[dict[str, Any]]:
    """For each drawn key of the path: the other keys of its mapping the instance could have drawn, and the value the rest of the path finds under each.

    Returns:
        `{"at": index in the path, "key": the other key, "found", "value"}` per candidate key.
    """
    path = split_path(expectation.path)
    found = []
    for index, space in expectation.drawn_keys:
        present, mapping = json_lookup(document, path[:index])
        if not present or not isinstance(mapping, Mapping):
            continue
        wanted = as_text(path[index])
        for key, under in mapping.items():
            if key != wanted and is_candidate(key, wanted, space):
                hit, value = json_lookup(under, path[index + 1:])
                found.append({"at": index, "key": key, "found": hit, "value": value})
    return found


def key_flood(expectation: Expectation, values: Mapping[str, Any], others: list[dict[str, Any]],
              answer: str | None) -> RecordFlood | None:
    """Other candidate keys under which the rest of the path holds, beside the wanted key (`checks.records`)."""
    holding = sorted({str(other["key"]) for other in others if expectation.matcher.judge(other["found"], other["value"], answer=answer)[0]})
    if not holding:
        return None
    entry = values.get(expectation.label) or {"found": False, "value": None}
    if not expectation.matcher.judge(entry["found"], entry["value"], answer=answer)[0]:
        return None  # without the wanted key the check fails on its own: a wrong key, not a flood
    index = others[0]["at"]
    label = f"the keys of {path_text(list(split_path(expectation.path)[:index])) or 'the document'} (with {expectation.describe()})"
    return RecordFlood(label, len(holding) + 1, tuple(holding), "key")


def _judge(expectation: Expectation, values: Mapping[str, Any], answer: str | None,
           others: Mapping[str, Any] | None = None) -> tuple[bool, str | None]:
    """Whether the expectation holds, and the sentence when its value is refused as a flood (`Matcher.judge`) or other keys hold it too."""
    flood = key_flood(expectation, values, (others or {}).get(expectation.label) or [], answer)
    if flood is not None:
        return False, flood.sentence()
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
    judged = [_judge(alternative, values, context.answer, after.get("otherKeys")) for alternative in spec.alternatives]
    if any(holds for holds, _ in judged):
        return passed(KIND, spec.name, expected, seen)
    # A value refused as a flood is said before the value itself, which the check's text cuts short.
    refused = "".join(f"{refusal}: " for refusal in dict.fromkeys(refusal for _, refusal in judged if refusal))
    return failed(KIND, spec.name, expected, refused + seen)
