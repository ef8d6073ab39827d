"""Issue 10's device side through the real adb command line: content, appops, adb root + pull of a database, su, logcat."""

from __future__ import annotations

import re
import sqlite3

import pytest


pytest.importorskip("pytest_agentbench.sim.phone", reason="the simulated Android is not there")

TESTED = "dev.jasonpearson.automobile.playground"
CONTACTS_DB = "/data/data/com.android.providers.contacts/databases/contacts2.db"


def _phone(index: int):
    from pytest_agentbench.sim.phone import Phone

    # Phone 0 is the userdebug emulator the benchmark uses; phone 1 a production (user) build.
    phone = Phone(f"sim{index}", props={"ro.build.type": "user"} if index else None)
    phone.add_contact("Ada Lovelace", "5551234567", note="pickup 4821")
    phone.log("Courier", "Pickup code 739104 ready for collection", package=TESTED)
    phone.acquire_wake_lock(TESTED, "Playground:SyncWorker")
    return phone


@pytest.fixture(scope="module")
def fleet(module_adb_server):
    from pytest_agentbench.sim.fleet import SimFleet

    with SimFleet(count=2, adb=module_adb_server.client(), phone_factory=_phone) as fleet:
        yield fleet


@pytest.fixture
def adb(fleet, module_adb_server):
    def run(*args: str, phone: int = 0, input_bytes: bytes | None = None):
        return module_adb_server.run_adb("-s", fleet.serials[phone], *args, input_bytes=input_bytes)

    return run


def test_content_query_of_contacts(adb) -> None:
    done = adb("shell", "content", "query", "--uri", "content://com.android.contacts/data/phones",
               "--projection", "display_name:data1:data4")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"Row: 0 display_name=Ada Lovelace, data1=5551234567, data4=+15551234567\n"
    where = adb("shell", "content query --uri content://com.android.contacts/data --projection data1 "
                         "--where \"mimetype='vnd.android.cursor.item/note'\"")
    assert where.stdout == b"Row: 0 data1=pickup 4821\n"


def test_cmd_appops_get_and_set(adb) -> None:
    assert adb("shell", "cmd", "appops", "get", TESTED, "RUN_ANY_IN_BACKGROUND").stdout == (
        b"No operations.\nDefault mode: allow\n")
    assert adb("shell", "cmd", "appops", "set", TESTED, "RUN_ANY_IN_BACKGROUND", "ignore").returncode == 0
    assert adb("shell", "appops", "get", TESTED, "RUN_ANY_IN_BACKGROUND").stdout == b"RUN_ANY_IN_BACKGROUND: ignore\n"
    unknown = adb("shell", "cmd", "appops", "get", TESTED, "NOPE")
    assert (unknown.returncode, unknown.stderr) == (255, b"Error: Unknown operation string: NOPE\n")
    assert adb("shell", "cmd", "appops", "reset", TESTED).returncode == 0


def test_adb_root_then_pull_a_database_that_sqlite_opens_read_only(adb, fleet, tmp_path) -> None:
    local = tmp_path / "contacts2.db"
    refused = adb("pull", CONTACTS_DB, str(local))
    assert refused.returncode != 0 and b"Permission denied" in refused.stderr + refused.stdout
    rooted = adb("root")
    assert (rooted.returncode, rooted.stdout) == (0, b"restarting adbd as root\n"), rooted.stderr
    try:
        assert adb("shell", "id").stdout.startswith(b"uid=0(root) gid=0(root)")
        assert adb("root").stdout == b"adbd is already running as root\n"
        assert adb("pull", CONTACTS_DB, str(local)).returncode == 0
        with sqlite3.connect(f"file:{local}?mode=ro", uri=True) as db:
            assert db.execute("SELECT display_name FROM raw_contacts").fetchall() == [("Ada Lovelace",)]
        assert adb("shell", "getprop", "service.adb.root").stdout == b"1\n"
    finally:
        unrooted = adb("unroot")
    assert unrooted.stdout == b"restarting adbd as non root\n"
    assert adb("shell", "id", "-u").stdout == b"2000\n"
    assert adb("unroot").stdout == b"adbd not running as root\n"


def test_su_on_userdebug_and_on_a_user_build(adb) -> None:
    assert adb("shell", "su", "0", "id", "-u").stdout == b"0\n"
    assert adb("shell", "su root cat " + CONTACTS_DB + " | head -c 16").stdout == b"SQLite format 3\x00"
    missing = adb("shell", "su", "0", "id", phone=1)
    assert (missing.returncode, missing.stderr) == (127, b"/system/bin/sh: su: inaccessible or not found\n")
    refused = adb("root", phone=1)
    assert (refused.returncode, refused.stdout) == (0, b"adbd cannot run as root in production builds\n")
    assert adb("shell", "id", "-u", phone=1).stdout == b"2000\n"


def test_interactive_su_is_a_root_shell_until_exit(adb) -> None:
    done = adb("shell", input_bytes=b"id -u\nsu\nid -u\nexit\nid -u\nexit\n")
    assert done.stdout.split() == [b"2000", b"0", b"2000"], done


def test_logcat_through_adb_logcat_and_adb_shell(adb) -> None:
    via_logcat = adb("logcat", "-d", "-s", "Courier")
    assert via_logcat.returncode == 0, via_logcat.stderr
    lines = via_logcat.stdout.decode().splitlines()
    assert lines[0] == "--------- beginning of main"
    assert re.fullmatch(r"\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} +\d+ +\d+ I Courier : Pickup code 739104 ready for collection",
                        lines[1]), lines
    assert adb("shell", "logcat", "-d", "-v", "raw", "-s", "Courier").stdout.endswith(b"\nPickup code 739104 ready for collection\n")


def test_dumpsys_power_names_the_wake_lock_and_its_uid(adb) -> None:
    uids = dict(re.findall(rb"package:(\S+) uid:(\d+)", adb("shell", "cmd", "package", "list", "packages", "-U").stdout))
    power = adb("shell", "dumpsys", "power").stdout.decode()
    match = re.search(r"PARTIAL_WAKE_LOCK +'Playground:SyncWorker' ACQ=\S+ \(uid=(\d+) pid=\d+\)", power)
    assert match and match.group(1).encode() == uids[TESTED.encode()]
    assert f"userId={match.group(1)}".encode() in adb("shell", "dumpsys", "package", TESTED).stdout


def test_base64_of_a_database_in_one_round_trip(adb, fleet) -> None:
    import base64

    done = adb("shell", f"su 0 base64 -w 0 {CONTACTS_DB}; echo; su 0 cmd appops get {TESTED} RUN_ANY_IN_BACKGROUND")
    encoded, _, rest = done.stdout.partition(b"\n")
    assert base64.b64decode(encoded) == fleet.phones[0].fs.read(CONTACTS_DB)
    assert rest.startswith(b"No operations.") or rest.startswith(b"RUN_ANY_IN_BACKGROUND")
