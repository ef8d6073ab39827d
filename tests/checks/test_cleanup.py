"""Cleanup: the before/after difference of the sources the checks read -> undo commands -> the phone reads as before; leftovers reported."""

from __future__ import annotations

from pathlib import Path

import pytest
from checklab import FIVE_CHECKS, LAB, lab_phone
from phoneadb import PhoneAdb

from pytest_agentbench.checks import suite_checks
from pytest_agentbench.records import RunResult
from pytest_agentbench.checks.base import DeviceReads, RawRead
from pytest_agentbench.checks.cleanup import (
    appop_tracker,
    appops_mode_tracker,
    leftovers,
    plan_cleanup,
    rows_tracker,
    setting_tracker,
    settings_query_tracker,
    undo_actions,
)
from pytest_agentbench.checks.read import read_device
from pytest_agentbench.report.text import render_text_report
from pytest_agentbench.run.cleanup import run_cleanup
from pytest_agentbench.sim.system.appops import mode_from_text

SMS_CHECK = {"kind": "content", "name": "sent", "uri": "content://sms/sent", "projection": ["address", "body"], "root": True,
             "match": {"address": {"digits": "5551230001"}}}
STEPS = ({"restoreSetting": {"namespace": "global", "key": "wifi_on"}},
         {"restoreAppop": {"package": "com.android.settings", "op": "RUN_ANY_IN_BACKGROUND"}})


def _sources(adb: PhoneAdb, checks) -> dict[str, str]:
    """Every watched source as the device prints it now."""
    batch = read_device(adb, "sim", [tracker.read for tracker in checks.trackers])
    return {key: raw.text for key, raw in batch.reads.reads.items()}


def _do_the_job(phone) -> None:
    phone.add_contact("Pickup 4821", "+1 555-123-0001")
    phone.add_sms("+15551230001", "Code 4821", box="sent")
    phone.add_photo(800, 800, name="crop.png")
    phone.appops.set_mode(LAB, "RUN_ANY_IN_BACKGROUND", mode_from_text("ignore"))
    phone.appops.set_mode("com.android.settings", "RUN_ANY_IN_BACKGROUND", mode_from_text("deny"))
    phone.settings["global"]["wifi_on"] = "1"


def _run(adb: PhoneAdb, tmp_path: Path, *, job=_do_the_job):
    checks = suite_checks([*FIVE_CHECKS, SMS_CHECK], STEPS)
    fresh = _sources(adb, checks)
    before = read_device(adb, "sim", checks.before_reads()).reads
    job(adb.phone)
    after = read_device(adb, "sim", checks.after_reads()).reads
    report = run_cleanup(adb, "sim", checks, before=before, after=after, run_dir=tmp_path)
    return checks, fresh, report


def test_after_a_run_that_added_a_contact_an_sms_an_image_and_an_app_op_the_sources_read_as_before(tmp_path: Path) -> None:
    adb = PhoneAdb(lab_phone())
    checks, fresh, report = _run(adb, tmp_path)
    assert report is not None and report["left"] == [] and report["failed"] == [], report
    assert {tracker.label for tracker in checks.trackers} == {
        "contacts", "SMS", "MediaStore images", "app-ops RUN_ANY_IN_BACKGROUND ignore", "settings global wifi_on",
        "app-op RUN_ANY_IN_BACKGROUND of com.android.settings"}
    done = [action["action"] for action in report["actions"]]
    assert any(a.startswith("delete contacts row") for a in done) and any(a.startswith("delete SMS row") for a in done)
    assert any(a.startswith("delete MediaStore images row") for a in done)
    assert f"reset RUN_ANY_IN_BACKGROUND of {LAB} (newly ignore) to its default allow" in done
    assert "put setting global wifi_on back to 0" in done
    assert "set RUN_ANY_IN_BACKGROUND of com.android.settings back to allow" in done
    # Every source prints exactly what it printed before the run: an app-op is set back to the op's
    # own default mode (allow), which drops the setting ("No operations." again), never to MODE_DEFAULT.
    assert _sources(adb, checks) == fresh
    for package in (LAB, "com.android.settings"):
        assert package not in adb.phone.appops.packages
    # And read from the phone itself, not through the trackers' own reads:
    phone = adb.phone
    assert phone.content_query("content://media/external/images/media", ["_display_name"]) == [{"_display_name": "beach.png"}]
    assert phone.content_query("content://sms", ["_id"]) == [] and phone.content_query("content://sms/conversations") == []
    assert phone.content_query("content://com.android.contacts/raw_contacts", ["_id"]) == []
    assert not phone.fs.exists("/sdcard/Pictures/crop.png")
    assert phone.settings["global"]["wifi_on"] == "0"
    assert (tmp_path / "device-cleanup.json").is_file() and "cleanup left" not in (tmp_path / "cleanup.log").read_text()


