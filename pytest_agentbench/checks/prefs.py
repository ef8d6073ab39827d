"""`sharedPreferences`: a key of any app's private SharedPreferences file, read as root -> typed values -> Check.

```yaml
- kind: sharedPreferences
  name: world-clock
  package: com.android.deskclock
  file: clocks                 # shared_prefs/clocks.xml
  key: world_clocks            # only this key is read: a home time zone elsewhere never passes it
  contains: Asia/Tokyo         # or equals / matches / exists; `anyOf: [{key, <matcher>}]` for alternatives
  type: set                    # optional: the tag the value must be stored under
```

A list that an app keeps as a count plus one key per item (DeskClock's world clocks:
`number_of_cities` and `city_id_0`, `city_id_1`, ...) is read with `list: {count: number_of_cities,
item: city_id_}`: the value is the list of the first `count` items, so a stale item key past the
count (DeskClock never deletes them) does not count.

Values keep Android's type tags (`boolean int long float string set`): `equals: true` does not
match the string "true", as `SharedPreferences.getBoolean` would not.

A `key` drawn per instance (`alarm_{id}`) is one key among the file's, so the check also looks at
the other keys the instance could have drawn in its place (`checks.records`): when one of them
holds the value too, the check fails, saying how many keys did. A drawn `list` key cannot be told
apart from its items, so the loader refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import defusedxml.ElementTree as SafeET

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
    in_answer,
    parse_matcher_at,
)

KIND = "sharedPreferences"
#: A random operand is also looked for over records (`checks.records`): `parse` takes the spaces of drawn values.
SEARCHES_RECORDS = True
USES_BEFORE = False
TAGS = ("boolean", "int", "long", "float", "string", "set")


@dataclass(frozen=True)
class ListKeys:
    """A list kept as a count key plus one key per item: item i is `item` + i."""

    count: str
    item: str

    def describe(self) -> str:
        return f"the list {self.item}0..{self.item}N-1 (N = {self.count})"


@dataclass(frozen=True)
class Expectation:
    """One key (or an indexed list), what its value must satisfy, and optionally the tag it must be stored under."""

    key: str
    matcher: Matcher
    tag: str | None = None
    items: ListKeys | None = None
    #: The values the key could have been when it is drawn per instance (`suite.spaces`), else None.
    key_space: str | None = None

    def describe(self) -> str:
        typed = f" (a <{self.tag}>)" if self.tag else ""
        subject = self.items.describe() if self.items else self.key
        return f"{subject} {self.matcher.describe()}{typed}"


@dataclass(frozen=True)
class Spec:
    name: str
    package: str
    file: str
    alternatives: tuple[Expectation, ...]

    @property
    def path(self) -> str:
        return app_path(self.package, f"shared_prefs/{self.file}")

    def describe(self) -> str:
        parts = [alternative.describe() for alternative in self.alternatives]
        return parts[0] if len(parts) == 1 else "any of: " + "; ".join(parts)


def _expectation(entry: Mapping[str, Any], spaces: Mapping[str, str], where: str) -> Expectation:
    matcher_part = {key: value for key, value in entry.items() if key in MATCHER_KEYS}
    matcher = parse_matcher_at(matcher_part, spaces, where)
    if "list" in entry:
        items = ListKeys(entry["list"]["count"], entry["list"]["item"])
        return Expectation(items.count, matcher, entry.get("type"), items)
    return Expectation(entry["key"], matcher, entry.get("type"), key_space=spaces.get(f"{where}.key"))


def problems(entry: Mapping[str, Any], where: str) -> list[str]:
    """The rules of a `sharedPreferences` entry a schema cannot say: `key` or `list` (or `anyOf` of them) with one matcher."""
    # A list's items are compared as read; a stored-type constraint applies to a single key only.
    typed_lists = [f"{where}{at}: type applies to a key, not to a list (its items are compared as read)"
                   for at, item in [("", entry), *((f".anyOf[{i}]", x) for i, x in enumerate(entry.get("anyOf") or ()))]
                   if isinstance(item, Mapping) and "list" in item and "type" in item]
    return typed_lists or alternatives_problems(where, entry, "key", "list")


def matchers(entry: Mapping[str, Any], where: str) -> list[tuple[str, Any]]:
    """Each matcher of the entry with its key path (the loader's rule for values random per run reads them)."""
    return alternatives_matchers(where, entry)


def random_refusals(entry: Mapping[str, Any], where: str) -> list[tuple[str, Any, str]]:
    """Where a random value may not be (the loader's rule): a `list`'s count or item key."""
    why = "a drawn list key cannot be set beside the file's other keys: give the list's keys fixed names"
    items = [(f"{where}.anyOf[{index}]", item) for index, item in enumerate(entry.get("anyOf") or [])] if "anyOf" in entry \
        else [(where, entry)]
    return [(f"{at}.list.{part}", item["list"][part], why) for at, item in items
            if isinstance(item, Mapping) and isinstance(item.get("list"), Mapping) for part in ("count", "item") if part in item["list"]]


def parse(entry: Mapping[str, Any], spaces: Mapping[str, str] | None = None) -> Spec:
    """A validated `verify.device` entry (and the spaces of its drawn values, `suite.spaces`) -> Spec."""
    spaces = spaces or {}
    file_name = entry["file"] if entry["file"].endswith(".xml") else entry["file"] + ".xml"
    alternatives = ([_expectation(item, spaces, f".anyOf[{index}]") for index, item in enumerate(entry["anyOf"])]
                    if "anyOf" in entry else [_expectation(entry, spaces, "")])
    return Spec(entry["name"], entry["package"], file_name, tuple(alternatives))


def reads(spec: Spec) -> tuple[Read, ...]:
    return (root_file_read(spec.path),)


def parse_prefs_xml(text: str) -> dict[str, dict[str, Any]]:
    """Android's SharedPreferences XML -> key -> {"tag", "value"} (a set's value is a sorted list).

    Raises:
        ValueError: The text is not a `<map>` of typed entries.
    """
    try:
        root = SafeET.fromstring(text)
    except SafeET.ParseError as exc:
        raise ValueError(f"not SharedPreferences XML ({exc})") from None
    if root.tag != "map":
        raise ValueError(f"not SharedPreferences XML (the root element is <{root.tag}>, not <map>)")
    values: dict[str, dict[str, Any]] = {}
    for node in root:
        name = node.get("name")
        if name is None or node.tag not in TAGS:
            continue
        raw = node.get("value")
        try:
            if node.tag == "boolean":
                value: Any = raw == "true"
            elif node.tag in ("int", "long"):
                value = int(raw or "")
            elif node.tag == "float":
                value = float(raw or "")
            elif node.tag == "string":
                value = node.text or ""
            else:
                value = sorted((child.text or "") for child in node if child.tag == "string")
        except ValueError:
            raise ValueError(f"the <{node.tag}> {name!r} holds {raw!r}, which is not a {node.tag}") from None
        values[name] = {"tag": node.tag, "value": value}
    return values


def snapshot(spec: Spec, device: DeviceReads) -> dict[str, Any]:
    read = reads(spec)[0]
    raw = device.get(read.key)
    problem = unreadable(raw, f"the preferences file {spec.path}")
    if problem:
        return snapshot_error(problem)
    try:
        return {"file": spec.path, "values": parse_prefs_xml(raw.text)}  # type: ignore[union-attr]
    except ValueError as exc:
        return snapshot_error(f"{spec.path} is {exc}")


def list_value(items: ListKeys, values: Mapping[str, Any]) -> list[Any] | None:
    """The first `count` items of an indexed list (None when the count key is missing or not a number)."""
    count = values.get(items.count)
    if count is None or count["tag"] not in ("int", "long"):
        return None
    # No list holds more items than the file has keys: a corrupt count (2**31 - 1) costs nothing.
    found = (values.get(f"{items.item}{index}") for index in range(max(0, min(int(count["value"]), len(values)))))
    return [entry["value"] for entry in found if entry is not None]


def key_flood(expectation: Expectation, values: Mapping[str, Any], answer: str | None) -> RecordFlood | None:
    """Other keys the instance could have drawn in place of a drawn key that hold the value too, beside it (`checks.records`)."""
    if expectation.key_space is None:
        return None
    holding = sorted(key for key in values if key != expectation.key and is_candidate(key, expectation.key, expectation.key_space)
                     and _judge(replace(expectation, key=key, key_space=None), values, answer)[0])
    if not holding:
        return None
    if not _judge(replace(expectation, key_space=None), values, answer)[0]:
        return None  # without the wanted key the check fails on its own: a wrong key, not a flood
    return RecordFlood(f"the file's keys (with {expectation.describe()})", len(holding) + 1, tuple(holding), "key")


def _judge(expectation: Expectation, values: Mapping[str, Any], answer: str | None) -> tuple[bool, str | None]:
    """Whether the expectation holds, and the sentence when its value is refused as a flood (`Matcher.judge`) or other keys hold it too."""
    flood = key_flood(expectation, values, answer)
    if flood is not None:
        return False, flood.sentence()
    if expectation.items is not None:
        listed = list_value(expectation.items, values)
        return expectation.matcher.judge(listed is not None, listed, answer=answer)
    entry = values.get(expectation.key)
    if entry is None:
        return expectation.matcher.judge(False)
    if expectation.tag is not None and entry["tag"] != expectation.tag:
        return False, None
    value = set(entry["value"]) if entry["tag"] == "set" else entry["value"]
    return expectation.matcher.judge(True, value, answer=answer)


def _seen(expectation: Expectation, values: Mapping[str, Any]) -> str:
    if expectation.items is not None:
        items, count = expectation.items, values.get(expectation.items.count)
        if count is None:
            return f"{items.count} is not in the file"
        listed = list_value(items, values)
        if listed is None:
            return f"{items.count} is <{count['tag']}> {show(count['value'])}, not a count"
        return f"{items.count} is {count['value']}; {items.item}0..: {show(listed)}"
    entry = values.get(expectation.key)
    if entry is None:
        return f"{expectation.key} is not in the file"
    return f"{expectation.key} is <{entry['tag']}> {show(entry['value'])}"


def validate(before: Mapping[str, Any] | None, after: Mapping[str, Any], spec: Spec, context: CheckContext) -> Check:
    """Pass when any alternative holds in the after-snapshot; only the named keys are looked at."""
    expected = f"{spec.describe()} in {spec.path}"
    if "error" in after:
        return failed(KIND, spec.name, expected, after["error"])
    values = after["values"]
    seen = "; ".join(dict.fromkeys(_seen(alternative, values) for alternative in spec.alternatives))
    judged = [_judge(alternative, values, context.answer) for alternative in spec.alternatives]
    if any(holds for holds, _ in judged):
        return passed(KIND, spec.name, expected, seen)
    why = [_answer_problem(alternative, values, context.answer) for alternative in spec.alternatives]
    # A value refused as a flood is said before the value itself, which the check's text cuts short.
    refused = "".join(f"{refusal}: " for refusal in dict.fromkeys(refusal for _, refusal in judged if refusal))
    why_text = "".join(f"; {problem}" for problem in why if problem)
    return failed(KIND, spec.name, expected, f"{refused}{seen} (in {spec.path}){why_text}")


def _answer_problem(expectation: Expectation, values: Mapping[str, Any], answer: str | None) -> str | None:
    """For an `inAnswer` expectation whose key is there: why the answer does not give the value."""
    if expectation.matcher.op != "inAnswer" or expectation.items is not None or expectation.key not in values:
        return None
    value = values[expectation.key]["value"]
    return in_answer(value if isinstance(value, str) else as_text(value), answer)
