"""--agentbench-doctor: every committed suite reads ready on a fresh simulated phone, and each missing thing gets its own line."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from phoneadb import PhoneAdb
from pytest_agentbench.checks.base import RawRead
from pytest_agentbench.doctor.bugle import query_tables, schema_line
from pytest_agentbench.doctor.examine import examine_suite
from pytest_agentbench.doctor.root import as_root, root_line
from pytest_agentbench.sim.phone import Phone
from pytest_agentbench.suite import load_suite
from pytest_agentbench.suite.instance import instantiate

ROOT = Path(__file__).resolve().parents[1]
SUITES = sorted((ROOT / "benchmark" / "agent" / "suites").glob("*.yml"))
TESTBED = "dev.agentbench.testbed"


def _suite(name: str):
    return instantiate(load_suite(ROOT / "benchmark" / "agent" / "suites" / f"{name}.yml", ROOT), seed=1, repeat=1)


def _line(adb: PhoneAdb, name: str) -> str:
    return examine_suite(adb, "sim", _suite(name), testbed_checks={}, sleep=lambda _s: None).line


def test_every_committed_suite_is_ready_on_a_fresh_simulated_phone_and_the_phone_is_left_as_found() -> None:
    adb = PhoneAdb()
    cache: dict = {}
    lines = [examine_suite(adb, "sim", instantiate(load_suite(path, ROOT), seed=1, repeat=1), testbed_checks=cache,
                           sleep=lambda _s: None).line for path in SUITES]
    assert len(lines) == 13
    assert all(": ready" in line for line in lines), "\n".join(lines)
    assert "chrome-search-engine: ready (com.android.chrome 131.0.6778.200, root: su 0)" in lines
    # The testbed was started for its contract and its data cleared again: no preferences, no event log.
    assert adb.phone.fs.stat(f"/data/data/{TESTBED}/shared_prefs/testbed.xml") is None
    assert adb.phone.fs.stat(f"/data/data/{TESTBED}/files/events.jsonl") is None
    assert TESTBED not in adb.phone.runtimes
    # One contract check for the five suites that need the testbed.
    assert sum(command.startswith("am start -W") for command in adb.commands) == 4


def test_a_user_build_without_su_gets_the_root_line_and_its_remedy() -> None:
    line = _line(PhoneAdb(Phone(props={"ro.build.type": "user"})), "chrome-search-engine")
    assert line.startswith("chrome-search-engine: not ready: no `su` on this device (a user build?)")
    assert "userdebug or eng image" in line and "needed because check search-engine reads private storage as root" in line


def test_a_suite_that_needs_no_root_is_ready_on_a_user_build() -> None:
    assert _line(PhoneAdb(Phone(props={"ro.build.type": "user"})), "wifi-on") == "wifi-on: ready (com.android.settings 14)"


@pytest.mark.parametrize(("outputs", "form"), [
    ({"su 0": RawRead(0, "0\n"), "su -c": RawRead(0, "0\n"), "su root": RawRead(0, "0\n")}, "su 0"),
    # Magisk: `su 0 id -u` is taken as a user name it cannot find; `su -c` works.
    ({"su 0": RawRead(1, "su: invalid uid/username 'id'\n"), "su -c": RawRead(0, "0\n"), "su root": RawRead(1, "")}, "su -c"),
    ({"su 0": RawRead(0, "2000\n"), "su -c": RawRead(1, "su: unknown option -c\n"), "su root": RawRead(0, "0\n")}, "su root"),
])
def test_root_line_picks_the_first_su_form_whose_id_is_root(outputs: dict, form: str) -> None:
    assert root_line({f"doctor:su:{name}": raw for name, raw in outputs.items()}).form == form


@pytest.mark.parametrize(("outputs", "says"), [
    ({name: RawRead(127, "/system/bin/sh: su: inaccessible or not found\n") for name in ("su 0", "su -c", "su root")}, "no `su` on this device"),
    ({name: RawRead(1, "su: uid 2000 not allowed to su\n") for name in ("su 0", "su -c", "su root")}, "`su` refused the shell"),
    ({name: RawRead(0, "2000\n") for name in ("su 0", "su -c", "su root")}, "no `su` form gave root"),
])
def test_root_line_says_why_there_is_no_root(outputs: dict, says: str) -> None:
    result = root_line({f"doctor:su:{name}": raw for name, raw in outputs.items()})
    assert result.form is None and says in result.problem


def test_as_root_quotes_the_command_for_each_form() -> None:
    assert as_root("su 0", "cat", "/data/x y").text == "su 0 cat '/data/x y'"
    assert as_root("su -c", "cat", "/data/x y").text == "su -c 'cat '\"'\"'/data/x y'\"'\"''"
    assert as_root("su root", "id").text == "su root id"


def test_a_missing_testbed_names_the_package_and_what_needs_it() -> None:
    adb = PhoneAdb()
    adb.phone.uninstall(TESTBED)
    line = _line(adb, "wakelock-restrict")
    assert line == ("wakelock-restrict: not ready: dev.agentbench.testbed is not installed (needed for check "
                    "only-testbed-restricted, cleanup): install it on the image")


def test_a_testbed_build_that_breaks_its_contract_gets_each_break() -> None:
    from pytest_agentbench.sim.apps import BUILTIN_APPS
    from pytest_agentbench.sim.apps.testbed import TestbedApp

    class CourierlessTestbed(TestbedApp):
        def on_start(self, ctx) -> None:  # noqa: ANN001 - a build that keeps only the pickup code and logs nothing
            if "pickup_code" not in ctx.prefs("testbed"):
                ctx.put_pref("testbed", "pickup_code", "123456")

    apps = [CourierlessTestbed() if cls is TestbedApp else cls() for cls in BUILTIN_APPS]
    line = _line(PhoneAdb(Phone(apps=apps)), "testbed-pickup-code")
    assert "the testbed build breaks its contract (docs/testbed-app.md): shared_prefs/testbed.xml has no courier_code" in line
    assert "no log line I/Courier matching" in line


def test_chrome_without_its_first_run_flag_file() -> None:
    adb = PhoneAdb()
    adb.phone.fs.remove("/data/local/tmp/chrome-command-line")
    line = _line(adb, "chrome-secure-connections")
    assert "not ready: Chrome's first-run screens are not turned off (/data/local/tmp/chrome-command-line has no --disable-fre)" in line


def test_a_secure_connections_check_without_the_key_of_this_chrome_version(tmp_path: Path) -> None:
    adb = PhoneAdb()
    adb.phone.set_version("com.android.chrome", version_name="128.0.6613.146")
    suite = _suite("chrome-secure-connections")
    only_new = [{**entry, "anyOf": [entry["anyOf"][0]]} for entry in suite.verify.device]
    import dataclasses
    suite = dataclasses.replace(suite, verify=dataclasses.replace(suite.verify, device=tuple(only_new)))
    line = examine_suite(adb, "sim", suite, testbed_checks={}).line
    assert ("Chrome 128.0.6613.146 keeps \"Always use secure connections\" in https_only_mode_enabled, which check "
            "secure-connections does not read") in line
    # The committed suite reads both keys: ready on the older Chrome too.
    assert ": ready" in _line(adb, "chrome-secure-connections")


def test_chrome_preferences_without_the_search_engine_keyword_path() -> None:
    adb = PhoneAdb()
    adb.phone.fs.write("/data/data/com.android.chrome/app_chrome/Default/Preferences",
                       b'{"default_search_provider_data": {"mirrored_template_url_data": {"keyword": "bing.com"}}}')
    line = _line(adb, "chrome-search-engine")
    assert "Preferences has default_search_provider_data but not default_search_provider_data.template_url_data.keyword" in line


def _write_bugle(adb: PhoneAdb, tables: list[str], tmp_path: Path) -> None:
    path = tmp_path / "bugle_db"
    with sqlite3.connect(path) as db:
        for table in tables:
            db.execute(f"CREATE TABLE {table} (_id INTEGER PRIMARY KEY)")
    adb.phone.fs.write("/data/data/com.google.android.apps.messaging/databases/bugle_db", path.read_bytes())


def test_a_foreign_bugle_db_schema_names_its_tables_and_what_the_query_needs(tmp_path: Path) -> None:
    adb = PhoneAdb()
    _write_bugle(adb, ["conversations", "messages", "participants"], tmp_path)
    line = _line(adb, "messages-pin-archive")
    assert ("not ready: unknown bugle_db schema: tables conversations, messages, participants; the check's query needs "
            "conversation_pins: rewrite messages-pin-archive's query") in line


def test_the_simulated_bugle_db_is_the_known_schema() -> None:
    adb = PhoneAdb()
    adb.phone.launch("com.google.android.apps.messaging")  # creates bugle_db
    assert ": ready" in _line(adb, "messages-pin-archive")


def test_schema_line_reads_the_query_tables() -> None:
    query = _suite("messages-pin-archive").verify.device[0]["query"]
    assert query_tables(query) == {"conversations", "conversation_pins"}
    assert schema_line(None, query).problem is None
    assert schema_line(["conversations"], query, "s").problem.startswith("unknown bugle_db schema: tables conversations;")


def test_messages_not_the_default_sms_app() -> None:
    adb = PhoneAdb()
    adb.phone.roles["android.app.role.SMS"] = ["com.android.messaging"]
    line = _line(adb, "messages-pin-archive")
    assert ("Messages is not the default SMS app (it is com.android.messaging): adb shell cmd role add-role-holder "
            "android.app.role.SMS com.google.android.apps.messaging") in line


def test_a_deskclock_whose_city_ids_are_unknown() -> None:
    adb = PhoneAdb()
    adb.phone.set_version("com.android.deskclock", version_name="15")
    line = _line(adb, "clock-world-clock")
    assert "not ready: DeskClock 15's city ids are unknown" in line and "contains" in line


def test_a_missing_deskclock() -> None:
    adb = PhoneAdb()
    adb.phone.packages.pop("com.android.deskclock")
    assert "com.android.deskclock is not installed (needed for the suite's app" in _line(adb, "clock-world-clock")


def test_a_photos_build_whose_editor_is_unproven() -> None:
    adb = PhoneAdb()
    adb.phone.set_version("com.google.android.apps.photos", version_name="7.1.0.1")
    assert "Photos 7.1.0.1's editor is not proven to crop with \"Save copy\"" in _line(adb, "photos-crop")


def test_a_start_screen_slower_than_the_settle_time() -> None:
    adb = PhoneAdb()
    adb.phone.log("ActivityTaskManager", "Displayed com.android.chrome/com.google.android.apps.chrome.Main for user 0: +3s512ms",
                  buffer="system")
    line = _line(adb, "chrome-search-engine")
    assert line.endswith("com.android.chrome took 3.5 s to draw its start screen here, preflight.settleSeconds is 1: raise it to 5")


def test_a_start_screen_within_the_settle_time_is_ready() -> None:
    adb = PhoneAdb()
    adb.phone.log("ActivityTaskManager", "Displayed com.android.chrome/com.google.android.apps.chrome.Main: +850ms", buffer="system")
    assert ": ready" in _line(adb, "chrome-search-engine")


def test_a_missing_mediastore() -> None:
    adb = PhoneAdb()
    adb.phone.providers.pop("media")
    assert "MediaStore does not answer" in _line(adb, "photos-crop")


def test_an_event_log_check_on_another_path() -> None:
    import dataclasses
    suite = _suite("qa-forms-bug-report")
    device = tuple({**entry, "file": "files/log.jsonl"} if entry["kind"] == "eventLog" else entry for entry in suite.verify.device)
    suite = dataclasses.replace(suite, verify=dataclasses.replace(suite.verify, device=device))
    line = examine_suite(PhoneAdb(), "sim", suite, testbed_checks={}, sleep=lambda _s: None).line
    assert "reads files/log.jsonl, the testbed writes its event log to files/events.jsonl" in line


def test_the_remedies_the_lines_give_make_the_suite_ready() -> None:
    adb = PhoneAdb()
    adb.phone.roles["android.app.role.SMS"] = []
    adb.phone.fs.remove("/data/local/tmp/chrome-command-line")
    sms = _line(adb, "messages-pin-archive")
    chrome = _line(adb, "chrome-search-engine")
    for line in (sms, chrome):
        remedy = line.split(": adb shell ", 1)[1].split(" (read on", 1)[0]
        command = remedy[1:-1] if remedy.startswith('"') else remedy
        assert adb.phone.shell(command).exit_code == 0, command
    assert ": ready" in _line(adb, "messages-pin-archive")
    assert ": ready" in _line(adb, "chrome-search-engine")
