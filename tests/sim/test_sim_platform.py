"""The simulated phone's platform, in process: root (su, adbd root), uids, app-ops, logcat, wake locks, base64, sqlite3."""

from __future__ import annotations

import base64
import datetime
import re
import time
import zoneinfo

import pytest

from pytest_agentbench.sim.phone import Phone

SETTINGS = "com.android.settings"
PLAYGROUND = "dev.jasonpearson.automobile.playground"
THREADTIME = re.compile(r"^\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} +(\d+) +(\d+) ([VDIWEF]) (.+?): (.*)$")


@pytest.fixture
def phone() -> Phone:
    return Phone()


@pytest.fixture
def user_build() -> Phone:
    return Phone(props={"ro.build.type": "user"})


def out(phone: Phone, line: str) -> str:
    result = phone.shell(line)
    assert result.exit_code == 0, result
    return result.stdout.decode()


# Root.


@pytest.mark.parametrize("line", ["su 0 id", "su root id", "su -c id", "su 0 sh -c 'id'", "su root -c 'id; true'"])
def test_su_on_userdebug_runs_the_command_as_root(phone: Phone, line: str) -> None:
    assert out(phone, line).startswith("uid=0(root) gid=0(root) groups=0(root),")
    assert "context=u:r:su:s0" in out(phone, line)


def test_su_reads_private_storage_the_shell_cannot(phone: Phone) -> None:
    path = f"/data/data/{SETTINGS}/shared_prefs/x.xml"
    phone.fs.write(path, b"<map />")
    denied = phone.shell(f"cat {path}")
    assert denied.exit_code == 1 and denied.stderr == f"cat: {path}: Permission denied\n".encode()
    assert phone.shell("ls /data/data").stderr == b"ls: /data/data: Permission denied\n"
    assert out(phone, f"su 0 cat {path}") == "<map />"
    assert SETTINGS in out(phone, "su 0 ls /data/data").split()


def test_su_without_a_command_is_a_root_shell_reading_stdin(phone: Phone) -> None:
    assert out(phone, "echo 'id -u; whoami' | su") == "0\nroot\n"


def test_su_switches_to_other_users(phone: Phone) -> None:
    uid = phone.packages[SETTINGS].uid
    assert out(phone, "su shell id -u") == "2000\n"
    assert out(phone, f"su {uid} id -u") == f"{uid}\n"
    assert out(phone, f"su {uid} whoami") == f"u0_a{uid - 10000}\n"
    assert out(phone, "su system id -u") == "1000\n"
    unknown = phone.shell("su nobody id")
    assert unknown.exit_code == 1 and unknown.stderr == b"su: unknown user nobody\n"


def test_su_refuses_an_app_user(phone: Phone) -> None:
    result = phone.shell(f"run-as {PLAYGROUND} su 0 id")
    assert result.exit_code == 1
    assert result.stderr == f"su: uid {phone.packages[PLAYGROUND].uid} not allowed to su\n".encode()


def test_user_build_has_no_su_and_no_adb_root(user_build: Phone) -> None:
    assert user_build.props["ro.debuggable"] == "0" and not user_build.debuggable_build
    result = user_build.shell("su 0 id")
    assert (result.exit_code, result.stderr) == (127, b"/system/bin/sh: su: inaccessible or not found\n")
    assert user_build.shell("which su").exit_code == 1
    assert not user_build.fs.exists("/system/xbin/su")
    user_build.set_adbd_root(True)
    assert user_build.adbd_user == "shell" and user_build.props["service.adb.root"] == "0"
    # run-as still works for a debuggable app on a user build.
    assert out(user_build, f"run-as {PLAYGROUND} id -u") == f"{user_build.packages[PLAYGROUND].uid}\n"


def test_adbd_root_runs_every_command_as_root_until_unroot(phone: Phone) -> None:
    phone.set_adbd_root(True)
    assert out(phone, "id -u") == "0\n" and phone.props["service.adb.root"] == "1"
    assert out(phone, f"ls /data/data/{SETTINGS}") == ""
    phone.set_adbd_root(False)
    assert out(phone, "id -u") == "2000\n"


