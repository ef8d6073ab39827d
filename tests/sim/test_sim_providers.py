"""The simulated phone's content providers through `content`: contacts, SMS, MediaStore, settings, and their SQLite files."""

from __future__ import annotations

import json
import sqlite3
import struct

import pytest

from pytest_agentbench.sim.apps.model import EVENT_LOG
from pytest_agentbench.sim.commands.content import parse_binding
from pytest_agentbench.sim.phone import Phone

CONTACTS_DB = "/data/data/com.android.providers.contacts/databases/contacts2.db"
SMS_DB = "/data/data/com.android.providers.telephony/databases/mmssms.db"
MEDIA_DB = "/data/data/com.android.providers.media.module/databases/external.db"
PLAYGROUND = "dev.jasonpearson.automobile.playground"


@pytest.fixture
def phone() -> Phone:
    return Phone()


def out(phone: Phone, line: str) -> str:
    result = phone.shell(line)
    assert result.exit_code == 0 and not result.stderr, result
    return result.stdout.decode()


def provider_error(phone: Phone, line: str) -> str:
    """The Java exception line `content` prints on stderr (it still exits 0, as Android's does)."""
    result = phone.shell(line)
    assert result.exit_code == 0, result
    lines = result.stderr.decode().splitlines()
    assert lines[0].startswith("Error while accessing provider:"), result
    return lines[1]


def open_copy(phone: Phone, path: str, tmp_path) -> sqlite3.Connection:
    """The database as `adb pull` would hand it over, opened read-only by Python's sqlite3."""
    local = tmp_path / path.rsplit("/", 1)[1]
    local.write_bytes(phone.fs.read(path))
    return sqlite3.connect(f"file:{local}?mode=ro", uri=True)


# Contacts.


def test_contact_from_content_insert_aggregates_with_name_and_phone(phone: Phone, tmp_path) -> None:
    out(phone, "content insert --uri content://com.android.contacts/raw_contacts --bind account_type:n: --bind account_name:n:")
    out(phone, "content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:1 "
               "--bind mimetype:s:vnd.android.cursor.item/name --bind data2:s:Ada --bind data3:s:Lovelace")
    out(phone, "content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:1 "
               "--bind mimetype:s:vnd.android.cursor.item/phone_v2 --bind data1:s:'(555) 123-4567' --bind data2:i:2")
    assert out(phone, "content query --uri content://com.android.contacts/contacts --projection _id:display_name:has_phone_number") == (
        "Row: 0 _id=1, display_name=Ada Lovelace, has_phone_number=1\n")
    assert out(phone, "content query --uri content://com.android.contacts/data/phones --projection contact_id:data1:data4") == (
        "Row: 0 contact_id=1, data1=(555) 123-4567, data4=+15551234567\n")
    assert out(phone, "content query --uri content://com.android.contacts/raw_contacts/1 --projection display_name_alt") == (
        "Row: 0 display_name_alt=Lovelace, Ada\n")
    with open_copy(phone, CONTACTS_DB, tmp_path) as db:
        assert db.execute("SELECT m.mimetype, d.data1 FROM data d JOIN mimetypes m ON d.mimetype_id = m._id "
                          "ORDER BY d._id").fetchall() == [("vnd.android.cursor.item/name", "Ada Lovelace"),
                                                           ("vnd.android.cursor.item/phone_v2", "(555) 123-4567")]


def test_contact_display_name_falls_back_to_company_then_phone(phone: Phone) -> None:
    raw = phone.add_contact("", "5551112222")
    assert phone.content_query(f"content://com.android.contacts/raw_contacts/{raw}", ["display_name"]) == [
        {"display_name": "5551112222"}]
    phone.content_insert("content://com.android.contacts/data",
                         {"raw_contact_id": raw, "mimetype": "vnd.android.cursor.item/organization", "data1": "Acme"})
    assert phone.content_query(f"content://com.android.contacts/raw_contacts/{raw}", ["display_name"]) == [
        {"display_name": "Acme"}]


