"""A copy of an app database (Messages' `bugle_db`) + the suite's `sqlite` check -> whether one of the check's known schemas fits it.

The known schemas are the check's own (`schemas: [{tables, query, provenOn}]`, checks/sqlite.py):
`sqlite_master` names the tables the copy holds and `pick_schema_query` chooses the query the
check would run, so the doctor's sentence for a database no schema fits is the check's own
"unknown bugle_db schema: tables ...", with the remedy. A check with one plain `query` is judged
by the tables that query reads (after FROM and JOIN).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pytest_agentbench.checks import sqlite
from pytest_agentbench.checks.base import RawRead, Read, cut, is_missing_file
from pytest_agentbench.device.rootshell import with_su_form

_TABLES_QUERY = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name"
_TABLE_AFTER = re.compile(r"\b(?:FROM|JOIN)\s+([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)


@dataclass(frozen=True)
class SchemaResult:
    """The tables found (None: no database yet), the chosen schema's provenOn (None: none fits), the problem (None: one fits)."""

    tables: tuple[str, ...] | None
    schema: str | None
    problem: str | None


def query_tables(query: str) -> frozenset[str]:
    """The tables a SELECT reads: every name after FROM or JOIN."""
    return frozenset(match[1] for match in _TABLE_AFTER.finditer(query))


def check_schemas(spec: sqlite.Spec) -> tuple[tuple[tuple[str, ...], str, str], ...]:
    """The check's known schemas; a check with one plain `query` has one: the tables that query reads."""
    if spec.schemas:
        return spec.schemas
    return ((tuple(sorted(query_tables(spec.query))), spec.query, "the check's only query"),)


def database_reads(spec: sqlite.Spec, form: str) -> tuple[Read, ...]:
    """The check's own reads of the database and its companions (`su 0 base64 ...`), in the device's su form."""
    return tuple(Read(read.key, with_su_form(read.script, form), read.binary)  # type: ignore[arg-type]
                 for read in sqlite.reads(spec))


def database_tables(spec: sqlite.Spec, reads: Mapping[str, RawRead]) -> tuple[tuple[str, ...] | None, str | None]:
    """The database's copy (with its `-wal`/`-journal`) -> (its tables, None), (None, None) when it does not exist, or (None, problem)."""
    name = spec.database
    main, *companions = sqlite.reads(spec)
    raw = reads.get(main.key)
    if raw is None or raw.status is None:
        return None, f"{name} could not be read: the device's answer stopped"
    if raw.data is None:
        if is_missing_file(raw):
            return None, None
        return None, f"{name} could not be read as root: {cut(raw.text, 160) or f'exit {raw.status}'}"
    files = {"": raw.data}
    for suffix, read in zip(sqlite.COMPANIONS, companions):
        extra = reads.get(read.key)
        if extra is not None and extra.status == 0 and extra.data:
            files[suffix] = extra.data
    result = sqlite.run_query(files, name, _TABLES_QUERY)
    if "error" in result:
        return None, f"{result['error']}: clear Messages' data (`pm clear`) so it rebuilds the database"
    return tuple(row[0] for row in result["rows"]), None


def schema_line(tables: Iterable[str] | None, spec: sqlite.Spec, suite_name: str = "the suite") -> SchemaResult:
    """Whether a database with these tables fits one of the check's known schemas, and which.

    Args:
        tables: The database's tables (from `sqlite_master`); None when the app has not created it yet.
        spec: The `sqlite` check (checks/sqlite.py `parse`).
        suite_name: The suite whose check it is (named in the remedy).
    """
    if tables is None:
        # No database yet (the app not started since its data was cleared): preflight starts it;
        # nothing to compare until then.
        return SchemaResult(None, None, None)
    found = tuple(sorted(set(tables)))
    schemas = check_schemas(spec)
    chosen = sqlite.pick_schema_query(found, schemas)  # the query the check would run on this database
    if chosen is not None:
        return SchemaResult(found, next(proven for _needed, query, proven in schemas if query == chosen), None)
    return SchemaResult(found, None, (
        f"{sqlite.unknown_schema(spec.database, found, schemas)}: add a schema for this app version to "
        f"{suite_name}'s check {spec.name} (`schemas:`, docs/checks.md) and prove it (`--agentbench-prove -k {suite_name}`)"))