def test_run_as_is_refused_for_an_app_that_is_not_debuggable(phone: Phone) -> None:
    result = phone.shell(f"run-as {SETTINGS} id")
    assert result.exit_code == 1 and result.stderr == f"run-as: package not debuggable: {SETTINGS}\n".encode()


def test_uids_agree_between_pm_dumpsys_and_id(phone: Phone) -> None:
    listed = dict(re.findall(r"package:(\S+) uid:(\d+)", out(phone, "cmd package list packages -U")))
    assert set(listed) == set(phone.packages)
    assert len(set(listed.values())) == len(listed)  # every app has its own uid
    assert f"userId={listed[PLAYGROUND]}\n" in out(phone, f"dumpsys package {PLAYGROUND}")
    assert out(phone, f"run-as {PLAYGROUND} id -u") == f"{listed[PLAYGROUND]}\n"


@pytest.mark.parametrize(("line", "allowed"), [("setprop debug.x 1", True), ("setprop persist.sys.timezone Europe/London", False),
                                               ("su 0 setprop persist.sys.timezone Europe/London", True),
                                               ("su 0 setprop persist.sys.timezone Mars/Olympus", False),
                                               ("su 0 setprop ro.build.type user", False)])
def test_setprop_needs_root_for_system_properties(phone: Phone, line: str, allowed: bool) -> None:
    result = phone.shell(line)
    assert (result.exit_code == 0) == allowed, result
    if not allowed:
        assert result.stderr.startswith(b"Failed to set property")


# App-ops.


def test_appops_get_set_reset_in_android_14_format(phone: Phone) -> None:
    assert out(phone, f"cmd appops get {SETTINGS} RUN_ANY_IN_BACKGROUND") == "No operations.\nDefault mode: allow\n"
    assert out(phone, f"cmd appops get {SETTINGS}") == "No operations.\n"
    assert out(phone, f"cmd appops set {SETTINGS} RUN_ANY_IN_BACKGROUND ignore") == ""
    assert out(phone, f"cmd appops get {SETTINGS} RUN_ANY_IN_BACKGROUND") == "RUN_ANY_IN_BACKGROUND: ignore\n"
    assert out(phone, f"appops get {SETTINGS}") == "RUN_ANY_IN_BACKGROUND: ignore\n"
    assert out(phone, "cmd appops query-op RUN_ANY_IN_BACKGROUND ignore") == f"{SETTINGS}\n"
    assert out(phone, "cmd appops query-op RUN_ANY_IN_BACKGROUND allow") == ""
    assert out(phone, f"cmd appops reset {SETTINGS}") == f"Reset all modes for: user 0, package {SETTINGS}\n"
    assert out(phone, f"cmd appops get {SETTINGS} RUN_ANY_IN_BACKGROUND") == "No operations.\nDefault mode: allow\n"
    assert out(phone, "cmd appops query-op RUN_ANY_IN_BACKGROUND") == "No operations.\n"


@pytest.mark.parametrize(("args", "message"), [
    (f"get {SETTINGS} NOT_AN_OP", "Error: Unknown operation string: NOT_AN_OP"),
    (f"set {SETTINGS} RUN_ANY_IN_BACKGROUND sometimes", "Error: Mode sometimes is not valid"),
    (f"set {SETTINGS} RUN_ANY_IN_BACKGROUND", "Error: Mode not specified."),
    ("get com.example.missing", "Error: No UID for com.example.missing in user 0"),
    ("get", "Error: Package name not specified."),
    ("query-op", "Error: Operation not specified."),
])
def test_appops_errors_exit_255_with_appopsservice_words(phone: Phone, args: str, message: str) -> None:
    result = phone.shell(f"cmd appops {args}")
    assert (result.exit_code, result.stderr.decode()) == (255, message + "\n")