def test_contact_update_where_and_delete(phone: Phone) -> None:
    raw = phone.add_contact("Bob", "5550001111", note="code 1234")
    out(phone, "content update --uri content://com.android.contacts/data --bind data1:s:'code 9999' "
               "--where \"mimetype='vnd.android.cursor.item/note'\"")
    assert out(phone, "content query --uri content://com.android.contacts/data --projection data1 "
                      "--where \"mimetype='vnd.android.cursor.item/note'\"") == "Row: 0 data1=code 9999\n"
    out(phone, f"content delete --uri content://com.android.contacts/raw_contacts/{raw}")
    assert out(phone, "content query --uri content://com.android.contacts/contacts") == "No result found.\n"
    assert out(phone, "content query --uri content://com.android.contacts/data") == "No result found.\n"


@pytest.mark.parametrize(("line", "error"), [
    ("content query --uri content://com.android.contacts/data --projection nope",
     "java.lang.IllegalArgumentException: Invalid column nope"),
    ("content query --uri content://com.android.contacts/contacts --where 'display_name =='",
     "android.database.sqlite.SQLiteException"),
    ("content query --uri content://com.android.contacts/bogus", "java.lang.IllegalArgumentException: Unknown URL"),
    ("content insert --uri content://com.android.contacts/data --bind data1:s:x",
     "java.lang.IllegalArgumentException: raw_contact_id is required"),
    ("content insert --uri content://com.android.contacts/raw_contacts --bind color:s:red",
     "android.database.sqlite.SQLiteException: table has no column named color"),
    ("content query --uri content://nope/x", "java.lang.IllegalStateException: Could not find provider: nope"),
    ("run-as dev.jasonpearson.automobile.playground content query --uri content://com.android.contacts/contacts",
     "java.lang.SecurityException: Permission Denial: reading"),
])
def test_provider_failures_are_java_exceptions_on_stderr(phone: Phone, line: str, error: str) -> None:
    assert provider_error(phone, line).startswith(error)


@pytest.mark.parametrize(("args", "message"), [
    ("", "[ERROR] Unsupported operation: None"), ("query", "[ERROR] Content provider URI not specified."),
    ("insert --uri content://sms", "[ERROR] Bindings not specified."),
    ("query --uri content://sms --bind a:s:b", "[ERROR] Unsupported argument: --bind"),
    ("insert --uri content://sms --bind a:q:b", "[ERROR] Unsupported type: q"),
    ("insert --uri content://sms --bind a:i:x", '[ERROR] For input string: "x"'),
    ("query --uri", "[ERROR] No value for argument: --uri"),
])
def test_content_usage_errors_print_usage_and_exit_0(phone: Phone, args: str, message: str) -> None:
    result = phone.shell(f"content {args}")
    assert result.exit_code == 0 and result.stdout.startswith(b"usage: adb shell content")
    assert message in result.stdout.decode().splitlines()[-1]


@pytest.mark.parametrize(("text", "parsed"), [("name:s:a:b\\:c", None), ("n:s:a\\:b", ("n", "a:b")), ("n:s:", ("n", "")),
                                              ("n:i:42", ("n", 42)), ("n:l:-3", ("n", -3)), ("n:b:TRUE", ("n", True)),
                                              ("n:d:1.5", ("n", 1.5)), ("n:n:", ("n", None))])
def test_binding_parser(text: str, parsed: tuple | None) -> None:
    if parsed is None:
        with pytest.raises(Exception, match="Binding not well formed"):
            parse_binding(text)
    else:
        assert parse_binding(text) == parsed


# SMS.


def test_shell_sms_writes_are_dropped_and_root_writes_land_in_threads(phone: Phone, tmp_path) -> None:
    assert out(phone, "content insert --uri content://sms/inbox --bind address:s:+15550100 --bind body:s:hi") == ""
    assert out(phone, "content query --uri content://sms") == "No result found.\n"
    out(phone, "su 0 content insert --uri content://sms/inbox --bind address:s:+15550100 --bind body:s:'first one'")
    out(phone, "su 0 content insert --uri content://sms/sent --bind address:s:5550100 --bind body:s:'my reply'")
    out(phone, "su 0 content insert --uri content://sms/inbox --bind address:s:+15550199 --bind body:s:other")
    rows = phone.content_query("content://sms", ["thread_id", "address", "body", "type"], sort="_id")
    assert [(r["thread_id"], r["type"]) for r in rows] == [(1, 1), (1, 2), (2, 1)]
    assert out(phone, "content query --uri content://sms/sent --projection body") == "Row: 0 body=my reply\n"
    assert out(phone, "content query --uri content://sms/conversations --projection thread_id:msg_count --sort thread_id") == (
        "Row: 0 thread_id=1, msg_count=2\nRow: 1 thread_id=2, msg_count=1\n")
    assert phone.shell("content delete --uri content://sms/conversations/1").exit_code == 0
    assert len(phone.content_query("content://sms")) == 3  # the shell's delete was dropped too
    out(phone, "su 0 content delete --uri content://sms/conversations/1")
    with open_copy(phone, SMS_DB, tmp_path) as db:
        assert db.execute("SELECT _id, message_count, snippet FROM threads").fetchall() == [(2, 1, "other")]


