"""Tests for the simulated phone's command families and its Python contract (fs, counters, lock, versions)."""

from __future__ import annotations

import hashlib
import io
import json
import re
import stat
import struct
import threading
import zipfile
import zlib

import pytest

from pytest_agentbench.sim.phone import CommandResult, Phone

PLAYGROUND = "dev.jasonpearson.automobile.playground"
SETTINGS = "com.android.settings"


@pytest.fixture
def phone() -> Phone:
    return Phone()


def out(phone: Phone, line: str) -> str:
    result = phone.shell(line)
    assert result.exit_code == 0, (line, result)
    return result.stdout.decode()


# getprop / settings / uimode / wm


@pytest.mark.parametrize(
    ("key", "expected"),
    [("ro.build.version.sdk", "34"), ("ro.build.version.release", "14"), ("ro.product.model", "AgentBench Sim"),
     ("ro.product.manufacturer", "AgentBench"), ("ro.product.name", "agentbench_sim"),
     ("ro.product.device", "agentbench"), ("ro.build.id", "UQ1A.240205.004"), ("persist.sys.locale", "en-US"),
     ("ro.product.locale", "en-US"), ("ro.boot.qemu.avd_name", "AgentBench_sim"), ("ro.debuggable", "1"),
     ("no.such.prop", "")],
)
def test_getprop_single_key(phone: Phone, key: str, expected: str) -> None:
    assert out(phone, f"getprop {key}") == expected + "\n"


def test_getprop_without_argument_lists_all_in_android_form(phone: Phone) -> None:
    listing = out(phone, "getprop")
    assert "[ro.build.version.sdk]: [34]\n" in listing
    assert re.search(r"^\[ro\.build\.fingerprint\]: \[.+:14/UQ1A\.240205\.004/.+\]$", listing, re.M)


def test_overrides_change_props_and_banner() -> None:
    phone = Phone("sim7", model="Pixel 8", sdk=33, props={"ro.product.name": "husky"})
    assert out(phone, "getprop ro.build.version.sdk") == "33\n"
    assert phone.banner_props == {"ro.product.name": "husky", "ro.product.model": "Pixel 8",
                                  "ro.product.device": "agentbench"}
    with pytest.raises(TypeError, match="no_such_override"):
        Phone(no_such_override=1)


@pytest.mark.parametrize(
    ("namespace", "key", "expected"),
    [("system", "font_scale", "1.0"), ("global", "window_animation_scale", "1.0"),
     ("global", "transition_animation_scale", "1.0"), ("global", "animator_duration_scale", "1.0"),
     ("secure", "enabled_accessibility_services", "null"), ("secure", "navigation_mode", "2"),
     ("secure", "default_input_method", "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME"),
     ("system", "time_12_24", "null"), ("global", "device_name", "AgentBench Sim"), ("system", "user_rotation", "0"),
     ("system", "accelerometer_rotation", "0"), ("global", "wifi_on", "0"), ("global", "airplane_mode_on", "0")],
)
def test_settings_defaults(phone: Phone, namespace: str, key: str, expected: str) -> None:
    assert out(phone, f"settings get {namespace} {key}") == expected + "\n"


def test_settings_put_get_list_delete(phone: Phone) -> None:
    out(phone, "settings put system time_12_24 24")
    assert out(phone, "settings --user 0 get system time_12_24") == "24\n"
    assert "time_12_24=24\n" in out(phone, "settings list system")
    assert out(phone, "settings delete system time_12_24") == "Deleted 1 rows\n"
    assert out(phone, "settings get system time_12_24") == "null\n"
    bad = phone.shell("settings get nowhere key")
    assert bad.exit_code == 1 and b"Invalid namespace" in bad.stderr


def test_uimode_night(phone: Phone) -> None:
    assert out(phone, "cmd uimode night") == "Night mode: no\n"
    assert out(phone, "cmd uimode night yes") == "Night mode: yes\n"
    assert out(phone, "cmd uimode night") == "Night mode: yes\n"
    assert phone.night_mode


