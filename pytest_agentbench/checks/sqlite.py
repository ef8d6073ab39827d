"""`sqlite`: an app database copied off the device as root and queried on the host, read-only -> rows -> Check.

```yaml
- kind: sqlite
  name: pinned-thread
  package: com.google.android.apps.messaging
  database: bugle_db                 # databases/bugle_db (a path with '/' is relative to /data/data/PKG)
  query: >-                          # pins live in their own table: join it
    SELECT c.name FROM conversations c JOIN pinned_conversations p ON p.conversation_id = c._id
  rows: [["Alice"]]                  # exactly these rows (any order; `ordered: true` for order)
# or `includes: [[...]]` (these rows among others) or `count: N`
```

An app whose database schema changes between versions names one query per known schema
instead of `query`; the tables the database holds (`sqlite_master`) choose it, and a database
no known schema fits fails with "unknown bugle_db schema: tables ...", never with an SQL error:

```yaml
  schemas:
    - tables: [conversations, conversation_pins]
      query: SELECT ... JOIN conversation_pins ...
      provenOn: "the simulated Messages only"      # which app versions this query was proven on
```

No query runs on the phone: the database file (and its `-wal` and `-journal`, when there) comes
back base64-encoded in the batched read, is written to a private temporary directory, and is opened
with `mode=ro`. A database the app was writing (a hot journal), a corrupt file or a missing one
fails the check with a sentence.

A cell of `rows` or `includes` drawn per instance (`{param}`) must be the only candidate among the
rows whose other cells are the expected row's (`checks.records`): `includes` of the drawn thread
fails when the query returns every thread the instance could have drawn. The loader refuses a
drawn value in the query itself, which would hide the other rows from the check.
"""

from __future__ import annotations

import posixpath
import re
import sqlite3
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentbench.checks.base import (
    Check,
    CheckContext,
    DeviceReads,
    RawRead,
    Read,
    app_path,
    cut,
    failed,
    is_missing_file,
    passed,
    root_file_read,
    show,
    snapshot_error,
    unreadable,
)
from pytest_agentbench.checks.records import RecordFlood, first_flood, flood_over
from pytest_agentbench.checks.values import Matcher, same_value

KIND = "sqlite"
#: A random operand is also looked for over records (`checks.records`): `parse` takes the spaces of drawn values.
SEARCHES_RECORDS = True
USES_BEFORE = False
#: Companion files SQLite needs to see the database as the app last wrote it.
COMPANIONS = ("-wal", "-journal")


@dataclass(frozen=True)
class Spec:
    name: str
    package: str
    database: str
    query: str
    expect: str  # "rows", "includes" or "count"
    rows: tuple[tuple[Any, ...], ...] = ()
    count: int | None = None
    ordered: bool = False
    #: (tables the schema has, its query, the app versions it was proven on), when `schemas` replaces `query`.
    schemas: tuple[tuple[tuple[str, ...], str, str], ...] = ()
    #: The expected cells drawn per instance: (row index, column index, the values it could have been; `suite.spaces`).
    random_cells: tuple[tuple[int, int, str], ...] = ()

    @property
    def device_path(self) -> str:
        relative = self.database if "/" in self.database else f"databases/{self.database}"
        return app_path(self.package, relative)

    def describe(self) -> str:
        if self.expect == "count":
            return f"{self.count} row{'s' if self.count != 1 else ''}"
        rows = show([list(row) for row in self.rows])
        if self.expect == "includes":
            return f"rows including {rows}"
        return f"exactly the rows {rows}{' in this order' if self.ordered else ''}"


def _sqlite_value(value: Any) -> Any:
    # SQLite has no booleans: true is stored as 1.
    return int(value) if isinstance(value, bool) else value


def problems(entry: Mapping[str, Any], where: str) -> list[str]:
    """The rules of a `sqlite` entry a schema cannot say: one of rows, includes or count; one of query or schemas; SELECT statements only."""
    found = []
    given = [key for key in ("rows", "includes", "count") if key in entry]
    if len(given) != 1:
        found.append(f"{where}: expected exactly one of rows, includes or count, got {', '.join(given) or 'none'}")
    if ("query" in entry) == ("schemas" in entry):
        found.append(f"{where}: expected exactly one of query or schemas (one query per known schema)")
    queries = [(f"{where}.query", entry["query"])] if "query" in entry else [
        (f"{where}.schemas[{index}].query", schema.get("query", ""))
        for index, schema in enumerate(entry.get("schemas") or []) if isinstance(schema, Mapping)]
    for key, query in queries:
        if not re.match(r"\s*(SELECT|WITH)\b", query, re.IGNORECASE):
            found.append(f"{key}: expected one SELECT (or WITH ... SELECT) statement, got {query[:80]!r}")
    return found