def test_receive_sms_seeds_inbox_messages(phone: Phone) -> None:
    message_id = phone.receive_sms("+15551230001", "Your table is ready", date_ms=1_700_000_000_000)
    assert phone.content_query(f"content://sms/{message_id}", ["address", "body", "date", "read", "type"]) == [
        {"address": "+15551230001", "body": "Your table is ready", "date": 1_700_000_000_000, "read": 0, "type": 1}]


# MediaStore.


def test_add_photo_writes_a_png_whose_size_matches_its_media_row(phone: Phone) -> None:
    media_id = phone.add_photo(1200, 800, name="beach.png")
    (row,) = phone.content_query("content://media/external/images/media",
                                 ["_id", "_data", "_display_name", "relative_path", "width", "height", "mime_type", "_size"])
    assert row["_id"] == media_id and row["_data"] == "/storage/emulated/0/Pictures/beach.png"
    assert (row["width"], row["height"], row["mime_type"], row["relative_path"]) == (1200, 800, "image/png", "Pictures/")
    data = phone.shell("cat /sdcard/Pictures/beach.png").stdout
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24]) == (1200, 800)
    assert row["_size"] == len(data)


def test_media_scan_broadcast_and_delete_remove_the_file(phone: Phone) -> None:
    phone.add_photo(10, 20, name="a.png", relative_path="DCIM/Camera")
    out(phone, "mkdir -p /sdcard/Download && cp /sdcard/DCIM/Camera/a.png /sdcard/Download/b.png")
    assert len(phone.content_query("content://media/external/images/media")) == 1
    out(phone, "am broadcast -a android.intent.action.MEDIA_SCANNER_SCAN_FILE -d file:///sdcard/Download/b.png")
    rows = phone.content_query("content://media/external_primary/images/media", ["_id", "relative_path"], sort="_id")
    assert [row["relative_path"] for row in rows] == ["DCIM/Camera/", "Download/"]
    out(phone, f"content delete --uri content://media/external/images/media/{rows[1]['_id']}")
    assert not phone.fs.exists("/sdcard/Download/b.png")
    assert len(phone.content_query("content://media/external/images/media")) == 1


def test_a_corrupt_database_is_a_provider_error_not_a_crash(phone: Phone) -> None:
    phone.add_photo(5, 5)
    phone.fs.write(MEDIA_DB, b"this is not sqlite" * 100)
    assert provider_error(phone, "content query --uri content://media/external/images/media").startswith(
        "android.database.sqlite.SQLiteDatabaseCorruptException")


# Settings through the provider.


def test_settings_provider_query_where_update_delete(phone: Phone) -> None:
    assert out(phone, "content query --uri content://settings/global --where \"name='wifi_on'\"") == "Row: 0 name=wifi_on, value=0\n"
    out(phone, "content update --uri content://settings/global --bind value:s:1 --where \"name='wifi_on'\"")
    assert out(phone, "settings get global wifi_on") == "1\n"
    out(phone, "content delete --uri content://settings/global --where \"name='wifi_on'\"")
    assert out(phone, "settings get global wifi_on") == "null\n"


# App event logs.


def test_event_log_is_json_lines_in_private_storage(phone: Phone) -> None:
    phone.launch(PLAYGROUND)
    ctx = phone.context(PLAYGROUND)
    ctx.log_event("invalid_submit", reason="email")
    ctx.log_event("submit_success")
    text = phone.shell(f"run-as {PLAYGROUND} cat {EVENT_LOG}").stdout.decode()
    records = [json.loads(line) for line in text.splitlines()]
    assert [r["event"] for r in records] == ["invalid_submit", "submit_success"]
    assert records[0]["reason"] == "email" and records[0]["screen"] == ctx.runtime.route
    assert records[0]["ts"] <= records[1]["ts"]
    assert phone.shell(f"cat /data/data/{PLAYGROUND}/{EVENT_LOG}").exit_code == 1