def test_wm_size_and_density_with_overrides(phone: Phone) -> None:
    assert out(phone, "wm size") == "Physical size: 1080x2400\n"
    assert out(phone, "wm density") == "Physical density: 420\n"
    out(phone, "wm size 720x1280")
    out(phone, "wm density 320")
    assert out(phone, "wm size") == "Physical size: 1080x2400\nOverride size: 720x1280\n"
    assert out(phone, "wm density") == "Physical density: 420\nOverride density: 320\n"
    assert phone.size == (720, 1280)
    out(phone, "wm size reset")
    assert out(phone, "wm size") == "Physical size: 1080x2400\n"


# dumpsys


def test_dumpsys_window_displays_names_focus_sizes_and_rotation(phone: Phone) -> None:
    text = out(phone, "dumpsys window displays")
    assert "mCurrentFocus=Window{" in text
    assert re.search(r"mCurrentFocus=Window\{\S+ u0 com\.android\.launcher3/com\.android\.launcher3\.\S+\}", text)
    assert "cur=1080x2400" in text and "app=1080x" in text
    assert "mRotation=0" in text
    out(phone, "monkey -p com.android.settings -c android.intent.category.LAUNCHER 1")
    assert "u0 com.android.settings/com.android.settings.Settings}" in out(phone, "dumpsys window")


def test_dumpsys_package_of_a_debuggable_app(phone: Phone) -> None:
    text = out(phone, f"dumpsys package {PLAYGROUND}")
    assert re.search(r"^\s+versionCode=100 minSdk=24 targetSdk=34$", text, re.M)
    assert re.search(r"^\s+versionName=1\.0\.0$", text, re.M)
    assert re.search(r"^\s+lastUpdateTime=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", text, re.M)
    assert re.search(r"^\s+firstInstallTime=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", text, re.M)
    assert re.search(r"^\s+flags=\[ DEBUGGABLE ", text, re.M)
    assert "codePath=/data/app/~~" in text
    assert "DEBUGGABLE" not in out(phone, f"dumpsys package {SETTINGS}")


def test_set_version_simulates_an_update(phone: Phone) -> None:
    before = re.search(r"lastUpdateTime=(.+)", out(phone, f"dumpsys package {PLAYGROUND}")).group(1)
    first = phone.packages[PLAYGROUND].last_update
    phone.set_version(PLAYGROUND, version_name="1.1.0", version_code=110)
    text = out(phone, f"dumpsys package {PLAYGROUND}")
    assert "versionName=1.1.0" in text and "versionCode=110 " in text
    assert phone.packages[PLAYGROUND].last_update > first
    assert re.search(r"lastUpdateTime=(.+)", text).group(1) != before


def test_dumpsys_power_and_surfaceflinger(phone: Phone) -> None:
    power = out(phone, "dumpsys power")
    # The testbed's background sync holds the phone's one wake lock from boot.
    assert "mWakefulness=Awake" in power and "Wake Locks: size=1\n  PARTIAL_WAKE_LOCK              'Testbed:SyncWorker'" in power
    lines = out(phone, "dumpsys SurfaceFlinger --display-id").splitlines()
    assert len([line for line in lines if line.startswith("Display ")]) == 1


# am / monkey


def test_am_start_component_with_wait(phone: Phone) -> None:
    text = out(phone, "am start -W -n com.android.settings/.Settings")
    assert text.startswith("Starting: Intent { cmp=com.android.settings/.Settings }\n")
    assert "Status: ok\n" in text and "LaunchState: COLD\n" in text and text.endswith("Complete\n")
    assert phone.foreground() == (SETTINGS, "com.android.settings.Settings")


