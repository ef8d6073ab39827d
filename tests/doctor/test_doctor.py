"""--agentbench-doctor: every committed suite reads ready on a fresh simulated phone, and each missing thing gets its own line."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from phoneadb import PhoneAdb
from pytest_agentbench.checks import sqlite
from pytest_agentbench.checks.base import RawRead
from pytest_agentbench.doctor.bugle import query_tables, schema_line
from pytest_agentbench.doctor.examine import examine_suite
from pytest_agentbench.doctor.root import ROOT_READ_KEY, as_root, root_line
from pytest_agentbench.sim.phone import Phone
from pytest_agentbench.suite import load_suite
from pytest_agentbench.suite.instance import instantiate

ROOT = Path(__file__).resolve().parents[2]
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
    assert len(lines) == len(SUITES) >= 21  # every committed suite, the eight newer jobs included
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


ROOT_ID = "uid=0(root) gid=0(root) groups=0(root) context=u:r:su:s0"


def _probe_read(outputs: dict[str, str]) -> dict[str, RawRead]:
    """The su probe's read as the batch returns it: each form's output between rootshell's markers."""
    text = "".join(f"@@agentbench-su@@ {form}\n{output}\n" for form, output in outputs.items()) + "@@agentbench-su@@ end\n"
    return {ROOT_READ_KEY: RawRead(0, text)}


@pytest.mark.parametrize(("outputs", "form"), [
    ({"su 0": ROOT_ID, "su -c": ROOT_ID, "su root": ROOT_ID}, "su 0"),
    # Magisk: `su 0 id` runs `0` as a shell with `id` as its script; `su -c` works.
    ({"su 0": "/system/bin/sh: id: No such file or directory", "su -c": ROOT_ID, "su root": ""}, "su -c"),
    ({"su 0": "su: unknown user 0", "su -c": "su: unknown user -c", "su root": ROOT_ID}, "su root"),
])
def test_root_line_picks_the_first_su_form_whose_id_is_root(outputs: dict, form: str) -> None:
    assert root_line(_probe_read(outputs)).form == form


@pytest.mark.parametrize(("outputs", "says"), [
    ({name: "/system/bin/sh: su: inaccessible or not found" for name in ("su 0", "su -c", "su root")}, "no `su` on this device"),
    ({name: "su: uid 2000 not allowed to su" for name in ("su 0", "su -c", "su root")}, "`su` refused the shell"),
    ({"su 0": "Permission denied", "su -c": "", "su root": ""}, "`su` refused the shell (Permission denied)"),
    # A su that does not change user, or prints only the number: not `uid=0(root)`, so misparsed.
    ({name: "uid=2000(shell) gid=2000(shell)" for name in ("su 0", "su -c", "su root")}, "no `su` form gave root"),
    ({name: "0" for name in ("su 0", "su -c", "su root")}, "`su 0 id` -> 0, `su -c id` -> 0, `su root id` -> 0; root is `uid=0(root)`"),
    ({"su 0": "/system/bin/sh: id: No such file or directory"}, "`su -c id` -> not reached"),
])
def test_root_line_says_why_there_is_no_root(outputs: dict, says: str) -> None:
    result = root_line(_probe_read(outputs))
    assert result.form is None and says in result.problem


def test_root_line_when_the_probe_was_not_read() -> None:
    assert "the device's answer stopped before the `su` probe finished" in root_line({}).problem
    assert root_line({ROOT_READ_KEY: RawRead(None, "")}).form is None


@pytest.mark.parametrize(("variant", "form"), [("magisk", "su -c"), ("root-only", "su root")])
def test_a_phone_whose_su_takes_another_form_is_ready_with_that_form_named(variant: str, form: str, tmp_path: Path) -> None:
    adb = PhoneAdb(Phone(su_variant=variant))
    assert _line(adb, "chrome-search-engine") == f"chrome-search-engine: ready (com.android.chrome 131.0.6778.200, root: {form})"
    adb.phone.launch("com.google.android.apps.messaging")  # creates bugle_db: its schema is read with that form
    assert _line(adb, "messages-pin-archive").startswith("messages-pin-archive: ready (")
    assert _line(adb, "messages-pin-archive").endswith(f"root: {form})")
    # The database really was read with that form: a foreign schema is seen.
    _write_bugle(adb, ["conversations"], tmp_path)
    assert "not ready: unknown bugle_db schema: tables conversations;" in _line(adb, "messages-pin-archive")


@pytest.mark.parametrize("phone", [Phone(su_variant="magisk"), Phone(su_variant="root-only"), Phone(), Phone(props={"ro.build.type": "user"})],
                         ids=["magisk", "root-only", "aosp", "user"])
def test_the_doctors_su_form_is_the_fingerprints_suform(phone: Phone) -> None:
    from pytest_agentbench.device.rootshell import NO_SU
    from pytest_agentbench.baseline.fingerprints import device_fingerprint_script, parse_device_fingerprint
    fingerprint = parse_device_fingerprint(phone.shell(device_fingerprint_script().text).stdout.decode())
    report = examine_suite(PhoneAdb(phone), "sim", _suite("chrome-search-engine"), testbed_checks={}, sleep=lambda _s: None)
    assert (report.su_form or NO_SU) == fingerprint["suForm"]


