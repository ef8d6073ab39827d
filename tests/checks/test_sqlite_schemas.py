"""`sqlite` checks with one query per known schema: the tables a database holds choose the query; no fit is a sentence, never an SQL error."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from suitefiles import problems, suite_with

from pytest_agentbench.checks.base import CheckContext
from pytest_agentbench.checks.sqlite import parse, pick_schema_query, run_query, validate

PINS = (("conversations", "conversation_pins"), "SELECT c.participant_normalized_destination FROM conversations c "
        "JOIN conversation_pins p ON p.conversation_id = c._id", "the simulated Messages only")
COLUMN = (("conversations",), "SELECT participant_normalized_destination FROM conversations WHERE pinned = 1", "a test schema")


def _database(tmp_path: Path, statements: list[str]) -> bytes:
    path = tmp_path / "bugle_db"
    with sqlite3.connect(path) as connection:
        for statement in statements:
            connection.execute(statement)
    data = path.read_bytes()
    path.unlink()
    return data


def test_the_first_schema_whose_tables_are_all_there_is_chosen() -> None:
    assert pick_schema_query(["conversations", "conversation_pins", "messages"], [PINS, COLUMN]) == PINS[1]
    assert pick_schema_query(["conversations", "messages"], [PINS, COLUMN]) == COLUMN[1]
    assert pick_schema_query(["messages"], [PINS, COLUMN]) is None


def test_a_foreign_schema_fails_with_a_sentence_naming_its_tables(tmp_path: Path) -> None:
    foreign = _database(tmp_path, ["CREATE TABLE conversations (_id INTEGER, archive_status INTEGER, "
                                   "participant_normalized_destination TEXT)", "CREATE TABLE messages (_id INTEGER)"])
    result = run_query({"": foreign}, "/data/data/com.google.android.apps.messaging/databases/bugle_db", "", [PINS])
    assert result["error"].startswith("unknown bugle_db schema: tables conversations, messages;")
    assert "conversations + conversation_pins (the simulated Messages only)" in result["error"]
    spec = parse({"name": "pinned", "package": "com.google.android.apps.messaging", "database": "bugle_db",
                  "schemas": [{"tables": list(PINS[0]), "query": PINS[1], "provenOn": PINS[2]}], "rows": [["+1"]]})
    check = validate(None, result, spec, CheckContext())
    assert not check.passed and "unknown bugle_db schema" in check.seen


def test_a_known_schema_runs_its_query_and_says_which(tmp_path: Path) -> None:
    known = _database(tmp_path, ["CREATE TABLE conversations (_id INTEGER, participant_normalized_destination TEXT)",
                                 "CREATE TABLE conversation_pins (conversation_id INTEGER)",
                                 "INSERT INTO conversations VALUES (1, '+15551230001'), (2, '+15551230002')",
                                 "INSERT INTO conversation_pins VALUES (1)"])
    result = run_query({"": known}, "bugle_db", "", [COLUMN, PINS][::-1])
    assert result["rows"] == [["+15551230001"]] and result["query"] == PINS[1]
    spec = parse({"name": "pinned", "package": "p.q", "database": "bugle_db",
                  "schemas": [{"tables": list(PINS[0]), "query": PINS[1], "provenOn": PINS[2]}], "rows": [["+15551230001"]]})
    assert validate(None, result, spec, CheckContext()).passed
    spec_wrong = parse({"name": "pinned", "package": "p.q", "database": "bugle_db",
                        "schemas": [{"tables": list(PINS[0]), "query": PINS[1], "provenOn": PINS[2]}], "rows": [["+15551230002"]]})
    assert not validate(None, result, spec_wrong, CheckContext()).passed


def test_a_corrupt_file_with_schemas_is_still_called_corrupt() -> None:
    result = run_query({"": b"not a database at all" * 100}, "bugle_db", "", [PINS])
    assert "corrupt or not an SQLite database" in result["error"]


SCHEMA_ENTRY = {"tables": ["conversations", "conversation_pins"], "query": PINS[1], "provenOn": "the simulated Messages only"}
BASE = {"kind": "sqlite", "name": "pinned", "package": "com.google.android.apps.messaging", "database": "bugle_db", "rows": [["+1"]]}


@pytest.mark.parametrize(("entry", "message"), [
    ({**BASE}, "verify.device[0]: expected exactly one of query or schemas"),
    ({**BASE, "query": "SELECT 1", "schemas": [SCHEMA_ENTRY]}, "verify.device[0]: expected exactly one of query or schemas"),
    ({**BASE, "schemas": [{**SCHEMA_ENTRY, "query": "DELETE FROM conversations"}]},
     "verify.device[0].schemas[0].query: expected one SELECT (or WITH ... SELECT) statement, got 'DELETE FROM conversations'"),
    ({**BASE, "schemas": [{k: v for k, v in SCHEMA_ENTRY.items() if k != "provenOn"}]}, "verify.device[0].schemas[0].provenOn: required key is missing"),
    ({**BASE, "schemas": [{**SCHEMA_ENTRY, "tables": []}]}, "verify.device[0].schemas[0].tables"),
], ids=["neither", "both", "not-a-select", "no-proven-on", "no-tables"])
def test_bad_schemas_name_the_key_and_expectation(tmp_path: Path, entry: dict, message: str) -> None:
    text = problems(tmp_path, suite_with(device=[entry]))
    assert message in text, text


def test_also_uses_lists_package_names(tmp_path: Path) -> None:
    data = suite_with()
    data["app"] = {"packageName": "com.example.app", "alsoUses": ["contacts"]}
    text = problems(tmp_path, data)
    assert "app.alsoUses[0]: expected an Android package name such as com.android.contacts, got 'contacts'" in text, text
