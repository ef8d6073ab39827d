"""`content`: a content-provider query (`content query --uri ...`) -> rows -> matching rows -> Check.

```yaml
- kind: content
  name: saved-contact
  uri: content://com.android.contacts/data/phones
  projection: [display_name, data1]
  where: "display_name='Pickup 4821'"       # optional, passed to --where
  match:                                    # a row matches when every column matches
    display_name: Pickup 4821               # a bare value means equals
    data1: {digits: "555-123-0001"}         # phone numbers compare by digit suffix: the editor may add +1
  new: true                                 # only rows that were not there before the run count
  count: 1                                  # exactly this many matching rows (default: at least one)
  root: false                               # query as root (su 0) for providers the shell may not read
```

A matcher's operand may be read from the device: `{token: {fromPrefs: {package, file, key}}}`
compares with what an app's SharedPreferences hold after the run (a code random per run that the
agent had to carry into a contact); the file is read in the same batch, as root. Such a value is
matched whole or as one token (the loader refuses `contains` and `matches`), so a note holding
every six-digit code fails, saying why before the rows it shows. A random operand (that, or a
drawn `{param}`) must also be the only candidate among the rows the check looks at
(`checks.records`): a million new contacts, each with one code in its note, fail, and the
loader refuses a drawn value in `where` or `uri`, which would hide the other rows from the check.

Values are compared as the command prints them (text): `equals: 1` matches `1`, NULL is absent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.checks.base import (
    Check,
    CheckContext,
    DeviceReads,
    Read,
    failed,
    passed,
    root_file_read,
    show,
    snapshot_error,
    unreadable,
)
from pytest_agentbench.checks.prefs import parse_prefs_xml
from pytest_agentbench.checks.provider import parse_rows, provider_error, query_read
from pytest_agentbench.checks.records import RecordFlood, first_flood, flood_over
from pytest_agentbench.checks.values import Matcher, PrefRef, matcher_problems, parse_matcher_at

KIND = "content"
#: A random operand is also looked for over records (`checks.records`): `parse` takes the spaces of drawn values.
SEARCHES_RECORDS = True
USES_BEFORE = True
#: A match operand may be read from the device (`fromPrefs`); no other kind takes one.
OPERANDS_FROM_PREFS = True
_SHOWN_ROWS = 5


@dataclass(frozen=True)
class Spec:
    name: str
    uri: str
    projection: tuple[str, ...]
    where: str | None
    match: tuple[tuple[str, Matcher], ...]
    count: int | None = None
    new: bool = False
    root: bool = False

    @property
    def authority(self) -> str:
        return self.uri.split("://", 1)[-1].split("/", 1)[0]

    def describe(self) -> str:
        what = ", ".join(f"{column} {matcher.describe()}" for column, matcher in self.match) or "any row"
        how_many = "at least one" if self.count is None else f"exactly {self.count}"
        fresh = " new" if self.new else ""
        plural = "s" if self.count not in (None, 1) else ""
        return f"{how_many}{fresh} row{plural} of {self.uri} where {what}"


def problems(entry: Mapping[str, Any], where: str) -> list[str]:
    """The rules of a `content` entry a schema cannot say: each `match` column is projected, each matcher well formed."""
    found = []
    projection = entry.get("projection") or []
    for column, raw in (entry.get("match") or {}).items():
        if column not in projection:
            found.append(f"{where}.match.{column}: expected a column of the projection ({', '.join(projection)}), "
                         f"got {column!r}")
        found += matcher_problems(f"{where}.match.{column}", raw)
    return found


def matchers(entry: Mapping[str, Any], where: str) -> list[tuple[str, Any]]:
    """Each column's matcher with its key path (the loader's rule for values random per run reads them)."""
    return [(f"{where}.match.{column}", raw) for column, raw in (entry.get("match") or {}).items()]


def random_refusals(entry: Mapping[str, Any], where: str) -> list[tuple[str, Any, str]]:
    """Where a random value may not be (the loader's rule): `where` and `uri` choose the rows the check sees.

    Filtering on the value would hide the rows that hold its other candidates, so a flood of rows
    would pass; compared in `match`, every row is seen (`checks.records`).
    """
    why = "it chooses the rows the check sees, so rows holding its other candidates would never be looked at: compare it in match"
    return [(f"{where}.{key}", entry[key], why) for key in ("where", "uri") if key in entry]


def parse(entry: Mapping[str, Any], spaces: Mapping[str, str] | None = None) -> Spec:
    """A validated `verify.device` entry (and the spaces of its drawn values, `suite.spaces`) -> Spec."""
    match = tuple((column, parse_matcher_at(raw, spaces, f".match.{column}")) for column, raw in (entry.get("match") or {}).items())
    return Spec(entry["name"], entry["uri"], tuple(entry["projection"]), entry.get("where"), match,
                entry.get("count"), bool(entry.get("new", False)), bool(entry.get("root", False)))


def _refs(spec: Spec) -> list[PrefRef]:
    return [matcher.value for _, matcher in spec.match if isinstance(matcher.value, PrefRef)]


def reads(spec: Spec) -> tuple[Read, ...]:
    query = query_read(spec.uri, spec.projection, where=spec.where, root=spec.root)
    files = {ref.path: root_file_read(ref.path) for ref in _refs(spec)}
    return (query, *files.values())


def resolve_refs(refs: list[PrefRef], device: DeviceReads) -> dict[str, dict[str, Any]]:
    """Each operand read from the device: ref id -> {"value"} or {"error": sentence}."""
    resolved: dict[str, dict[str, Any]] = {}
    for ref in refs:
        raw = device.get(root_file_read(ref.path).key)
        problem = unreadable(raw, f"the preferences file {ref.path}")
        if problem is None:
            try:
                entry = parse_prefs_xml(raw.text).get(ref.key)  # type: ignore[union-attr]
            except ValueError as exc:
                entry, problem = None, f"{ref.path} is {exc}"
            if problem is None and entry is None:
                problem = f"{ref.path} has no {ref.key}"
        resolved[ref.ref_id] = {"error": problem} if problem else {"value": entry["value"]}  # type: ignore[index]
    return resolved


def rows_snapshot(raw_text: str | None, columns: tuple[str, ...], what: str, raw: Any) -> dict[str, Any]:
    """A query's rows, or the sentence why there are none to judge (shared with `media`)."""
    problem = unreadable(raw, what)
    if problem:
        return snapshot_error(problem)
    error = provider_error(raw_text or "")
    if error:
        return snapshot_error(error)
    try:
        return {"rows": parse_rows(raw_text or "", columns)}
    except ValueError as exc:
        return snapshot_error(f"the output of the query of {what} does not parse: {exc}")


def snapshot(spec: Spec, device: DeviceReads) -> dict[str, Any]:
    raw = device.get(reads(spec)[0].key)
    data = rows_snapshot(raw.text if raw else None, spec.projection, spec.uri, raw)
    refs = _refs(spec)
    if refs and "error" not in data:
        data["refs"] = resolve_refs(refs, device)
    return data


def new_rows(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of `after` that `before` did not have (as a multiset: a duplicate counts once more)."""
    left = Counter(show(row) for row in before)
    fresh = []
    for row in after:
        key = show(row)
        if left[key]:
            left[key] -= 1
        else:
            fresh.append(row)
    return fresh


def _judge_row(match: tuple[tuple[str, Matcher], ...], row: Mapping[str, Any], answer: str | None) -> tuple[bool, str | None]:
    """Whether every column matcher holds for a row, and the first column refused as a flood (`Matcher.judge`)."""
    holds, refused = True, None
    for column, matcher in match:
        ok, why = matcher.judge(row.get(column) is not None, row.get(column), text=True, answer=answer)
        holds = holds and ok
        if why and refused is None:
            refused = f"{column}: {why}"
    return holds, refused


def _resolved(spec: Spec, refs: Mapping[str, Any]) -> tuple[tuple[tuple[str, Matcher], ...], str | None]:
    """The matchers with their device-read operands filled in, or why one could not be read."""
    match = []
    for column, matcher in spec.match:
        if isinstance(matcher.value, PrefRef):
            entry = refs.get(matcher.value.ref_id) or {"error": f"{matcher.value.describe()} was not read"}
            if "error" in entry:
                return (), f"the value {column} is compared with could not be read: {entry['error']}"
            matcher = Matcher(matcher.op, entry["value"], random=True)
        match.append((column, matcher))
    return tuple(match), None


def row_flood(match: tuple[tuple[str, Matcher], ...], rows: list[dict[str, Any]], answer: str | None,
              scope: str) -> RecordFlood | None:
    """Rows holding another candidate of a random matcher's value, among the rows where every other matcher holds (`checks.records`)."""
    floods = []
    for index, (column, matcher) in enumerate(match):
        if not matcher.random:
            continue
        others = match[:index] + match[index + 1:]
        candidates = (row.get(column) for row in rows if _judge_row(others, row, answer)[0])
        floods.append(flood_over(candidates, matcher, matcher.value, column, scope))
    return first_flood(floods)


def validate(before: Mapping[str, Any] | None, after: Mapping[str, Any], spec: Spec, context: CheckContext) -> Check:
    """Count the rows (new rows only, with `new`) that match every column matcher."""
    expected = spec.describe()
    if "error" in after:
        return failed(KIND, spec.name, expected, after["error"])
    rows = after["rows"]
    if spec.new:
        if before is None or "error" in before:
            why = (before or {}).get("error", "there is no before-snapshot")
            return failed(KIND, spec.name, expected, f"new rows cannot be told apart: before the run, {why}")
        rows = new_rows(before["rows"], rows)
    match, problem = _resolved(spec, after.get("refs") or {})
    if problem:
        return failed(KIND, spec.name, expected, problem)
    judged = [(row, *_judge_row(match, row, context.answer)) for row in rows]
    matching = [row for row, holds, _ in judged if holds]
    scope = "new row" if spec.new else "row"
    flood = row_flood(match, rows, context.answer, scope)
    ok = (len(matching) >= 1 if spec.count is None else len(matching) == spec.count) and flood is None
    seen = f"{len(rows)} {scope}{'s' if len(rows) != 1 else ''}, {len(matching)} matching"
    if flood is not None:
        # Said first: the rows shown after it are cut to a few hundred characters.
        seen = f"{flood.sentence()}; {seen}"
    # A field refused as a flood is said first: the rows shown after it are cut to a few hundred characters.
    refused = [f"{scope} {index}'s {why}" for index, (_, _, why) in enumerate(judged, start=1) if why]
    if not ok and refused:
        seen += f" ({refused[0]}" + (f"; {len(refused) - 1} more {scope}s refused" if len(refused) > 1 else "") + ")"
    shown = matching if ok else rows
    if shown:
        seen += f": {show(shown[:_SHOWN_ROWS])}" + (" …" if len(shown) > _SHOWN_ROWS else "")
    return passed(KIND, spec.name, expected, seen) if ok else failed(KIND, spec.name, expected, seen)