def random_refusals(entry: Mapping[str, Any], where: str) -> list[tuple[str, Any, str]]:
    """Where a random value may not be (the loader's rule): the query chooses the rows the check sees.

    Selecting on the value would hide the rows that hold its other candidates, so a flood of rows
    would pass; compared in `rows` or `includes`, every row the query returns is seen (`checks.records`).
    """
    why = ("the query chooses the rows the check sees, so rows holding its other candidates would never be looked at: "
           "return the column and compare it in rows or includes")
    queries = [(f"{where}.query", entry["query"])] if "query" in entry else [
        (f"{where}.schemas[{index}].query", schema.get("query")) for index, schema in enumerate(entry.get("schemas") or [])
        if isinstance(schema, Mapping)]
    return [(at, query, why) for at, query in queries]


def parse(entry: Mapping[str, Any], spaces: Mapping[str, str] | None = None) -> Spec:
    """A validated `verify.device` entry (and the spaces of its drawn values, `suite.spaces`) -> Spec."""
    expect = next(key for key in ("rows", "includes", "count") if key in entry)
    rows = tuple(tuple(_sqlite_value(v) for v in row) for row in entry.get(expect, ())) if expect != "count" else ()
    schemas = tuple((tuple(schema["tables"]), schema["query"], schema["provenOn"]) for schema in entry.get("schemas") or ())
    random_cells = tuple((i, j, (spaces or {})[f".{expect}[{i}][{j}]"]) for i, row in enumerate(rows) for j in range(len(row))
                         if f".{expect}[{i}][{j}]" in (spaces or {}))
    return Spec(entry["name"], entry["package"], entry["database"], entry.get("query", ""), expect, rows,
                entry.get("count"), bool(entry.get("ordered", False)), schemas, random_cells)


def pick_schema_query(tables: Sequence[str], schemas: Sequence[tuple[Sequence[str], str, str]]) -> str | None:
    """The query of the first known schema whose tables the database holds all of; None when none fits.

    Pure, so the doctor can judge a device's database against the same schemas.
    """
    held = set(tables)
    return next((query for needed, query, _proven in schemas if set(needed) <= held), None)


def unknown_schema(database: str, tables: Sequence[str], schemas: Sequence[tuple[Sequence[str], str, str]]) -> str:
    """The sentence for a database no known schema fits: what it holds and what each known schema needs."""
    known = "; ".join(f"{' + '.join(needed)} ({proven})" for needed, _query, proven in schemas)
    return (f"unknown {posixpath.basename(database)} schema: tables {', '.join(sorted(tables)) or 'none'}; "
            f"the known schemas need {known}")


def reads(spec: Spec) -> tuple[Read, ...]:
    return tuple(root_file_read(spec.device_path + suffix, binary=True) for suffix in ("", *COMPANIONS))


def _plain(value: Any) -> Any:
    return {"blob": value.hex()} if isinstance(value, (bytes, bytearray, memoryview)) else value