def test_am_start_view_deep_link(phone: Phone) -> None:
    text = out(phone, "am start -a android.intent.action.VIEW -d automobile://playground/demos/ux/start")
    assert text == "Starting: Intent { act=android.intent.action.VIEW dat=automobile://playground/demos/ux/start }\n"
    assert phone.foreground()[0] == PLAYGROUND


def test_am_start_unresolvable_intent_fails(phone: Phone) -> None:
    result = phone.shell("am start -a android.intent.action.VIEW -d nosuchscheme://x")
    assert result.exit_code == 1
    assert result.stdout.startswith(b"Starting: Intent { act=android.intent.action.VIEW dat=nosuchscheme://x }")
    assert result.stderr.startswith(b"Error: Activity not started, unable to resolve Intent {")
    missing = phone.shell("am start -n com.android.settings/.Nope")
    assert missing.exit_code == 1
    assert b"Error: Activity class {com.android.settings/com.android.settings.Nope} does not exist." in missing.stderr


def test_am_settings_action_opens_the_wifi_screen(phone: Phone) -> None:
    out(phone, "am start -a android.settings.WIFI_SETTINGS")
    assert "Internet" in phone.screen_xml() and "Wi-Fi" in phone.screen_xml()


def test_am_get_current_user_and_force_stop(phone: Phone) -> None:
    assert out(phone, "am get-current-user") == "0\n"
    out(phone, "monkey -p com.android.settings -c android.intent.category.LAUNCHER 1")
    out(phone, "am force-stop com.android.settings")
    assert phone.foreground()[0] == "com.android.launcher3"
    assert SETTINGS not in phone.runtimes


def test_monkey_launches_and_reports_one_event(phone: Phone) -> None:
    text = out(phone, f"monkey -p {PLAYGROUND} -c android.intent.category.LAUNCHER 1")
    assert "Events injected: 1" in text
    assert phone.foreground()[0] == PLAYGROUND
    assert phone.shell("monkey -p no.such.pkg -c android.intent.category.LAUNCHER 1").exit_code != 0


# pm / cmd package


def test_pm_list_packages_and_third_party_filter(phone: Phone) -> None:
    everything = out(phone, "pm list packages").splitlines()
    assert f"package:{SETTINGS}" in everything and f"package:{PLAYGROUND}" in everything
    assert out(phone, "pm list packages -3").splitlines() == ["package:dev.agentbench.testbed", f"package:{PLAYGROUND}"]
    assert out(phone, "pm list packages play").splitlines() == [f"package:{PLAYGROUND}"]


def test_pm_list_users_and_features(phone: Phone) -> None:
    assert "UserInfo{0:Owner:c13} running" in out(phone, "pm list users")
    features = out(phone, "pm list features").splitlines()
    assert "feature:android.hardware.touchscreen" in features
    assert all(line.startswith("feature:") for line in features)


def test_pm_path_and_sha256sum_of_the_installed_apk(phone: Phone) -> None:
    path_line = out(phone, f"pm path {PLAYGROUND}")
    assert re.fullmatch(rf"package:/data/app/~~\S+==/{re.escape(PLAYGROUND)}-\S+==/base\.apk\n", path_line)
    digest = out(phone, f"sha256sum {path_line[len('package:'):].strip()}").split()[0]
    assert len(digest) == 64
    missing = phone.shell("pm path no.such.pkg")
    assert (missing.exit_code, missing.stdout) == (1, b"")