def test_a_deliberate_leftover_is_reported_and_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    adb = PhoneAdb(lab_phone())
    provider = adb.phone.providers["com.android.contacts"]
    # The contacts provider refuses to forget: cleanup's delete runs, the contact stays.
    monkeypatch.setattr(provider, "delete", lambda *args, **kwargs: 0)
    _, _, report = _run(adb, tmp_path)
    assert report is not None
    (left,) = report["left"]
    assert left.startswith("contacts: rows _id=") and left.endswith("added by the run are still there")
    text = render_text_report(RunResult.from_json({"suite": "lab", "verdict": {"status": "passed", "reasons": []}, "cleanup": report}))
    assert f"cleanup left: {left}" in text
    assert f"cleanup left: {left}" in (tmp_path / "cleanup.log").read_text()


def test_suite_steps_run_in_order_and_a_failing_one_is_reported(tmp_path: Path) -> None:
    adb = PhoneAdb(lab_phone())
    steps = ({"adb": ["am", "force-stop", LAB]}, {"pmClear": LAB}, {"adb": ["cat", "/no such file"]},
             {"contentDelete": {"uri": "content://com.android.contacts/raw_contacts", "where": "display_name='Temp'"}})
    checks = suite_checks([], steps)
    adb.phone.add_contact("Temp", "1234")
    report = run_cleanup(adb, "sim", checks, before=None, after=None, run_dir=tmp_path)
    assert [action["command"] for action in report["actions"]] == [
        f"am force-stop {LAB}", f"pm clear {LAB}", "cat '/no such file'",
        "content delete --uri content://com.android.contacts/raw_contacts --where 'display_name='\"'\"'Temp'\"'\"''"]
    assert [action["status"] for action in report["actions"]] == [0, 0, 1, 0]
    assert len(report["failed"]) == 1 and "cat '/no such file'" in report["failed"][0]
    assert adb.phone.content_query("content://com.android.contacts/raw_contacts", ["_id"]) == []


def test_nothing_to_clean_is_no_report_and_an_unreachable_phone_is_said(tmp_path: Path) -> None:
    adb = PhoneAdb(lab_phone())
    assert run_cleanup(adb, "sim", suite_checks([]), before=None, after=None, run_dir=tmp_path) is None
    report = run_cleanup(adb, "sim", suite_checks(FIVE_CHECKS), before=None, after=None, run_dir=tmp_path,
                         skip_because="someone else holds the device")
    assert report == {"actions": [], "failed": [], "left": ["cleanup did not run: someone else holds the device"]}


def _reads(tracker, text: str) -> DeviceReads:
    return DeviceReads({tracker.read.key: RawRead(0, text)})


ROWS = rows_tracker("contacts", "content://com.android.contacts/raw_contacts")
WIFI = setting_tracker("global", "wifi_on")
QUERY = settings_query_tracker("content://settings/global", "name='wifi_on'")
MODE = appops_mode_tracker("RUN_ANY_IN_BACKGROUND", "ignore")
ONE = appop_tracker("com.x", "RUN_ANY_IN_BACKGROUND")


