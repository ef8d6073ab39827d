"""Pure tables for the check kinds that read app files as root: sharedPreferences, jsonFile, sqlite, eventLog."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from checkcases import blob, database, fail, judge, ok, prefs_xml

from pytest_agentbench.checks.base import RawRead

NO_SU = fail("/system/bin/sh: su: inaccessible or not found\n", 127)
CLOCK = "com.android.deskclock"


def prefs(key: str = "world_clocks", **matcher: object) -> dict:
    return {"kind": "sharedPreferences", "name": "clock", "package": CLOCK, "file": "clocks", "key": key, **matcher}


LONDON_HOME = prefs_xml('    <string name="home_time_zone">Europe/London</string>', '    <set name="world_clocks" />')
LONDON_LISTED = prefs_xml('    <string name="home_time_zone">Europe/London</string>',
                          '    <set name="world_clocks">', "        <string>Europe/London</string>", "    </set>")


@pytest.mark.parametrize(
    ("entry", "output", "passed", "seen"),
    [
        # Seed 001: a freshly reset Clock whose home zone is Europe/London must not pass: only the list counts.
        (prefs(contains="Europe/London"), LONDON_HOME, False, "world_clocks is <set> []"),
        (prefs(contains="Europe/London"), LONDON_LISTED, True, 'world_clocks is <set> ["Europe/London"]'),
        (prefs(contains="Europe/London", type="set"), LONDON_LISTED, True, "world_clocks"),
        (prefs("snooze", equals=10), prefs_xml('<int name="snooze" value="10" />'), True, "snooze is <int> 10"),
        (prefs("snooze", equals=10, type="long"), prefs_xml('<int name="snooze" value="10" />'), False, "snooze is <int> 10"),
        # Typed: the string "true" is not the boolean true, as getBoolean would not read it.
        (prefs("on", equals=True), prefs_xml('<string name="on">true</string>'), False, 'on is <string> "true"'),
        (prefs("on", equals=True), prefs_xml('<boolean name="on" value="true" />'), True, "on is <boolean> true"),
        (prefs("on", exists=False), prefs_xml(), True, "on is not in the file"),
        (prefs("name", matches="^Tok"), prefs_xml('<string name="name">Tokyo</string>'), True, "Tokyo"),
        ({"kind": "sharedPreferences", "name": "clock", "package": CLOCK, "file": "clocks.xml",
          "anyOf": [{"key": "a", "equals": True}, {"key": "b", "equals": True}]},
         prefs_xml('<boolean name="a" value="false" />', '<boolean name="b" value="true" />'), True, "a is <boolean> false; b"),
    ],
    ids=["london-home-zone-is-not-a-world-clock", "london-in-the-list", "typed-set", "int", "int-is-not-long",
         "string-true-is-not-boolean", "boolean", "absent", "regex", "any-of-second"],
)
def test_shared_preferences(entry: dict, output: str, passed: bool, seen: str) -> None:
    check = judge(entry, [ok(output)])
    assert (check.passed, check.kind, check.name) == (passed, "sharedPreferences", "clock"), check
    assert seen in check.seen


@pytest.mark.parametrize(
    ("output", "says"),
    [
        (fail("cat: /data/data/com.android.deskclock/shared_prefs/clocks.xml: No such file or directory\n"),
         "the preferences file /data/data/com.android.deskclock/shared_prefs/clocks.xml does not exist"),
        (NO_SU, "needs root and this device has no `su`"),
        (ok("not xml at all"), "is not SharedPreferences XML"),
        (ok("<html/>"), "the root element is <html>"),
        (ok(prefs_xml('<int name="world_clocks" value="x" />')), "holds 'x', which is not a int"),
        (RawRead(None, "partial"), "stopped before this read finished"),
        (None, "the device read did not include it"),
    ],
    ids=["missing-file", "user-build", "not-xml", "not-a-map", "bad-int", "cut-off", "not-read"],
)
def test_shared_preferences_unreadable_is_a_failed_check_with_a_sentence(output: RawRead | None, says: str) -> None:
    check = judge(prefs(contains="Asia/Tokyo"), [output])
    assert not check.passed and says in check.seen, check.seen


CHROME = "com.android.chrome"
SECURE = {"kind": "jsonFile", "name": "secure", "package": CHROME, "file": "app_chrome/Default/Preferences",
          "anyOf": [{"path": "https_first_balanced_mode_enabled", "equals": True},
                    {"path": "https_only_mode_enabled", "equals": True}]}
ENGINE = {"kind": "jsonFile", "name": "engine", "package": CHROME, "file": "app_chrome/Default/Preferences",
          "path": "default_search_provider_data.template_url_data.keyword", "equals": "duckduckgo.com"}


@pytest.mark.parametrize(
    ("entry", "document", "passed", "seen"),
    [
        # Seed 001: the emulator's Chrome keeps the switch in the newer key; either true passes.
        (SECURE, {"https_first_balanced_mode_enabled": True}, True, "https_first_balanced_mode_enabled is true"),
        (SECURE, {"https_only_mode_enabled": True}, True, "https_only_mode_enabled is true"),
        (SECURE, {"https_first_balanced_mode_enabled": False, "https_only_mode_enabled": False}, False,
         "https_first_balanced_mode_enabled is false; https_only_mode_enabled is false"),
        (SECURE, {"https_only_mode_enabled": "true"}, False, 'https_only_mode_enabled is "true"'),
        (SECURE, {}, False, "https_first_balanced_mode_enabled is not in the file"),
        (ENGINE, {"default_search_provider_data": {"template_url_data": {"keyword": "duckduckgo.com"}}}, True, "duckduckgo.com"),
        (ENGINE, {"default_search_provider_data": {"template_url_data": {"keyword": "google.com"}}}, False, '"google.com"'),
        ({**ENGINE, "path": ["profile", "names", 1], "equals": "b"}, {"profile": {"names": ["a", "b"]}}, True, '"b"'),
    ],
    ids=["balanced-key", "older-key", "both-false", "string-true", "neither-key", "dotted-path", "wrong-engine", "list-path"],
)
def test_json_file(entry: dict, document: dict, passed: bool, seen: str) -> None:
    check = judge(entry, [ok(json.dumps(document))])
    assert check.passed is passed and seen in check.seen, check


@pytest.mark.parametrize(
    ("output", "says"),
    [
        # Seed 001: a missing Chrome Preferences file crashed the checker; it fails with a message.
        (fail("cat: /data/data/com.android.chrome/app_chrome/Default/Preferences: No such file or directory\n"),
         "the JSON file /data/data/com.android.chrome/app_chrome/Default/Preferences does not exist"),
        (ok('{"https_only_mode_enabled": tru'), "is not JSON"),
        (NO_SU, "needs root"),
        (fail("cat: /data/data/com.android.chrome/app_chrome/Default/Preferences: Permission denied\n"), "permission denied"),
    ],
    ids=["missing-preferences", "truncated-json", "user-build", "denied"],
)
def test_json_file_unreadable(output: RawRead, says: str) -> None:
    check = judge(SECURE, [output])
    assert not check.passed and says in check.seen, check.seen


MESSAGES = "com.google.android.apps.messaging"
BUGLE = (
    "CREATE TABLE conversations (_id INTEGER PRIMARY KEY, name TEXT, archived INTEGER);"
    "CREATE TABLE pinned_conversations (conversation_id INTEGER, pinned_at INTEGER);"
    "INSERT INTO conversations VALUES (1, 'Alice', 0), (2, 'Bob', 1), (3, 'Carol', 0);"
)
JOINED = "SELECT c.name FROM conversations c JOIN pinned_conversations p ON p.conversation_id = c._id"


def sqlite_entry(query: str = JOINED, **expect: object) -> dict:
    return {"kind": "sqlite", "name": "pinned", "package": MESSAGES, "database": "bugle_db", "query": query,
            **(expect or {"rows": [["Alice"]]})}


@pytest.mark.parametrize(
    ("entry", "script", "passed", "seen"),
    [
        # Seed 001: pins live in their own table; the join finds them.
        (sqlite_entry(), BUGLE + "INSERT INTO pinned_conversations VALUES (1, 5);", True, '[["Alice"]]'),
        (sqlite_entry(), BUGLE, False, "the query returned 0 rows"),
        # ... and a check looking for a pin column in conversations could never pass: it says so.
        (sqlite_entry("SELECT name FROM conversations WHERE pinned = 1"), BUGLE + "INSERT INTO pinned_conversations VALUES (1, 5);",
         False, "no such column: pinned (tables: conversations, pinned_conversations)"),
        (sqlite_entry("SELECT name FROM conversations WHERE archived = 1", rows=[["Bob"]]), BUGLE, True, '[["Bob"]]'),
        (sqlite_entry("SELECT name FROM conversations", count=3), BUGLE, True, "3 rows"),
        (sqlite_entry("SELECT name FROM conversations", includes=[["Carol"], ["Alice"]]), BUGLE, True, "3 rows"),
        (sqlite_entry("SELECT name FROM conversations", includes=[["Dave"]]), BUGLE, False, 'missing [["Dave"]]'),
        (sqlite_entry("SELECT name FROM conversations ORDER BY name DESC", rows=[["Alice"], ["Bob"], ["Carol"]]), BUGLE, True, "Carol"),
        (sqlite_entry("SELECT name FROM conversations ORDER BY name DESC", rows=[["Alice"], ["Bob"], ["Carol"]], ordered=True),
         BUGLE, False, '[["Carol"], ["Bob"], ["Alice"]]'),
        (sqlite_entry("SELECT archived = 1 FROM conversations WHERE _id = 2", rows=[[True]]), BUGLE, True, "[[1]]"),
    ],
    ids=["pins-joined", "nothing-pinned", "pin-column-does-not-exist", "archived", "count", "includes", "includes-missing",
         "unordered", "ordered", "boolean-is-1"],
)
def test_sqlite(entry: dict, script: str, passed: bool, seen: str) -> None:
    check = judge(entry, [blob(database(script)), None, None])
    assert check.passed is passed and seen in check.seen, check


def _wal_files(tmp_path: Path) -> tuple[bytes, bytes]:
    path = tmp_path / "bugle_db"
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode=wal")
    connection.executescript(BUGLE)
    connection.execute("INSERT INTO pinned_conversations VALUES (3, 9)")
    connection.commit()
    data, wal = path.read_bytes(), Path(str(path) + "-wal").read_bytes()
    connection.close()
    return data, wal


def test_sqlite_reads_what_is_still_in_the_write_ahead_log(tmp_path: Path) -> None:
    data, wal = _wal_files(tmp_path)
    assert wal, "the test needs rows that live only in the -wal file"
    missing = fail("base64: /data/data/x/databases/bugle_db-journal: No such file or directory\n")
    entry = sqlite_entry(rows=[["Carol"]])
    assert judge(entry, [blob(data), blob(wal), missing]).passed
    # Without its -wal the main file does not even have the tables yet.
    assert "no such table" in judge(entry, [blob(data), missing, missing]).seen


def _hot_journal(tmp_path: Path) -> tuple[bytes, bytes]:
    import subprocess
    import sys

    path = tmp_path / "bugle_db"
    sqlite3.connect(path).executescript(BUGLE)
    code = ("import sqlite3, os, sys\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\nc.execute('pragma cache_size=1')\n"
            "c.execute('begin')\nfor i in range(3000): c.execute('insert into conversations (name) values (?)', (str(i),))\n"
            "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)
    return path.read_bytes(), Path(str(path) + "-journal").read_bytes()


@pytest.mark.parametrize(
    ("outputs", "says"),
    [
        ([fail("base64: /data/data/com.google.android.apps.messaging/databases/bugle_db: No such file or directory\n"), None, None],
         "the database /data/data/com.google.android.apps.messaging/databases/bugle_db does not exist"),
        ([blob(b"this is not a database" * 50), None, None], "is corrupt or not an SQLite database"),
        ([NO_SU, NO_SU, NO_SU], "needs root"),
        ([RawRead(1, "the device's base64 output did not decode"), None, None], "did not decode"),
        ([blob(database(BUGLE)), fail("base64: bugle_db-wal: Permission denied\n"), None], "bugle_db-wal could not be read"),
    ],
    ids=["missing", "corrupt", "user-build", "undecodable", "wal-denied"],
)
def test_sqlite_unreadable(outputs: list, says: str) -> None:
    check = judge(sqlite_entry(), outputs)
    assert not check.passed and says in check.seen, check.seen


def test_sqlite_database_the_app_was_writing_is_locked(tmp_path: Path) -> None:
    data, journal = _hot_journal(tmp_path)
    check = judge(sqlite_entry(), [blob(data), None, blob(journal)])
    assert not check.passed and "is locked: the app was writing it" in check.seen, check.seen


def events(*records: dict) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


TESTBED = "com.example.testbed"
ORDER = {"kind": "eventLog", "name": "order", "package": TESTBED,
         "sequence": [{"event": "submit", "valid": False}, {"event": "create_ignored"}, {"event": "submit", "valid": True}]}
E1 = {"ts": 1, "event": "submit", "valid": False}
E2 = {"ts": 2, "event": "create_ignored"}
E3 = {"ts": 3, "event": "submit", "valid": True}
BACK = {"ts": 4, "event": "back"}


@pytest.mark.parametrize(
    ("before", "after", "passed", "seen"),
    [
        ("", events(E1, BACK, E2, E3), True, "4 new events"),
        ("", events(E1, E3, E2), False, "no new event {event: submit, valid: true} after step 2"),
        ("", events(E3), False, "no new event {event: submit, valid: false} at all"),
        # Events from before the run never count: the run must produce the whole sequence itself.
        (events(E1, E2), events(E1, E2, E3), False, "1 new event: submit"),
        (events(E1), events(E1, E1, E2, E3), True, "3 new events"),
        # The app cleared its log (pm clear): events newer than the last one seen before count.
        (events({"ts": 10, "event": "old"}), events({**E1, "ts": 11}, {**E2, "ts": 12}, {**E3, "ts": 13}), True, "3 new"),
        ("", "not json\n" + events(E1, E2, E3) + "[1]\n", True, "3 new events"),
    ],
    ids=["in-order-with-noise", "out-of-order", "only-the-last", "before-events-do-not-count", "repeat-after-before",
         "log-replaced", "bad-lines-skipped"],
)
def test_event_log_ordered_subsequence_among_new_events(before: str, after: str, passed: bool, seen: str) -> None:
    check = judge(ORDER, [ok(after)], [ok(before)] if before else [fail("cat: x: No such file or directory\n")])
    assert check.passed is passed and seen in check.seen, check


def test_event_log_missing_is_no_events_and_unreadable_is_a_sentence() -> None:
    missing = fail(f"cat: /data/data/{TESTBED}/files/events.jsonl: No such file or directory\n")
    check = judge(ORDER, [missing], [missing])
    assert not check.passed and "does not exist" in check.seen and "0 new events" in check.seen
    assert "needs root" in judge(ORDER, [NO_SU], [NO_SU]).seen


CODE = {"kind": "sharedPreferences", "name": "pickup-code", "package": TESTBED, "file": "pickup", "key": "code", "inAnswer": True}


# issue 19 D: the value must be the whole value of a closing `KEY: value` line; a code anywhere
# in the text (a dump of every six-digit code, a sentence) does not count.
ALL_CODES = "CODES: " + " ".join(f"{n:06d}" for n in range(100000, 100100)) + " 482913"


@pytest.mark.parametrize(
    ("answer", "passed", "why"),
    [
        ("PICKUP_CODE: 482913", True, None),
        ("The code is on the Pickup screen.\n\n**PICKUP_CODE:** `482913`", True, None),
        ("PICKUP_CODE: 482913.", True, None),
        ("The pickup code is 482913.", False, "does not end with a KEY: value line"),
        ("PICKUP_CODE: 4829130", False, "no closing KEY: value line"),       # a longer number is not the code
        ("PICKUP_CODE: 123456", False, "no closing KEY: value line"),        # a plausible answer without the device's code
        ("PICKUP_CODE: 482913 or 123456", False, "no closing KEY: value line"),
        (ALL_CODES, False, "no closing KEY: value line"),
        ("PICKUP_CODE: 123456\nPICKUP_CODE: 482913", False, "more than once"),
        ("PICKUP_CODE: 482913\nThat is all.", False, "does not end with a KEY: value line"),
        (None, False, "there is no final answer"),
    ],
    ids=["key-line", "markdown", "trailing-period", "sentence", "longer-number", "plausible-guess", "two-values",
         "code-dump", "key-twice", "text-after", "no-answer"],
)
def test_a_value_random_per_run_is_read_from_the_device_and_must_be_the_answer_line_value(
        answer: str | None, passed: bool, why: str | None) -> None:
    check = judge(CODE, [ok(prefs_xml('<string name="code">482913</string>'))], answer=answer)
    assert check.passed is passed, check
    assert check.expected.startswith("code is the value of a closing KEY: value line of the final answer")
    if why:
        assert why in check.seen, check.seen