def _zip_apk(manifest: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("AndroidManifest.json", json.dumps(manifest))
        archive.writestr("classes.dex", b"dex\n035\0" + bytes(range(256)))
    return buffer.getvalue()


@pytest.mark.parametrize(
    "apk",
    [_zip_apk({"package": "com.example.notes", "versionName": "2.0", "versionCode": 20, "debuggable": True}),
     b"package=com.example.notes\nversionName=2.0\nversionCode=20\ndebuggable=true\n"],
    ids=["zip-manifest", "text-manifest"],
)
def test_pm_install_reads_the_manifest_and_keeps_the_bytes(phone: Phone, apk: bytes) -> None:
    phone.fs.write("/data/local/tmp/app.apk", apk)
    assert out(phone, "pm install -r /data/local/tmp/app.apk") == "Success\n"
    assert "versionName=2.0" in out(phone, "dumpsys package com.example.notes")
    apk_path = out(phone, "pm path com.example.notes")[len("package:"):].strip()
    assert out(phone, f"sha256sum {apk_path}").split()[0] == hashlib.sha256(apk).hexdigest()
    assert "package:com.example.notes" in out(phone, "pm list packages -3")
    uid = phone.packages["com.example.notes"].uid
    assert out(phone, "run-as com.example.notes id").startswith(f"uid={uid}(u0_a{uid - 10000})")
    assert f"userId={uid}" in out(phone, "dumpsys package com.example.notes")
    out(phone, "monkey -p com.example.notes -c android.intent.category.LAUNCHER 1")
    assert 'text="Notes"' in phone.screen_xml()


def test_pm_install_update_changes_last_update_time_and_refuses_downgrade(phone: Phone) -> None:
    first = phone.packages[PLAYGROUND].last_update
    phone.fs.write("/data/local/tmp/pg.apk", f"package={PLAYGROUND}\nversionName=1.2.0\nversionCode=120\n".encode())
    assert out(phone, "pm install -r /data/local/tmp/pg.apk") == "Success\n"
    assert phone.packages[PLAYGROUND].last_update > first
    assert phone.packages[PLAYGROUND].debuggable
    phone.fs.write("/data/local/tmp/old.apk", f"package={PLAYGROUND}\nversionCode=1\n".encode())
    result = phone.shell("pm install -r /data/local/tmp/old.apk")
    assert result.exit_code == 1 and b"INSTALL_FAILED_VERSION_DOWNGRADE" in result.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"\x00\x01binary", b"INSTALL_PARSE_FAILED_NOT_APK"), (b"versionCode=3\n", b"no package name"),
     (b"PK\x03\x04broken zip", b"no readable AndroidManifest.json")],
)
def test_pm_install_rejects_unreadable_manifests(phone: Phone, content: bytes, message: bytes) -> None:
    phone.fs.write("/data/local/tmp/bad.apk", content)
    result = phone.shell("pm install -r /data/local/tmp/bad.apk")
    assert result.exit_code == 1
    assert message in result.stdout


def test_pm_install_of_a_missing_file(phone: Phone) -> None:
    result = phone.shell("pm install -r /data/local/tmp/none.apk")
    assert result.exit_code != 0 and b"Unable to open file" in result.stderr


def test_resolve_activity_brief(phone: Phone) -> None:
    assert out(phone, f"cmd package resolve-activity --brief {SETTINGS}") == (
        "priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=true\n"
        "com.android.settings/.Settings\n")


def test_query_activities_lists_launchable_packages(phone: Phone) -> None:
    text = out(phone, "cmd package query-activities -a android.intent.action.MAIN -c android.intent.category.LAUNCHER")
    packages = [line.strip()[len("packageName="):] for line in text.splitlines() if line.strip().startswith("packageName=")]
    assert SETTINGS in packages and PLAYGROUND in packages
    assert "com.android.launcher3" not in packages  # the home screen answers to HOME, not LAUNCHER


def test_unknown_cmd_service(phone: Phone) -> None:
    result = phone.shell("cmd nosuchservice x")
    assert result.exit_code == 255 and b"Can't find service: nosuchservice" in result.stderr


# run-as


def test_run_as_runs_in_the_app_data_dir(phone: Phone) -> None:
    assert out(phone, f"run-as {PLAYGROUND} pwd") == f"/data/data/{PLAYGROUND}\n"
    out(phone, f"run-as {PLAYGROUND} sh -c 'mkdir -p shared_prefs && echo x > shared_prefs/a.xml'")
    assert phone.fs.read(f"/data/data/{PLAYGROUND}/shared_prefs/a.xml", user=PLAYGROUND) == b"x\n"
    assert out(phone, f"run-as {PLAYGROUND} cat /data/user/0/{PLAYGROUND}/shared_prefs/a.xml") == "x\n"


