"""Recorded real outputs (tests/data/real/, sources in its README.md) -> the values the harness extracts from each."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentbench.agents.model.ui_tree import from_mobile_mcp
from pytest_agentbench.baseline.fingerprints import parse_app_build, parse_device_fingerprint
from pytest_agentbench.checks.appops import default_mode
from pytest_agentbench.checks.base import DeviceReads, RawRead, is_missing_file, unreadable
from pytest_agentbench.checks.cleanup import appop_modes, appop_tracker, leftovers, undo_actions
from pytest_agentbench.checks.content import rows_snapshot
from pytest_agentbench.checks.provider import parse_rows, provider_error
from pytest_agentbench.device.hostprotocol import DeviceInfo, _parse_devices_l
from pytest_agentbench.device.rootshell import SU_FORMS, parse_su_form, su_form_outputs
from pytest_agentbench.device.uiautomator import (
    app_texts,
    extract_hierarchy,
    format_elements,
    indexed_elements,
    parse_screen,
    screen_includes,
    screen_signature,
)
from pytest_agentbench.mcp_server.driver import Observation
from pytest_agentbench.mcp_server.server import _node_by_text

REAL = Path(__file__).parents[1] / "data" / "real"
MARK = "@@agentbench-fp@@"
SU_MARK = "@@agentbench-su@@"


def real(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def test_every_recorded_output_names_its_source_and_android_version() -> None:
    readme = real("README.md")
    files = sorted(path.name for path in REAL.iterdir() if path.name != "README.md")
    assert files, "no recorded outputs"
    for name in files:
        row = next((line for line in readme.splitlines() if f"`{name}`" in line), None)
        assert row is not None, f"{name} has no row in tests/data/real/README.md"
        assert "github.com" in row or "aosp-mirror/" in row or "AOSP" in row, f"{name}: no source"
        assert row.count("|") >= 5, f"{name}: the row needs source, version and note"


@pytest.mark.parametrize(("name", "theme"), [("uimode-night-custom_schedule.txt", "custom_schedule"),
                                             ("uimode-night-custom_bedtime.txt", "custom_bedtime")])
def test_android_13_night_modes_are_recorded_not_unknown(name: str, theme: str) -> None:
    output = f"{MARK}begin uiModeNight\n{real(name)}{MARK}end uiModeNight\n"
    assert parse_device_fingerprint(output)["theme"] == theme


def test_a_uid_mode_and_a_package_mode_are_read_and_restored_each_at_its_own_level() -> None:
    text = real("appops-get-uid-and-package-mode.txt")
    assert appop_modes(text, "READ_CLIPBOARD") == ("foreground", "deny")
    tracker = appop_tracker("com.deepl.mobiletranslator", "READ_CLIPBOARD")
    before = appop_modes("No operations.\n", "READ_CLIPBOARD")
    actions = undo_actions(tracker, before, appop_modes(text, "READ_CLIPBOARD"))
    default = default_mode("READ_CLIPBOARD")
    assert [action.script.text for action in actions] == [
        f"cmd appops set --uid com.deepl.mobiletranslator READ_CLIPBOARD {default}",
        f"cmd appops set com.deepl.mobiletranslator READ_CLIPBOARD {default}",
    ]
    left = leftovers([tracker], DeviceReads({tracker.read.key: RawRead(0, "No operations.\n")}),
                     DeviceReads({tracker.read.key: RawRead(0, text)}))
    assert left == ["app-op READ_CLIPBOARD of com.deepl.mobiletranslator (uid mode) is foreground, was unset",
                    f"app-op READ_CLIPBOARD of com.deepl.mobiletranslator is deny, was {default}"]
    # The same output with the package restored but the uid mode still set is still a leftover.
    both = "Uid mode: READ_CLIPBOARD: foreground\n"
    assert appop_modes(both, "READ_CLIPBOARD") == ("foreground", default)


def test_su_misparsing_its_own_arguments_is_not_a_missing_file() -> None:
    raw = RawRead(127, real("magisk-su-c-misparsed.txt"))
    assert not is_missing_file(raw)
    why = unreadable(raw, "Chrome's Preferences")
    assert why is not None and "did not run as written" in why and "does not exist" not in why
    # A real missing file still reads as missing.
    missing = RawRead(1, "cat: /data/data/com.android.chrome/app_chrome/Default/Preferences: No such file or directory\n")
    assert is_missing_file(missing) and unreadable(missing, "Chrome's Preferences") == "Chrome's Preferences does not exist"


def test_an_old_mobile_mcp_listing_with_decimal_string_centres_is_tapped_at_those_centres() -> None:
    tree = from_mobile_mcp(real("mobile-mcp-issue-32-listing.txt"))
    assert len(tree.elements) == 7
    # Python rounds halves to even: 1440.5 -> 1440, 90.5 -> 90, 116.5 -> 116, 1589.5 -> 1590.
    assert [tree.tap_point(index) for index in range(7)] == [
        (1440, 30), (90, 116), (278, 116), (696, 117), (1590, 116), (2468, 83), (91, 288)]


def test_could_not_get_idle_state_is_no_hierarchy() -> None:
    with pytest.raises(ValueError, match="no hierarchy"):
        extract_hierarchy(real("uiautomator-could-not-get-idle-state.txt").encode())


def test_a_narrow_no_break_space_before_am_pm_matches_a_plain_space() -> None:
    shown = real("nnbsp-12-hour-times.txt").strip()
    assert "\u202f" in shown
    assert screen_includes([shown], "12:00 AM") and screen_includes([shown], "12:00 PM")
    assert not screen_includes([shown], "2:00 AM")  # still a standalone match: `12:00` is not `2:00`
    assert not screen_includes([shown], "12:00 XM")


def test_a_shell_saying_no_such_file_about_the_command_is_not_a_missing_file() -> None:
    # What a su that hands `cat PATH` to a shell as a script name leads to (the simulated magisk variant prints it).
    raw = RawRead(127, "/system/bin/sh: cat: No such file or directory\n")
    assert not is_missing_file(raw)
    assert "did not run as written" in (unreadable(raw, "the file") or "")


def su_probe_output(said: dict[str, str]) -> str:
    """What `su_form_probe()` prints when each named form printed the given text (forms not named print nothing)."""
    return "".join(f"{SU_MARK} {form}\n{said.get(form, '')}" for form in SU_FORMS) + f"{SU_MARK} end\n"


def test_the_emulator_su_refusing_dash_c_is_not_root_and_not_a_missing_file() -> None:
    refusal = real("su-emulator-invalid-uid-gid-c.txt")
    probe = su_probe_output({"su -c": refusal})
    assert su_form_outputs(probe)["su -c"] == "/system/xbin/su: invalid uid/gid '-c'"
    assert parse_su_form(probe) is None
    raw = RawRead(1, refusal)
    assert not is_missing_file(raw)
    why = unreadable(raw, "Chrome's Preferences")
    assert why is not None and "did not run as written" in why and "invalid uid/gid '-c'" in why
    assert "does not exist" not in why and "no `su`" not in why


def test_a_magisk_root_id_picks_that_form_and_the_fingerprint_records_it() -> None:
    root_id = real("su-id-magisk-root.txt")
    # The form that printed uid=0 is the one recorded; when several did, the first tried.
    probe = su_probe_output({"su -c": root_id})
    assert parse_su_form(probe) == "su -c"
    assert parse_device_fingerprint(f"{MARK}begin suForm\n{probe}{MARK}end suForm\n")["suForm"] == "su -c"
    assert parse_su_form(su_probe_output({"su 0": root_id, "su -c": root_id})) == "su 0"
    # The same id printed for a shell user is not root.
    shell_id = root_id.replace("uid=0(root)", "uid=2000(shell)")
    assert parse_su_form(su_probe_output({"su 0": shell_id, "su -c": shell_id, "su root": shell_id})) is None


def test_a_missing_provider_is_a_sentence_not_an_empty_result() -> None:
    text = real("content-query-could-not-find-provider.txt")
    expected = ("the content provider com.github.cheeriotb.isdrap.provider is not on this device "
                "(IllegalStateException: Could not find provider: com.github.cheeriotb.isdrap.provider)")
    assert provider_error(text) == expected
    assert parse_rows(text, ["_id"]) == []  # no Row: lines: only the provider check tells failure from "none"
    assert rows_snapshot(text, ("_id",), "content://com.github.cheeriotb.isdrap.provider", RawRead(0, text)) == {
        "error": expected}


def test_a_real_row_splits_at_its_columns_with_null_empty_and_a_colon_in_a_value() -> None:
    row = real("content-query-notepad-row.txt")
    columns = ["source", "parent_id", "timestamp", "sharekey", "hashcodes", "photo_thumb", "altitude",
               "api_pending_op", "depth", "short_text", "_id", "note_mode", "nodeid", "source_url", "photo_revision",
               "accuracy_position", "longitude", "shareURL", "owner_id", "owner", "reminder", "photo", "photo_src",
               "server_modified_at", "publicURL", "speed", "accuracy_altitude", "child_count", "display_order",
               "text", "latitude", "bearing", "labels", "created", "parent_nodeid"]
    assert provider_error(row) is None
    [parsed] = parse_rows(row, columns)
    assert parsed["text"] == "Password: helloworld"
    assert parsed["source"] is None and parsed["photo_thumb"] is None and parsed["source_url"] is None
    assert parsed["hashcodes"] == "" and parsed["labels"] == ""
    assert (parsed["_id"], parsed["owner"], parsed["timestamp"], parsed["parent_nodeid"]) == (
        "1", "Me", "1481856516807", "-1")
    # A projection the row does not show, in that order, is refused, not guessed.
    with pytest.raises(ValueError, match="expected column 'text'"):
        parse_rows(row, ["text", *columns[1:]])


@pytest.mark.parametrize(("name", "device"), [
    ("adb-devices-l-huawei-usb.txt",
     DeviceInfo(serial="UYT5T18414003349", state="device", product="ALP-AL00", model="ALP_AL00", device="HWALP",
                transport_id=23)),
    ("adb-devices-l-xiaomi-usb-path.txt",
     DeviceInfo(serial="n311r05e", state="device", product="alioth", model="M2012K11AC", device="alioth",
                transport_id=58)),
])
def test_real_devices_l_lines_with_a_usb_field_read_every_field(name: str, device: DeviceInfo) -> None:
    assert _parse_devices_l(real(name)) == [device]


def observation(xml: str, foreground: str) -> Observation:
    screen = parse_screen(xml)
    return Observation(foreground=foreground, screen=screen, elements=indexed_elements(screen),
                       signature=screen_signature(screen.nodes), raw_chars=len(xml), xml=xml)


def test_an_android_14_status_bar_clock_with_u202f_matches_a_plain_space_everywhere() -> None:
    xml = real("uiautomator-status-bar-clock-nnbsp.xml")
    seen = observation(xml, "com.android.systemui")
    [clock] = seen.screen.nodes
    assert (clock.text, clock.content_desc, clock.resource_id) == ("6:44", "6:44\u202fPM", "com.android.systemui:id/clock")
    # The screen oracle, the observe text and tapOn(text) read U+202F as the space a suite writes.
    assert screen_includes(app_texts(seen.screen.nodes, "com.android.systemui"), "6:44 PM")
    assert not screen_includes(app_texts(seen.screen.nodes, "com.android.systemui"), "6:44 AM")
    assert '"6:44" "6:44 PM" #clock' in seen.text and "\u202f" not in seen.text
    assert _node_by_text(seen, "6:44 PM") == clock


def test_whatsapp_times_with_u202f_match_as_the_app_shows_them_lowercase() -> None:
    xml = real("uiautomator-samsung-whatsapp-times-nnbsp.xml")
    seen = observation(xml, "com.whatsapp")
    texts = app_texts(seen.screen.nodes, "com.whatsapp")
    assert texts == ["10:10\u202fam", "11:35\u202fam"]  # the status bar's 11:32\u202fpm is System UI's, not the app's
    assert screen_includes(texts, "10:10 am") and screen_includes(texts, "11:35 am")
    assert not screen_includes(texts, "10:10 AM")  # the oracle is case-sensitive: this locale prints `am`
    assert not screen_includes(texts, "0:10 am")  # still a standalone match
    assert '"10:10 am" #date' in seen.text and '"11:35 am" #date' in seen.text and "\u202f" not in seen.text
    late = _node_by_text(seen, "11:35 am")
    assert (late.text, late.bounds) == ("11:35\u202fam", (810, 731, 951, 777))
    assert _node_by_text(seen, "11:35 AM") == late  # tapOn falls back to a case-blind match


def test_a_real_dumpsys_package_gives_the_build_fingerprint() -> None:
    text = real("dumpsys-package-gnirehtet.txt")
    assert parse_app_build(text) == {"versionName": "2.3", "versionCode": 6, "lastUpdateTime": "2019-06-06 13:19:05"}
    # With the suite's APK, its hash takes the install time's place (preflight reinstalls it every run).
    assert parse_app_build(text, apk_sha256="ab12") == {"versionName": "2.3", "versionCode": 6, "apkSha256": "ab12"}
    # The same package listed again as the factory version of an updated system app does not count.
    updated = text.replace("versionName=2.3", "versionName=2.4").replace("versionCode=6 ", "versionCode=7 ")
    hidden = updated + "\nHidden system packages:\n" + text
    assert parse_app_build(hidden)["versionName"] == "2.4" and parse_app_build(hidden)["versionCode"] == 7