def test_appops_accepts_op_numbers_public_names_and_uid_modes(phone: Phone) -> None:
    uid = phone.packages[SETTINGS].uid
    out(phone, f"cmd appops set {SETTINGS} 70 deny")
    assert out(phone, f"cmd appops get {SETTINGS} android:run_any_in_background") == "RUN_ANY_IN_BACKGROUND: deny\n"
    out(phone, f"cmd appops set --uid {SETTINGS} WAKE_LOCK ignore")
    assert out(phone, f"cmd appops get {uid} WAKE_LOCK") == "Uid mode: WAKE_LOCK: ignore\n"
    assert phone.shell(f"run-as {PLAYGROUND} cmd appops set {PLAYGROUND} CAMERA ignore").exit_code == 255


def test_uninstall_takes_the_app_ops_with_it(phone: Phone) -> None:
    phone.fs.write("/data/local/tmp/n.apk", b"package=com.example.notes\nversionCode=1\n")
    out(phone, "pm install /data/local/tmp/n.apk")
    out(phone, "cmd appops set com.example.notes RUN_ANY_IN_BACKGROUND ignore")
    out(phone, "pm uninstall com.example.notes")
    assert phone.appops.entries("com.example.notes") == []


# Power.


def test_dumpsys_power_lists_held_wake_locks_with_the_package_uid(phone: Phone) -> None:
    assert "Wake Locks: size=1\n" in out(phone, "dumpsys power")  # the testbed's sync, from boot
    phone.acquire_wake_lock(PLAYGROUND, "Playground:Sync")
    text = out(phone, "dumpsys power")
    uid = phone.packages[PLAYGROUND].uid
    assert "Wake Locks: size=2\n" in text
    assert re.search(rf"^  PARTIAL_WAKE_LOCK {{14}}'Playground:Sync' ACQ=(0|-[0-9hms]+) \(uid={uid} pid=\d+\)$", text, re.M)
    assert re.fullmatch(r"WAKE_LOCK: allow; time=(0|\+[0-9hms]+) ago \(running\)\n",
                        out(phone, f"cmd appops get {PLAYGROUND} WAKE_LOCK"))
    phone.force_stop(PLAYGROUND)
    assert "Wake Locks: size=1\n" in out(phone, "dumpsys power")


def test_deviceidle_allowlist_add_and_remove(phone: Phone) -> None:
    assert out(phone, f"cmd deviceidle whitelist +{PLAYGROUND}") == f"Added: {PLAYGROUND}\n"
    uid = phone.packages[PLAYGROUND].uid
    assert f"user,{PLAYGROUND},{uid}\n" in out(phone, "dumpsys deviceidle whitelist")
    assert out(phone, f"cmd deviceidle whitelist -{PLAYGROUND}") == f"Removed: {PLAYGROUND}\n"
    assert PLAYGROUND not in out(phone, "cmd deviceidle whitelist")


# Logcat.


def test_logcat_threadtime_lines_from_apps_and_the_system(phone: Phone) -> None:
    phone.log("Courier", "Pickup code 123456 ready", package=PLAYGROUND)
    phone.log("Courier", "a warning", priority="W", package=PLAYGROUND)
    text = out(phone, "logcat -d")
    assert text.startswith("--------- beginning of system\n")
    lines = [THREADTIME.match(line) for line in text.splitlines() if not line.startswith("---------")]
    assert all(lines), text
    courier = [match for match in lines if match.group(4).strip() == "Courier"]
    assert [m.group(5) for m in courier] == ["Pickup code 123456 ready", "a warning"]
    assert courier[0].group(1) == str(phone.process_pid(PLAYGROUND))
    assert out(phone, "logcat -d -v threadtime") == text