def test_run_as_reads_stdin_through_a_pipe(phone: Phone) -> None:
    out(phone, f"echo piped | run-as {PLAYGROUND} sh -c 'cat > note.txt'")
    assert out(phone, f"run-as {PLAYGROUND} cat note.txt") == "piped\n"


@pytest.mark.parametrize(
    ("package", "message"),
    [(SETTINGS, f"run-as: package not debuggable: {SETTINGS}\n"), ("no.such.pkg", "run-as: unknown package: no.such.pkg\n")],
)
def test_run_as_refuses(phone: Phone, package: str, message: str) -> None:
    result = phone.shell(f"run-as {package} id")
    assert (result.exit_code, result.stderr.decode()) == (1, message)


def test_run_as_cannot_reach_another_app(phone: Phone) -> None:
    result = phone.shell(f"run-as {PLAYGROUND} ls /data/data/{SETTINGS}")
    assert result.exit_code == 1 and b"Permission denied" in result.stderr


# coreutils


def test_file_commands_round_trip(phone: Phone) -> None:
    out(phone, "mkdir -p /sdcard/a/b && echo one > /sdcard/a/b/f && cp /sdcard/a/b/f /sdcard/a/g")
    assert out(phone, "ls /sdcard/a") == "b\ng\n"
    out(phone, "mv -f /sdcard/a/g /sdcard/a/h")
    assert out(phone, "cat /sdcard/a/h") == "one\n"
    assert re.fullmatch(r"-rw-r--r-- 1 shell shell +4 \d{4}-\d\d-\d\d \d\d:\d\d /sdcard/a/h\n", out(phone, "ls -l /sdcard/a/h"))
    out(phone, "rm -rf /sdcard/a")
    assert phone.fs.stat("/sdcard/a") is None
    assert phone.shell("rm /sdcard/none").exit_code == 1
    assert phone.shell("rm -f /sdcard/none").exit_code == 0
    assert phone.shell("mkdir /sdcard/x/y").exit_code == 1


def test_mobilecli_style_push_then_move(phone: Phone) -> None:
    phone.fs.write("/data/local/tmp/mobilecli.dex.tmp", b"dex")
    out(phone, "mv -f /data/local/tmp/mobilecli.dex.tmp /data/local/tmp/mobilecli.dex")
    assert phone.fs.read("/data/local/tmp/mobilecli.dex") == b"dex"


def test_sha256sum_of_stdin_and_files(phone: Phone) -> None:
    assert out(phone, "printf abc | sha256sum") == hashlib.sha256(b"abc").hexdigest() + "  -\n"
    phone.fs.write("/sdcard/f", b"abc")
    assert out(phone, "sha256sum /sdcard/f") == hashlib.sha256(b"abc").hexdigest() + "  /sdcard/f\n"


def test_id_is_the_shell_user(phone: Phone) -> None:
    assert out(phone, "id").startswith("uid=2000(shell) gid=2000(shell)")


# input / uiautomator / screencap


def test_input_text_with_percent_s_and_escapes_goes_to_the_focused_field(phone: Phone) -> None:
    out(phone, "am start -a android.intent.action.VIEW -d automobile://playground/login")
    out(phone, "input tap 540 300")  # the Email field (first field under the title)
    out(phone, "input text hi%sthere")
    out(phone, "input text \\ and\\ more")
    assert phone.runtimes[PLAYGROUND].fields["email"] == "hi there and more"
    out(phone, "input keyevent KEYCODE_DEL 67")
    assert phone.runtimes[PLAYGROUND].fields["email"] == "hi there and mo"


