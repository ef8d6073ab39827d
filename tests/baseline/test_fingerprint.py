"""Tests for fingerprint.py: device fingerprint parsing from one batched adb output, and the app build."""

from __future__ import annotations


import pytest

from pytest_agentbench.baseline.fingerprints import (
    DEVICE_FINGERPRINT_COMMANDS,
    DEVICE_FINGERPRINT_FIELDS,
    device_fingerprint_script,
    parse_app_build,
    parse_device_fingerprint,
)

MARK = "@@agentbench-fp@@"

# What a Pixel on Android 14 prints for each command of the batch.
PIXEL_SECTIONS = {
    "sdk": "34",
    "model": "Pixel 8",
    "localeSystem": "en-GB",
    "localeProduct": "en-US",
    "wmSize": "Physical size: 1080x2400",
    "wmDensity": "Physical density: 420",
    "fontScale": "1.15",
    "windowAnimationScale": "0.0",
    "transitionAnimationScale": "0.0",
    "animatorDurationScale": "0.0",
    "uiModeNight": "Night mode: no",
    "accessibilityServices": "null",
    "navigationMode": "2",
    "inputMethod": "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME",
    "timeZone": "Europe/London",
    "time1224": "24",
    "buildId": "UQ1A.240205.004",
    "windowDisplays": (
        "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n"
        "  Display: mDisplayId=0 rootTasks=2\n"
        "    init=1080x2400 420dpi cur=1080x2400 app=1080x2337 rng=1080x1017-2337x2274\n"
        "    mCurrentRotation=ROTATION_0 mLastOrientation=-1\n"
    ),
    "accelerometerRotation": "1",
    "userRotation": "0",
    "suForm": ("@@agentbench-su@@ su 0\nuid=0(root) gid=0(root) groups=0(root) context=u:r:su:s0\n"
               "@@agentbench-su@@ su -c\nsu: unknown user -c\n@@agentbench-su@@ su root\n"
               "uid=0(root) gid=0(root) groups=0(root) context=u:r:su:s0\n@@agentbench-su@@ end"),
}

PIXEL_FINGERPRINT = {
    "sdk": "34",
    "model": "Pixel 8",
    "locale": "en-GB",
    "screenSize": "1080x2400",
    "density": "420",
    "fontScale": "1.15",
    "windowAnimationScale": "0.0",
    "transitionAnimationScale": "0.0",
    "animatorDurationScale": "0.0",
    "theme": "light",
    "accessibilityServices": "none",
    "navigationMode": "gesture",
    "inputMethod": "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME",
    "timeZone": "Europe/London",
    "clock": "24",
    "buildId": "UQ1A.240205.004",
    "rotation": "0",
    "suForm": "su 0",
}


def _output(sections: dict[str, str], *, crlf: bool = False) -> str:
    text = "".join(f"{MARK}begin {name}\n{body}\n{MARK}end {name}\n" for name, body in sections.items())
    return text.replace("\n", "\r\n") if crlf else text


def test_script_runs_every_command_once_between_markers_in_one_shell_line():
    script = str(device_fingerprint_script())
    assert "\n" not in script
    for section, argv in DEVICE_FINGERPRINT_COMMANDS:
        assert script.count(f"{MARK}begin {section}'") == 1
        assert " ".join(argv) + " 2>/dev/null" in script


@pytest.mark.parametrize("crlf", [False, True])
def test_full_output_gives_every_field(crlf):
    fingerprint = parse_device_fingerprint(_output(PIXEL_SECTIONS, crlf=crlf))
    assert fingerprint == PIXEL_FINGERPRINT
    assert tuple(fingerprint) == DEVICE_FINGERPRINT_FIELDS