def _tables(connection: sqlite3.Connection) -> list[str]:
    try:
        return [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name")]
    except sqlite3.Error:
        return []


def run_query(files: Mapping[str, bytes], name: str, query: str,
              schemas: Sequence[tuple[Sequence[str], str, str]] = ()) -> dict[str, Any]:
    """Write a database (and its companions) to a private temporary directory, open it read-only, run one query.

    Args:
        files: Suffix ("", "-wal", "-journal") -> bytes, as pulled from the device.
        name: The database's file name (for messages).
        query: The suite's SELECT (unused when `schemas` is given).
        schemas: Known schemas (tables, query, provenOn): the tables the copy holds choose the query.

    Returns:
        `{"columns", "rows", "tables"}`, or `{"error": sentence}`.
    """
    with tempfile.TemporaryDirectory(prefix="agentbench-sqlite-") as scratch:
        base = Path(scratch) / (posixpath.basename(name) or "database")
        for suffix, data in files.items():
            Path(str(base) + suffix).write_bytes(data)
        try:
            connection = sqlite3.connect(f"{base.as_uri()}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            return snapshot_error(f"the copy of {name} does not open: {exc}")
        try:
            if schemas:
                tables = _tables(connection)
                if not tables:
                    connection.execute("SELECT 1 FROM sqlite_master").fetchall()  # a corrupt file says so here
                chosen = pick_schema_query(tables, schemas)
                if chosen is None:
                    return snapshot_error(unknown_schema(name, tables, schemas))
                query = chosen
            cursor = connection.execute(query)
            columns = [column[0] for column in cursor.description or ()]
            rows = [[_plain(value) for value in row] for row in cursor.fetchall()]
            found = {"columns": columns, "rows": rows, "tables": _tables(connection)}
            return {**found, "query": query} if schemas else found
        except sqlite3.DatabaseError as exc:
            return snapshot_error(_query_error(name, exc, _tables(connection), "-journal" in files))
        finally:
            connection.close()


def _query_error(name: str, exc: sqlite3.DatabaseError, tables: list[str], hot_journal: bool) -> str:
    message = str(exc)
    if "readonly" in message and hot_journal:
        return (f"{name} is locked: the app was writing it (a hot -journal file came with it), so the copy "
                "cannot be read consistently")
    if "not a database" in message or "malformed" in message:
        return f"{name} is corrupt or not an SQLite database ({message})"
    if "locked" in message or "busy" in message:
        return f"{name} is locked ({message})"
    return f"the query failed on a copy of {name}: {message} (tables: {', '.join(tables) or 'none'})"


def snapshot(spec: Spec, device: DeviceReads) -> dict[str, Any]:
    main, *companions = reads(spec)
    raw = device.get(main.key)
    problem = unreadable(raw, f"the database {spec.device_path}")
    if problem:
        return snapshot_error(problem)
    files = {"": raw.data or b""}  # type: ignore[union-attr]
    for suffix, read in zip(COMPANIONS, companions):
        extra: RawRead | None = device.get(read.key)
        if extra is not None and extra.status == 0 and extra.data:
            files[suffix] = extra.data
        elif extra is not None and extra.status not in (0, None) and not is_missing_file(extra):
            return snapshot_error(unreadable(extra, f"the database file {spec.device_path}{suffix}") or "")
    return run_query(files, spec.device_path, spec.query, spec.schemas)


def _rows_equal(expected: Sequence[Sequence[Any]], actual: Sequence[Sequence[Any]], ordered: bool) -> bool:
    if len(expected) != len(actual):
        return False
    if ordered:
        return all(_row_equal(e, a) for e, a in zip(expected, actual))
    remaining = list(actual)
    for row in expected:
        match = next((index for index, candidate in enumerate(remaining) if _row_equal(row, candidate)), None)
        if match is None:
            return False
        remaining.pop(match)
    return True


def _row_equal(expected: Sequence[Any], actual: Sequence[Any]) -> bool:
    return len(expected) == len(actual) and all(same_value(e, a) for e, a in zip(expected, actual))


def _includes(expected: Sequence[Sequence[Any]], actual: Sequence[Sequence[Any]]) -> list[Sequence[Any]]:
    """The expected rows missing from actual (as a multiset)."""
    remaining = list(actual)
    missing = []
    for row in expected:
        match = next((index for index, candidate in enumerate(remaining) if _row_equal(row, candidate)), None)
        if match is None:
            missing.append(row)
        else:
            remaining.pop(match)
    return missing


def cell_flood(spec: Spec, rows: Sequence[Sequence[Any]], columns: Sequence[str]) -> RecordFlood | None:
    """Rows holding another candidate of a drawn cell, among the rows whose other cells are the expected row's (`checks.records`)."""
    floods = []
    for i, j, space in spec.random_cells:
        expected = spec.rows[i]
        candidates = (row[j] for row in rows if len(row) == len(expected)
                      and all(same_value(expected[k], row[k]) for k in range(len(row)) if k != j))
        label = f"column {columns[j] if j < len(columns) else j + 1} of {show(list(expected))}"
        floods.append(flood_over(candidates, Matcher("equals", expected[j], random=True, space=space), expected[j], label, "row"))
    return first_flood(floods)


def validate(before: Mapping[str, Any] | None, after: Mapping[str, Any], spec: Spec, context: CheckContext) -> Check:
    """Judge the query's rows in the after-snapshot."""
    query = after.get("query") or spec.query or f"one query per known schema ({len(spec.schemas)})"
    expected = f"{spec.describe()} from `{cut(query, 160)}` on {spec.device_path}"
    if "error" in after:
        return failed(KIND, spec.name, expected, after["error"])
    rows = after["rows"]
    seen = f"the query returned {len(rows)} row{'s' if len(rows) != 1 else ''}: {show(rows)}"
    if spec.expect == "count":
        ok = len(rows) == spec.count
    elif spec.expect == "includes":
        missing = _includes(spec.rows, rows)
        ok = not missing
        if missing:
            seen += f"; missing {show([list(row) for row in missing])}"
    else:
        ok = _rows_equal(spec.rows, rows, spec.ordered)
    flood = cell_flood(spec, rows, after.get("columns") or ())
    if flood is not None:
        # Said first: the rows shown after it are cut to a few hundred characters.
        return failed(KIND, spec.name, expected, f"{flood.sentence()}; {seen}")
    return passed(KIND, spec.name, expected, seen) if ok else failed(KIND, spec.name, expected, seen)