@pytest.mark.parametrize("key", ["KEYCODE_HOME", "HOME", "3"])
def test_keyevent_home_by_name_or_number(phone: Phone, key: str) -> None:
    out(phone, "monkey -p com.android.settings -c android.intent.category.LAUNCHER 1")
    out(phone, f"input keyevent {key}")
    assert phone.foreground()[0] == "com.android.launcher3"


def test_unknown_keycode_is_an_error(phone: Phone) -> None:
    result = phone.shell("input keyevent KEYCODE_NOPE")
    assert result.exit_code != 0 and b"Unknown keycode" in result.stderr


def test_uiautomator_dump_to_the_default_file(phone: Phone) -> None:
    result = phone.shell("uiautomator dump")
    assert result == CommandResult(b"UI hierchary dumped to: /sdcard/window_dump.xml\n", b"", 0)
    assert phone.fs.read("/sdcard/window_dump.xml").decode() == phone.screen_xml()
    assert out(phone, "uiautomator dump /sdcard/x.xml") == "UI hierchary dumped to: /sdcard/x.xml\n"


def test_uiautomator_dump_to_tty_prints_xml_then_the_confirmation(phone: Phone) -> None:
    result = phone.shell("uiautomator dump /dev/tty")
    assert result.stderr == b""
    assert result.stdout.startswith(b"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">")
    assert result.stdout.endswith(b"</hierarchy>UI hierchary dumped to: /dev/tty\n")


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert (length, kind) == (13, b"IHDR")
    header = data[16:29]
    assert struct.unpack(">I", data[29:33])[0] == zlib.crc32(b"IHDR" + header)
    width, height, depth, color_type = struct.unpack(">IIBB", header[:10])
    assert (depth, color_type) == (8, 2)
    return width, height


def _png_pixels(data: bytes) -> bytes:
    offset, idat = 8, b""
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        if kind == b"IDAT":
            idat += data[offset + 8:offset + 8 + length]
        offset += 12 + length
    return zlib.decompress(idat)


def test_screencap_png_has_the_screen_size_and_decodes(phone: Phone) -> None:
    result = phone.shell("screencap -p")
    assert result.stderr == b"" and result.exit_code == 0
    assert _png_size(result.stdout) == (1080, 2400)
    raw = _png_pixels(result.stdout)
    assert len(raw) == 2400 * (1 + 1080 * 3)
    # Something other than the background was painted (status bar, icons, texts).
    assert len(set(raw[1 + 3 * 100:1 + 3 * 101 * 30])) > 1
    out(phone, "wm size 720x1280")
    assert _png_size(phone.shell("/system/bin/screencap -p").stdout) == (720, 1280)


def test_screencap_to_a_file_and_raw(phone: Phone) -> None:
    assert phone.shell("screencap -p /sdcard/s.png") == CommandResult(b"", b"", 0)
    assert _png_size(phone.fs.read("/sdcard/s.png")) == (1080, 2400)
    raw = phone.shell("screencap").stdout
    assert struct.unpack("<IIII", raw[:16]) == (1080, 2400, 1, 0)
    assert len(raw) == 16 + 1080 * 2400 * 4


def test_a_repeated_screen_reuses_its_png_and_a_painted_change_draws_anew(phone: Phone) -> None:
    from pytest_agentbench.sim.png import encode_png, render_rgb

    def drawn_now() -> bytes:
        width, height = phone.size
        return encode_png(render_rgb(phone.render(), width, height, night=phone.night_mode), width, height)

    first = phone.shell("screencap -p").stdout
    assert phone.shell("screencap -p").stdout == first == drawn_now()
    out(phone, "settings put secure ui_night_mode 2")  # only the palette changes
    night = phone.shell("screencap -p").stdout
    assert night != first and night == drawn_now()


def test_screens_differ_in_their_screenshots(phone: Phone) -> None:
    home = phone.shell("screencap -p").stdout
    out(phone, "monkey -p com.android.settings -c android.intent.category.LAUNCHER 1")
    assert phone.shell("screencap -p").stdout != home


# fs contract, counters, log, threads


def test_fs_contract(phone: Phone) -> None:
    phone.fs.write("/data/local/tmp/x", b"abc", mode=0o755, mtime=1_700_000_000)
    info = phone.fs.stat("/data/local/tmp/x")
    assert (stat.S_ISREG(info.mode), info.mode & 0o777, info.size, info.mtime) == (True, 0o755, 3, 1_700_000_000)
    assert phone.fs.read("/data/local/tmp/x") == b"abc"
    assert "x" in phone.fs.listdir("/data/local/tmp")
    assert stat.S_ISDIR(phone.fs.stat("/sdcard").mode)
    assert phone.fs.stat("/nope") is None
    phone.fs.write("/sdcard/new/dir/f", b"")  # adbd creates parents on push
    assert phone.fs.stat("/sdcard/new/dir").is_dir
    assert "screencap" in phone.fs.listdir("/system/bin")
    with pytest.raises(FileNotFoundError):
        phone.fs.read("/sdcard/missing")


def test_command_log_and_counters(phone: Phone) -> None:
    phone.shell("getprop ro.build.version.sdk")
    phone.shell("wm size")
    assert phone.command_log == ["getprop ro.build.version.sdk", "wm size"]
    phone.counters["shell"] += 1  # the transport's job; the phone only provides the Counter
    assert phone.counters["shell"] == 1


def test_parallel_shell_calls_each_get_their_own_answer(phone: Phone) -> None:
    results: dict[int, CommandResult] = {}

    def worker(index: int) -> None:
        results[index] = phone.shell(f"echo {index} > /sdcard/t{index}; cat /sdcard/t{index}; input tap 1 1")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {i: r.stdout for i, r in results.items()} == {i: f"{i}\n".encode() for i in range(20)}
    assert len(phone.command_log) == 20


def test_sleep_lets_other_threads_use_the_phone(phone: Phone) -> None:
    started = threading.Event()
    finished: list[CommandResult] = []

    def sleeper() -> None:
        started.set()
        finished.append(phone.shell("sleep 0.3; echo woke"))

    thread = threading.Thread(target=sleeper)
    thread.start()
    started.wait()
    # Taken while the sleeper holds the lock only if sleep let go of it.
    assert phone.shell("echo meanwhile").stdout == b"meanwhile\n"
    thread.join()
    assert finished[0].stdout == b"woke\n"


def test_content_insert_sets_rotation_like_mobile_mcp_does(phone: Phone) -> None:
    out(phone, "content insert --uri content://settings/system --bind name:s:user_rotation --bind value:i:1")
    assert out(phone, "settings get system user_rotation") == "1\n"
    assert phone.size == (2400, 1080)
    assert '<hierarchy rotation="1">' in phone.screen_xml()
    assert "name=user_rotation, value=1" in out(phone, "content query --uri content://settings/system")
    # Android's `content` exits 0 whatever happens; a provider's refusal is on stderr.
    missing = phone.shell("content insert --uri content://nope/x --bind name:s:a --bind value:s:b")
    assert missing.exit_code == 0
    assert missing.stderr.startswith(b"Error while accessing provider:nope\njava.lang.IllegalStateException: "
                                     b"Could not find provider: nope\n")


def test_python_callers_reach_private_storage_but_the_shell_does_not(phone: Phone) -> None:
    path = f"/data/data/{PLAYGROUND}/shared_prefs/seeded.xml"
    phone.fs.write(path, b"<map />")
    assert phone.fs.read(path) == b"<map />"
    assert phone.shell(f"cat {path}").exit_code == 1
    assert phone.shell(f"run-as {PLAYGROUND} cat shared_prefs/seeded.xml").stdout == b"<map />"
    with pytest.raises(PermissionError):
        phone.fs.read(path, user="shell")