# Each row: the sections changed, the field, and what it reads as.
@pytest.mark.parametrize(
    ("sections", "field", "expected"),
    [
        ({"sdk": ""}, "sdk", "unknown"),
        ({"model": "Pixel 7 Pro"}, "model", "Pixel 7 Pro"),
        ({"localeSystem": ""}, "locale", "en-US"),
        ({"localeSystem": "", "localeProduct": ""}, "locale", "unknown"),
        ({"wmSize": "Physical size: 1080x2400\nOverride size: 720x1600"}, "screenSize", "720x1600"),
        ({"wmSize": "cmd: Can't find service: window"}, "screenSize", "unknown"),
        ({"wmDensity": "Physical density: 420\nOverride density: 360"}, "density", "360"),
        ({"wmDensity": ""}, "density", "unknown"),
        ({"fontScale": "null"}, "fontScale", "1.0"),
        ({"fontScale": "1"}, "fontScale", "1.0"),
        ({"fontScale": "big"}, "fontScale", "unknown"),
        ({"windowAnimationScale": "null"}, "windowAnimationScale", "1.0"),
        ({"transitionAnimationScale": "0.5"}, "transitionAnimationScale", "0.5"),
        ({"animatorDurationScale": ""}, "animatorDurationScale", "unknown"),
        ({"uiModeNight": "Night mode: yes"}, "theme", "dark"),
        ({"uiModeNight": "Night mode: auto"}, "theme", "auto"),
        ({"uiModeNight": "Night mode: custom"}, "theme", "custom"),
        ({"uiModeNight": "Night mode: custom_schedule"}, "theme", "custom_schedule"),
        ({"uiModeNight": "Night mode: custom_bedtime"}, "theme", "custom_bedtime"),
        ({"uiModeNight": "Night mode: unknown"}, "theme", "unknown"),
        ({"uiModeNight": "cmd: Can't find service: uimode"}, "theme", "unknown"),
        (
            {"accessibilityServices": "com.google.android.marvin.talkback/.TalkBackService:com.a/.B"},
            "accessibilityServices",
            "com.a/.B,com.google.android.marvin.talkback/.TalkBackService",
        ),
        ({"accessibilityServices": ""}, "accessibilityServices", "none"),
        ({"navigationMode": "0"}, "navigationMode", "3-button"),
        ({"navigationMode": "1"}, "navigationMode", "2-button"),
        ({"navigationMode": "null"}, "navigationMode", "unknown"),
        ({"navigationMode": "7"}, "navigationMode", "unknown"),
        ({"inputMethod": "null"}, "inputMethod", "unknown"),
        ({"timeZone": ""}, "timeZone", "unknown"),
        ({"time1224": "12"}, "clock", "12"),
        ({"time1224": "null"}, "clock", "auto"),
        ({"time1224": "13"}, "clock", "unknown"),
        ({"buildId": ""}, "buildId", "unknown"),
        ({"windowDisplays": "    mCurrentRotation=ROTATION_90 mLastOrientation=0"}, "rotation", "90"),
        ({"windowDisplays": "  mRotation=3 mAltOrientation=false"}, "rotation", "270"),
        ({"windowDisplays": "  SurfaceOrientation: 2"}, "rotation", "180"),
        ({"windowDisplays": "", "accelerometerRotation": "0", "userRotation": "1"}, "rotation", "90"),
        ({"windowDisplays": "", "accelerometerRotation": "1", "userRotation": "1"}, "rotation", "unknown"),
        ({"windowDisplays": "", "accelerometerRotation": "0", "userRotation": "null"}, "rotation", "unknown"),
    ],
)
def test_each_field_parses_or_reads_unknown(sections, field, expected):
    fingerprint = parse_device_fingerprint(_output({**PIXEL_SECTIONS, **sections}))
    assert fingerprint[field] == expected
    # Only the field under test moved.
    others = {key: value for key, value in fingerprint.items() if key != field}
    assert others == {key: value for key, value in PIXEL_FINGERPRINT.items() if key != field}


def test_a_cut_off_output_reads_the_missing_sections_as_unknown():
    full = _output(PIXEL_SECTIONS)
    cut = full[: full.index(f"{MARK}end timeZone")]
    fingerprint = parse_device_fingerprint(cut)
    assert fingerprint["sdk"] == "34"
    assert fingerprint["timeZone"] == "unknown"
    assert fingerprint["clock"] == fingerprint["buildId"] == fingerprint["rotation"] == "unknown"


def test_empty_output_is_all_unknown():
    assert set(parse_device_fingerprint("").values()) == {"unknown"}


DUMPSYS_PACKAGE = """\
Packages:
  Package [dev.example.playground] (4f1a2b3):
    userId=10123
    versionCode=12 minSdk=24 targetSdk=34
    versionName=1.2.0
    lastUpdateTime=2026-11-30 02:59:00
Hidden system packages:
  Package [dev.example.playground] (1a2b3c4):
    versionCode=1 minSdk=24 targetSdk=34
    versionName=1.0
    lastUpdateTime=2008-12-31 16:00:00
"""


@pytest.mark.parametrize(
    ("output", "apk", "expected"),
    [
        (DUMPSYS_PACKAGE, None, {"versionName": "1.2.0", "versionCode": 12, "lastUpdateTime": "2026-11-30 02:59:00"}),
        (DUMPSYS_PACKAGE, "0123456789abcdef", {"versionName": "1.2.0", "versionCode": 12, "apkSha256": "0123456789abcdef"}),
        ("Unable to find package: dev.example.none\n", None, {"versionName": "unknown", "versionCode": "unknown", "lastUpdateTime": "unknown"}),
        ("    versionCode=3 minSdk=24\n", None, {"versionName": "unknown", "versionCode": 3, "lastUpdateTime": "unknown"}),
    ],
)
def test_parse_app_build(output, apk, expected):
    assert parse_app_build(output, apk_sha256=apk) == expected
