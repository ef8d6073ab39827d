"""The batched reader: reads -> one script -> sections -> RawReads (pure), against an in-process phone, and through the real adb server."""

from __future__ import annotations

import base64
import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from adbserver import start_private_adb_server
from checklab import FIVE_CHECKS, LAB, lab_phone
from phoneadb import PhoneAdb

from pytest_agentbench.checks import CheckContext, DeviceReads, evaluate, parse_device_checks, suite_checks
from pytest_agentbench.checks.base import RawRead, Read, root_file_read
from pytest_agentbench.checks.read import batch_script, load_reads, read_device, save_reads, split_batch
from pytest_agentbench.device.capture import capture_script, split_capture
from pytest_agentbench.device.shellscript import Script, sh
from pytest_agentbench.sim.fleet import SimFleet

NONCE = "c0ffee"
A = Read("a", sh("echo", "alpha"))
B = Read("b", sh("cat", "/nope"))
BIN = Read("bin", sh("base64", "/x"), binary=True)


def mark(kind: str, index: int, status: int | None = None) -> str:
    return f"@@agentbench-read@@{NONCE} {kind} {index}" + (f" {status}" if status is not None else "")


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (f"{mark('begin', 0)}\nalpha\n{mark('end', 0, 0)}\n{mark('begin', 1)}\ncat: /nope: No such file\n{mark('end', 1, 1)}\n",
         {"a": RawRead(0, "alpha\n"), "b": RawRead(1, "cat: /nope: No such file\n")}),
        # Output without a final newline: the end marker follows it on the same line.
        (f"{mark('begin', 0)}\nno newline{mark('end', 0, 0)}\n{mark('begin', 1)}\n{mark('end', 1, 0)}\n",
         {"a": RawRead(0, "no newline"), "b": RawRead(0, "")}),
        # The device's answer stopped in the middle of the second read.
        (f"{mark('begin', 0)}\nalpha\n{mark('end', 0, 0)}\n{mark('begin', 1)}\npart", {"a": RawRead(0, "alpha\n"), "b": RawRead(None, "part")}),
        ("", {"a": RawRead(None, ""), "b": RawRead(None, "")}),
        # A file cannot fake a marker: another nonce is just text.
        (f"{mark('begin', 0)}\n@@agentbench-read@@beef end 0 0\n{mark('end', 0, 0)}\n{mark('begin', 1)}\n{mark('end', 1, 2)}",
         {"a": RawRead(0, "@@agentbench-read@@beef end 0 0\n"), "b": RawRead(2, "")}),
        (f"{mark('begin', 0)}\r\nalpha\r\n{mark('end', 0, 0)}\r\n{mark('begin', 1)}\r\n{mark('end', 1, 0)}",
         {"a": RawRead(0, "alpha\r\n"), "b": RawRead(0, "")}),
    ],
    ids=["two-reads", "no-trailing-newline", "cut-off", "nothing", "spoofed-marker", "crlf"],
)
def test_split_batch(output: str, expected: dict[str, RawRead]) -> None:
    assert split_batch(output, [A, B], NONCE) == expected


def test_binary_reads_are_decoded_and_bad_base64_is_a_failed_read() -> None:
    encoded = base64.encodebytes(b"\x00SQLite bytes\xff" * 20).decode()
    good = split_batch(f"{mark('begin', 0)}\n{encoded}{mark('end', 0, 0)}\n", [BIN], NONCE)["bin"]
    assert good.data == b"\x00SQLite bytes\xff" * 20 and good.status == 0
    bad = split_batch(f"{mark('begin', 0)}\n!!not base64!!{mark('end', 0, 0)}\n", [BIN], NONCE)["bin"]
    assert bad.status == 1 and bad.data is None and "did not decode" in bad.text


def test_batch_script_quotes_every_word_and_keeps_reads_independent() -> None:
    tricky = Read("t", sh("cat", "/data/data/x/shared_prefs/a b;$(reboot).xml"))
    script = batch_script([tricky, A], NONCE)
    assert "'/data/data/x/shared_prefs/a b;$(reboot).xml' 2>&1" in script.text
    assert script.separator == ";"  # a failing read never stops the next one
    with pytest.raises(ValueError, match="hex digits"):
        batch_script([A], "x; reboot")
    with pytest.raises(ValueError, match="one command"):
        Read("joined", Script.join([sh("a"), sh("b")]))