@pytest.mark.parametrize(
    ("tracker", "before", "after", "commands"),
    [
        (ROWS, "Row: 0 _id=1\n", "Row: 0 _id=1\nRow: 1 _id=7\n",
         ["content delete --uri content://com.android.contacts/raw_contacts --where _id=7"]),
        (ROWS, "No result found.\n", "No result found.\n", []),
        (WIFI, "0\n", "1\n", ["settings put global wifi_on 0"]),
        (WIFI, "null\n", "1\n", ["settings delete global wifi_on"]),
        (WIFI, "1\n", "1\n", []),
        (QUERY, "Row: 0 name=wifi_on, value=0\n", "Row: 0 name=wifi_on, value=1\n", ["settings put global wifi_on 0"]),
        (MODE, "com.a\n", "com.b\n", ["cmd appops set com.b RUN_ANY_IN_BACKGROUND allow",
                                      "cmd appops set com.a RUN_ANY_IN_BACKGROUND ignore"]),
        (ONE, "No operations.\nDefault mode: allow\n", "RUN_ANY_IN_BACKGROUND: ignore\n",
         ["cmd appops set com.x RUN_ANY_IN_BACKGROUND allow"]),
        # MODE_DEFAULT is not the op's default: AppStateTracker treats it as restricted.
        (ONE, "No operations.\nDefault mode: allow\n", "RUN_ANY_IN_BACKGROUND: default\n",
         ["cmd appops set com.x RUN_ANY_IN_BACKGROUND allow"]),
        (ONE, "RUN_ANY_IN_BACKGROUND: allow\n", "RUN_ANY_IN_BACKGROUND: ignore; time=+1s ago\n",
         ["cmd appops set com.x RUN_ANY_IN_BACKGROUND allow"]),
    ],
    ids=["new-row", "no-change", "setting-changed", "setting-was-unset", "setting-same", "settings-query", "appops-mode",
         "appop-untouched-before", "appop-mode-default-is-not-untouched", "appop-explicit-before"],
)
def test_undo_commands_from_the_difference(tracker, before: str, after: str, commands: list[str]) -> None:
    plan = plan_cleanup([tracker], [], _reads(tracker, before), _reads(tracker, after))
    assert [action.script.text for action in plan.actions] == commands


def test_a_source_that_could_not_be_read_is_left_alone_and_said() -> None:
    absent = DeviceReads({ROWS.read.key: RawRead(0, "Error while accessing provider:com.android.contacts\n"
                                                   "java.lang.IllegalStateException: Could not find provider: x\n")})
    plan = plan_cleanup([ROWS], [], absent, _reads(ROWS, "Row: 0 _id=3\n"))
    assert plan.actions == () and "contacts was not compared: the content provider" in plan.unknown[0]
    assert undo_actions(WIFI, None, None) == []


@pytest.mark.parametrize(
    ("tracker", "before", "reread", "left"),
    [
        (ROWS, "No result found.\n", "Row: 0 _id=4\n", ["contacts: rows _id=4 added by the run are still there"]),
        (WIFI, "0\n", "1\n", ["settings global wifi_on is '1', was '0'"]),
        (WIFI, "null\n", "null\n", []),
        (MODE, "No operations.\n", "com.a\n", ["app-ops RUN_ANY_IN_BACKGROUND ignore: com.a, was none"]),
        (ONE, "No operations.\n", "RUN_ANY_IN_BACKGROUND: default\n",
         ["app-op RUN_ANY_IN_BACKGROUND of com.x is default, was allow"]),
        (ONE, "No operations.\nDefault mode: allow\n", "No operations.\nDefault mode: allow\n", []),
    ],
    ids=["row", "setting", "setting-unset", "mode", "mode-default-is-a-leftover", "untouched"],
)
def test_leftovers(tracker, before: str, reread: str, left: list[str]) -> None:
    assert leftovers([tracker], _reads(tracker, before), _reads(tracker, reread)) == left


def test_a_time_zone_a_scenario_changed_is_put_back(tmp_path: Path) -> None:
    adb = PhoneAdb(lab_phone())
    checks = suite_checks([], ({"restoreProp": {"name": "persist.sys.timezone"}},))
    zone = adb.phone.timezone
    before = read_device(adb, "sim", checks.before_reads()).reads
    adb.phone.set_timezone("Europe/London")
    after = read_device(adb, "sim", checks.after_reads()).reads
    report = run_cleanup(adb, "sim", checks, before=before, after=after, run_dir=tmp_path)
    assert [a["command"] for a in report["actions"]] == [f"su 0 setprop persist.sys.timezone {zone}"]
    assert report["left"] == [] and adb.phone.timezone == zone


def test_the_harness_and_the_simulated_phone_agree_on_every_ops_default_mode() -> None:
    # Two models of AppOpsManager.opToDefaultMode: the harness's (what cleanup puts back; it must not
    # import the simulated phone) and the phone's (what `cmd appops` reports). They must not drift.
    from pytest_agentbench.checks.appops import default_mode as harness_default
    from pytest_agentbench.sim.system import appops as sim_appops

    disagree = {op: (harness_default(op), sim_appops.MODE_NAMES[sim_appops.default_mode(op)])
                for op in sim_appops.OP_NAMES
                if harness_default(op) != sim_appops.MODE_NAMES[sim_appops.default_mode(op)]}
    assert disagree == {}
    assert harness_default("WRITE_SMS") == "ignore" and harness_default("RUN_ANY_IN_BACKGROUND") == "allow"
