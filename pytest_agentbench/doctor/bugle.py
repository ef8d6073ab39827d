"""A copy of Messages' `bugle_db` + the `sqlite` check's query -> whether the query can read it (the tables it joins are there).

`sqlite_master` names the tables the database holds; the query names the tables it reads (after
FROM and JOIN). A database without one of them is a schema the check was not written for: the
doctor says which tables are missing and which it has, and the check would fail on it with a
sentence, never pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pytest_agentbench.checks.base import RawRead, cut, is_missing_file
from pytest_agentbench.checks.sqlite import run_query

_TABLES_QUERY = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name"
_TABLE_AFTER = re.compile(r"\b(?:FROM|JOIN)\s+([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)

#: The bugle_db schemas the checks were proven on: name -> the tables a query may rely on.
KNOWN_SCHEMAS: Mapping[str, frozenset[str]] = {
    # sim/apps/messages.py: pins in their own table. No public description of a real bugle_db
    # has conversation_pins (issue 22): a real image needs its own query, proven there.
    "simulated Messages 20240205": frozenset({"conversations", "participants", "conversation_participants",
                                              "messages", "parts", "conversation_pins"}),
}


@dataclass(frozen=True)
class SchemaResult:
    """The tables found (None: no database to read) and the problem (None: the query's tables are all there)."""

    tables: tuple[str, ...] | None
    schema: str | None
    problem: str | None


def query_tables(query: str) -> frozenset[str]:
    """The tables a SELECT reads: every name after FROM or JOIN."""
    return frozenset(match[1] for match in _TABLE_AFTER.finditer(query))


def database_tables(raw: RawRead | None, name: str = "bugle_db") -> tuple[tuple[str, ...] | None, str | None]:
    """A root base64 read of the database -> (its tables, None), (None, None) when it does not exist, or (None, problem)."""
    if raw is None or raw.status is None:
        return None, f"{name} could not be read: the device's answer stopped"
    if raw.data is None:
        if is_missing_file(raw):
            return None, None
        return None, f"{name} could not be read as root: {cut(raw.text, 160) or f'exit {raw.status}'}"
    result = run_query({"": raw.data}, name, _TABLES_QUERY)
    if "error" in result:
        return None, f"{result['error']}: clear Messages' data (`pm clear`) so it rebuilds the database"
    return tuple(row[0] for row in result["rows"]), None


def schema_line(tables: Iterable[str] | None, query: str, suite_name: str = "the suite") -> SchemaResult:
    """Whether a bugle_db with these tables can answer the check's query, and which known schema it is.

    Args:
        tables: The database's tables (from `sqlite_master`); None when Messages has not created it yet.
        query: The `sqlite` check's query.
        suite_name: The suite whose check it is (named in the remedy).
    """
    if tables is None:
        # No bugle_db yet (Messages not started since its data was cleared): preflight starts it;
        # nothing to compare until then.
        return SchemaResult(None, None, None)
    found = tuple(sorted(set(tables)))
    schema = next((name for name, known in KNOWN_SCHEMAS.items() if known <= set(found)), None)
    missing = sorted(query_tables(query) - set(found))
    if missing:
        return SchemaResult(found, schema, (
            f"unknown bugle_db schema: tables {', '.join(found) or 'none'}; the check's query needs "
            f"{', '.join(missing)}: rewrite {suite_name}'s query for this Messages version and prove it "
            f"(`--agentbench-prove -k {suite_name}`); known schemas: {', '.join(KNOWN_SCHEMAS)}"))
    return SchemaResult(found, schema, None)