def test_read_device_on_the_phone_answers_every_kind_in_one_round_trip(tmp_path: Path) -> None:
    adb = PhoneAdb(lab_phone())
    checks = suite_checks(FIVE_CHECKS)
    reads = checks.after_reads()
    before = adb.round_trips
    batch = read_device(adb, "sim", reads, nonce=NONCE)
    assert adb.round_trips - before == 1
    assert set(batch.reads.reads) == {read.key for read in reads}
    results = {check.name: check for check in evaluate(checks.checks, batch.reads, batch.reads, CheckContext())}
    # The fresh lab: nothing done yet, so every check fails, each with its own sentence.
    assert not any(check.passed for check in results.values())
    assert "does not exist" in results["secure-connections"].seen
    assert "does not exist" in results["pinned-alice"].seen
    assert "0 images added" in results["cropped"].seen


def test_the_screen_capture_after_the_reads_comes_back_byte_for_byte() -> None:
    adb = PhoneAdb(lab_phone())
    batch = read_device(adb, "sim", [root_file_read("/data/data/com.android.settings/none.xml")],
                        then=capture_script(), nonce=NONCE)
    assert adb.round_trips == 1
    capture = split_capture(batch.then_output)
    assert capture.problems == () and capture.xml.startswith("<?xml") and capture.png.startswith(b"\x89PNG\r\n\x1a\n")
    assert b"@@agentbench-read" not in batch.then_output
    (raw,) = batch.reads.reads.values()
    assert raw.status == 1 and "No such file" in raw.text


def test_saved_reads_load_back_and_a_changed_database_copy_is_refused(tmp_path: Path) -> None:
    database = sqlite3.connect(":memory:")
    database.execute("CREATE TABLE t (x)")
    data = database.serialize()
    reads = DeviceReads({"file:/a": RawRead(0, "text"), "b64:/db": RawRead(0, "", data), "b64:/db-wal": RawRead(1, "missing")},
                        "2026-01-01T00:00:00.000000Z")
    path = save_reads(reads, tmp_path, "after")
    saved = json.loads(path.read_text())
    assert saved["reads"]["b64:/db"]["file"].startswith("device-state/after/") and "text" not in saved["reads"]["b64:/db"]
    assert load_reads(tmp_path, "after") == reads
    assert load_reads(tmp_path, "before") is None
    (tmp_path / saved["reads"]["b64:/db"]["file"]).write_bytes(b"tampered")
    assert "does not match the SHA-256" in load_reads(tmp_path, "after").reads["b64:/db"].text  # type: ignore[union-attr]


def test_through_the_real_adb_server_five_checks_cost_one_round_trip(tmp_path: Path) -> None:
    with start_private_adb_server(tmp_path) as server:
        fleet = SimFleet(count=1, adb=server.client(), phone_factory=lab_phone)
        try:
            phone, serial = fleet.phones[0], fleet.serials[0]
            adb = server.client()
            checks = suite_checks(FIVE_CHECKS)
            served = Counter(phone.counters)
            batch = read_device(adb, serial, checks.after_reads())
            assert sum((Counter(phone.counters) - served).values()) == 1
            database = batch.reads.get(f"b64:/data/data/{LAB}/databases/lab.db")
            assert database is not None and database.status == 1  # the fresh lab has no database yet
            contacts = batch.reads.get("b64:/data/data/com.android.providers.contacts/databases/contacts2.db")
            assert contacts is None  # only what the checks name is read
            (media_check,) = [check for check in checks.checks if check.kind == "media"]
            media = batch.reads.reads[media_check.reads()[0].key]
            assert "beach.png" in media.text and "width=1200" in media.text
        finally:
            fleet.stop()


def test_the_contacts_database_comes_back_whole_as_root(tmp_path: Path) -> None:
    phone = lab_phone()
    phone.add_contact("Alice", "555-123-0001")
    entry = {"kind": "sqlite", "name": "alice", "package": "com.android.providers.contacts", "database": "contacts2.db",
             "query": "SELECT display_name FROM raw_contacts", "rows": [["Alice"]]}
    (check,) = parse_device_checks([entry])
    batch = read_device(PhoneAdb(phone), "sim", check.reads(), nonce=NONCE)
    (result,) = evaluate([check], None, batch.reads, CheckContext())
    assert result.passed, result
    user_build = PhoneAdb(lab_phone(props={"ro.build.type": "user"}))
    (refused,) = evaluate([check], None, read_device(user_build, "sim", check.reads()).reads, CheckContext())
    assert not refused.passed and "needs root and this device has no `su`" in refused.seen


def test_a_checker_that_trips_over_odd_output_fails_its_check_with_a_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_agentbench.checks import media

    (check,) = parse_device_checks([FIVE_CHECKS[4]])
    monkeypatch.setattr(media, "_typed", lambda row: row["no such column"])
    reads = DeviceReads({read.key: RawRead(0, "Row: 0 _id=1, _display_name=a, _data=b, width=1, height=1\n")
                         for read in check.reads()})
    (result,) = evaluate([check], reads, reads, CheckContext())
    assert not result.passed and "could not judge what the device answered (KeyError" in result.seen