def test_as_root_quotes_the_command_for_each_form() -> None:
    assert as_root("su 0", "cat", "/data/x y").text == "su 0 cat '/data/x y'"
    assert as_root("su -c", "cat", "/data/x y").text == "su -c 'cat '\"'\"'/data/x y'\"'\"''"
    assert as_root("su root", "id").text == "su root id"


def test_a_missing_testbed_names_the_package_and_what_needs_it() -> None:
    adb = PhoneAdb()
    adb.phone.uninstall(TESTBED)
    # wakelock-restrict's five repeats draw each of its five holders once: one of them is the testbed.
    template = load_suite(ROOT / "benchmark" / "agent" / "suites" / "wakelock-restrict.yml", ROOT)
    (suite,) = [s for s in (instantiate(template, seed=1, repeat=r) for r in range(1, 6)) if s.instance.values["holder"] == TESTBED]
    line = examine_suite(adb, "sim", suite, testbed_checks={}, sleep=lambda _s: None).line
    assert line == ("wakelock-restrict: not ready: dev.agentbench.testbed is not installed (needed for check "
                    "only-holder-restricted, cleanup): install it on the image")


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


def test_a_foreign_bugle_db_schema_gets_the_checks_own_sentence_and_the_remedy(tmp_path: Path) -> None:
    adb = PhoneAdb()
    _write_bugle(adb, ["conversations", "messages", "participants"], tmp_path)
    line = _line(adb, "messages-pin-archive")
    spec = sqlite.parse(_suite("messages-pin-archive").verify.device[0])
    check_says = sqlite.unknown_schema(spec.device_path, ["conversations", "messages", "participants"], spec.schemas)
    assert check_says.startswith("unknown bugle_db schema: tables conversations, messages, participants; the known schemas need "
                                 "conversations + conversation_pins (the simulated Messages")
    assert f"not ready: {check_says}: add a schema for this app version to messages-pin-archive's check pinned-and-archived" in line
    assert "(`--agentbench-prove -k messages-pin-archive`)" in line


def test_the_simulated_bugle_db_is_a_known_schema() -> None:
    adb = PhoneAdb()
    adb.phone.launch("com.google.android.apps.messaging")  # creates bugle_db
    assert ": ready" in _line(adb, "messages-pin-archive")


def _spec(**entry) -> sqlite.Spec:
    return sqlite.parse({"kind": "sqlite", "name": "pins", "package": "com.google.android.apps.messaging",
                         "database": "bugle_db", "count": 1, **entry})


PINS = {"tables": ["conversations", "conversation_pins"], "query": "SELECT 1 FROM conversation_pins", "provenOn": "sim"}
COLUMN = {"tables": ["conversations"], "query": "SELECT 1 FROM conversations WHERE pinned = 1", "provenOn": "Messages 2025"}


@pytest.mark.parametrize(("tables", "schemas", "schema"), [
    (None, [PINS], None),  # no bugle_db yet: nothing to compare
    (["conversations", "conversation_pins", "messages"], [PINS, COLUMN], "sim"),
    (["conversations", "messages"], [PINS, COLUMN], "Messages 2025"),
])
def test_schema_line_chooses_as_the_check_does(tables: list | None, schemas: list, schema: str | None) -> None:
    result = schema_line(tables, _spec(schemas=schemas), "s")
    assert (result.schema, result.problem) == (schema, None)
    if tables is not None:
        assert sqlite.pick_schema_query(tables, _spec(schemas=schemas).schemas) is not None


@pytest.mark.parametrize(("tables", "entry", "says"), [
    (["messages"], {"schemas": [PINS, COLUMN]},
     "unknown bugle_db schema: tables messages; the known schemas need conversations + conversation_pins (sim); "
     "conversations (Messages 2025): add a schema for this app version to s's check pins"),
    ([], {"schemas": [PINS]}, "unknown bugle_db schema: tables none;"),
    # One plain query: the tables it reads are its schema.
    (["conversations"], {"query": "SELECT c.name FROM conversations c JOIN conversation_pins p ON p.id = c._id"},
     "unknown bugle_db schema: tables conversations; the known schemas need conversation_pins + conversations (the check's only query)"),
])
def test_schema_line_rejects_a_database_no_schema_fits(tables: list, entry: dict, says: str) -> None:
    result = schema_line(tables, _spec(**entry), "s")
    assert result.schema is None and result.problem.startswith(says), result.problem


def test_query_tables_reads_from_and_join() -> None:
    query = _suite("messages-pin-archive").verify.device[0]["schemas"][0]["query"]
    assert query_tables(query) == {"conversations", "conversation_pins"}


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
    assert "not ready: DeskClock 15's city ids are unknown" in line and "set check city-world-clock's token to it" in line


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


def test_the_doctors_deskclock_city_ids_are_the_simulated_deskclocks_list() -> None:
    # clock-world-clock draws its city from the whole list, so the doctor must know every id of it.
    from pytest_agentbench.doctor.apps import DESKCLOCK_CITY_IDS
    from pytest_agentbench.sim.apps.clock import CITIES

    assert DESKCLOCK_CITY_IDS["14"] == {name: city_id for city_id, name, _zone in CITIES}