def test_logcat_filters_formats_and_clear(phone: Phone) -> None:
    phone.log("Courier", "code 111111", package=PLAYGROUND)
    phone.log("Other", "noise", priority="D")
    pid = phone.process_pid(PLAYGROUND)
    brief = out(phone, "logcat -d -v brief -s Courier")
    assert brief == f"--------- beginning of main\nI/Courier ({pid:5d}): code 111111\n"
    assert out(phone, "logcat -d -v raw Courier:I *:S") == "--------- beginning of main\ncode 111111\n"
    assert "noise" not in out(phone, "logcat -d *:I")
    assert out(phone, "logcat -d -v raw -e 'code [0-9]+'").endswith("code 111111\n")
    assert out(phone, "logcat -d -v raw -t 1").endswith("noise\n")
    assert out(phone, "logcat -c") == ""
    assert out(phone, "logcat -d") == ""
    bad = phone.shell("logcat -d -v fancy")
    assert bad.exit_code == 1 and b'Invalid parameter "fancy" to -v' in bad.stderr


def test_an_app_reads_only_its_own_log_lines(phone: Phone) -> None:
    phone.log("Mine", "from the playground", package=PLAYGROUND)
    phone.log("Theirs", "from settings", package=SETTINGS)
    text = out(phone, f"run-as {PLAYGROUND} logcat -d -v raw")
    assert "from the playground" in text and "from settings" not in text


def test_time_zone_moves_logcat_and_date(phone: Phone) -> None:
    phone.set_timezone("Asia/Tokyo")
    assert out(phone, "date +%Z") == "JST\n"
    phone.log("Clock", "tick")
    written = phone.logs.entries()[-1].time
    expected = datetime.datetime.fromtimestamp(written, zoneinfo.ZoneInfo("Asia/Tokyo")).strftime("%m-%d %H:%M:%S")
    assert out(phone, "logcat -d -v time -s Clock").splitlines()[-1].startswith(expected + ".")
    with pytest.raises(ValueError, match="unknown time zone"):
        phone.set_timezone("Mars/Olympus")


# base64 and sqlite3.


def test_base64_round_trips_a_large_binary_file_quickly(phone: Phone) -> None:
    data = bytes(range(256)) * 12_000  # 3 MB
    phone.fs.write("/sdcard/blob.bin", data)
    started = time.perf_counter()
    encoded = phone.shell("base64 -w 0 /sdcard/blob.bin").stdout
    assert time.perf_counter() - started < 2.0
    assert base64.b64decode(encoded) == data and b"\n" not in encoded.rstrip(b"\n")
    wrapped = out(phone, "echo hello world, this is a line longer than the wrap width of base64 | base64")
    assert max(len(line) for line in wrapped.splitlines()) == 76
    assert out(phone, f"echo {wrapped.replace(chr(10), '')} | base64 -d") == (
        "hello world, this is a line longer than the wrap width of base64\n")
    assert phone.shell("echo '@@@' | base64 -d").exit_code == 1


def test_sqlite3_queries_a_database_as_root_only(phone: Phone) -> None:
    phone.add_contact("Alice", "5551234567")
    db = "/data/data/com.android.providers.contacts/databases/contacts2.db"
    assert phone.shell(f"sqlite3 {db} 'select 1'").exit_code == 1
    assert out(phone, f"su 0 sqlite3 {db} 'SELECT display_name FROM raw_contacts'") == "Alice\n"
    assert out(phone, f"su 0 sqlite3 -header {db} 'SELECT _id, display_name FROM raw_contacts'") == "_id|display_name\n1|Alice\n"
    assert Phone(props={"ro.build.type": "user"}).shell("sqlite3 /x 'select 1'").exit_code == 127


def test_log_command_writes_as_the_calling_user(phone: Phone) -> None:
    out(phone, "log -p w -t Probe hello from the shell")
    out(phone, f"run-as {PLAYGROUND} log -t Probe from the app")
    entries = [entry for entry in phone.logs.entries() if entry.tag == "Probe"]
    assert [(e.priority, e.uid, e.message) for e in entries] == [
        ("W", 2000, "hello from the shell"), ("I", phone.packages[PLAYGROUND].uid, "from the app")]
    assert phone.shell("log -p x -t T m").exit_code == 1
