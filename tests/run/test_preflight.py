"""Preflight: typed preference files, the batched reset script, and the start state on a simulated phone."""

from __future__ import annotations


import pytest
from defusedxml import ElementTree

from phoneadb import PhoneAdb
from pytest_agentbench.errors import PreflightError
from pytest_agentbench.run.preflight import (
    _split_steps,
    build_reset_script,
    render_shared_prefs,
    run_preflight,
)
from pytest_agentbench.device.uiautomator import app_texts, extract_hierarchy, parse_hierarchy
from pytest_agentbench.suite import AppSpec, PreflightSpec

PLAYGROUND = "dev.jasonpearson.automobile.playground"
SEEDS = {"onboarding_prefs": {"onboarding_completed": True}, "auth_prefs": {"is_guest_mode": True}}


def _preflight(**overrides) -> PreflightSpec:
    values = dict(
        clear_app_data=True, shared_preferences=SEEDS, launch_uri="automobile://playground/demos/bugs/repro",
        settle_seconds=0, start_screen_includes=("Bug Reproduction Demo",),
    )
    values.update(overrides)
    return PreflightSpec(**values)


@pytest.mark.parametrize(
    "value, element",
    [
        (True, '<boolean name="k" value="true" />'),
        (False, '<boolean name="k" value="false" />'),
        (3, '<int name="k" value="3" />'),
        (-(2**31), '<int name="k" value="-2147483648" />'),
        (2**31, '<long name="k" value="2147483648" />'),
        (9007199254740991, '<long name="k" value="9007199254740991" />'),
        (1.5, '<float name="k" value="1.5" />'),
        (2.0, '<float name="k" value="2.0" />'),
        ("a <b> & 'c'", "<string name=\"k\">a &lt;b&gt; &amp; 'c'</string>"),
        (("x", "y"), '<set name="k">'),
    ],
    ids=["true", "false", "int", "int-min", "long-just-past-int", "long-max-safe", "float", "whole-float", "string-escaped", "string-set"],
)
def test_each_value_gets_androids_typed_tag(value, element):
    xml = render_shared_prefs({"k": value})
    assert element in xml
    ElementTree.fromstring(xml.encode())  # well-formed


def test_string_set_lists_every_member():
    root = ElementTree.fromstring(render_shared_prefs({"tags": ("a", "b")}).encode())
    assert [s.text for s in root.find("set")] == ["a", "b"]


def test_steps_are_split_and_the_first_unfinished_one_is_the_failure():
    output = "\n".join([
        "@@agentbench-step@@ begin app-build", "versionName=1", "@@agentbench-step@@ ok app-build",
        "@@agentbench-step@@ begin clear", "Error: no such package",
    ])
    assert _split_steps(output) == [("app-build", "versionName=1", True), ("clear", "Error: no such package", False)]


def test_reset_script_quotes_values_and_chains_steps():
    script = build_reset_script(AppSpec("com.example; rm -rf /", None), _preflight(launch_uri="x://a b;c"), {"p.xml": "/data/local/tmp/agentbench/p.xml"})
    assert "'com.example; rm -rf /'" in script.text
    assert "'x://a b;c'" in script.text
    assert script.text.count("&&") >= 8


def test_no_launch_uri_opens_the_launcher_activity():
    script = build_reset_script(AppSpec("com.android.settings", None), _preflight(launch_uri=None, clear_app_data=False), {})
    assert "monkey -p com.android.settings -c android.intent.category.LAUNCHER 1" in script.text
    assert "pm clear" not in script.text


def test_hierarchy_is_cut_from_dev_tty_output():
    raw = b"<?xml version='1.0' ?><hierarchy rotation=\"0\"></hierarchy>UI hierchary dumped to: /dev/tty\n"
    assert extract_hierarchy(raw).endswith("</hierarchy>")
    with pytest.raises(ValueError):
        extract_hierarchy(b"ERROR: could not get idle state.")


def test_bug_repro_preflight_lands_on_the_demo_in_few_round_trips(tmp_path):
    adb = PhoneAdb()
    # State from an earlier run that preflight must wipe.
    adb.phone.shell(f"run-as {PLAYGROUND} sh -c 'mkdir -p shared_prefs && echo junk > shared_prefs/stale.xml'")
    result = run_preflight(adb, "sim", app=AppSpec(PLAYGROUND, None), preflight=_preflight(), run_dir=tmp_path)
    assert result.app_build["versionName"] == "1.0.0" and result.app_build["versionCode"] == 100
    assert "Bug Reproduction Demo" in result.start_screen_texts
    assert result.round_trips <= 5, adb.commands
    assert (tmp_path / "preflight" / "onboarding_prefs.xml").is_file()
    assert "ok" in (tmp_path / "preflight.log").read_text()
    stale = adb.phone.shell(f"run-as {PLAYGROUND} ls shared_prefs").stdout.decode()
    assert "stale.xml" not in stale and "auth_prefs.xml" in stale


def test_the_device_fingerprint_is_read_by_every_runs_preflight_in_its_first_round_trip(tmp_path):
    # Issue 9, defect 7: a run that rotates the screen must not leave later runs recording the old fingerprint.
    adb = PhoneAdb()
    first = run_preflight(adb, "sim", app=AppSpec(PLAYGROUND, None), preflight=_preflight(), run_dir=tmp_path / "r1")
    adb.phone.shell("content insert --uri content://settings/system --bind name:s:user_rotation --bind value:i:1")
    adb.commands.clear()
    second = run_preflight(adb, "sim", app=AppSpec(PLAYGROUND, None), preflight=_preflight(), run_dir=tmp_path / "r2")
    assert (first.device_fingerprint["rotation"], second.device_fingerprint["rotation"]) == ("0", "90")
    # No round trip of its own: the fingerprint rides in the first shell command preflight sends.
    shells = [command for command in adb.commands if not command.startswith("push ")]
    assert "getprop ro.build.version.sdk" in shells[0] and not any("getprop ro.build.version.sdk" in c for c in shells[1:])
    assert second.round_trips == first.round_trips


def test_missing_start_text_stops_the_run_and_keeps_the_screen(tmp_path):
    adb = PhoneAdb()
    with pytest.raises(PreflightError, match="does not show 'Bug Reproduction Demo'") as info:
        run_preflight(adb, "sim", app=AppSpec(PLAYGROUND, None), preflight=_preflight(shared_preferences={}), run_dir=tmp_path)
    assert "start-screen.xml" in str(info.value)
    landed = app_texts(parse_hierarchy((tmp_path / "start-screen.xml").read_text()), PLAYGROUND)
    assert any("Welcome" in text for text in landed), "redirected to onboarding without the seeded preferences"


def test_a_missing_app_names_the_step_and_the_remedy(tmp_path):
    with pytest.raises(PreflightError, match="is com.example.missing installed"):
        run_preflight(PhoneAdb(), "sim", app=AppSpec("com.example.missing", None), preflight=_preflight(shared_preferences={}), run_dir=tmp_path)


def test_preferences_need_a_debuggable_app(tmp_path):
    spec = _preflight(shared_preferences={"x": {"a": True}}, launch_uri=None, clear_app_data=False, start_screen_includes=())
    with pytest.raises(PreflightError, match="debuggable"):
        run_preflight(PhoneAdb(), "sim", app=AppSpec("com.android.settings", None), preflight=spec, run_dir=tmp_path)


def test_settle_seconds_are_waited_when_there_is_no_start_screen_to_look_for(tmp_path):
    # With startScreenIncludes settleSeconds is a deadline instead (tests/run/test_start_screen.py).
    waited = []
    run_preflight(PhoneAdb(), "sim", app=AppSpec(PLAYGROUND, None), preflight=_preflight(settle_seconds=1.5, start_screen_includes=()),
                  run_dir=tmp_path, sleep=waited.append)
    assert waited == [1.5]


def test_the_build_of_every_app_the_job_also_uses_is_recorded_in_the_same_round_trip(tmp_path):
    adb = PhoneAdb()
    plain = run_preflight(adb, "sim", app=AppSpec(PLAYGROUND, None), preflight=_preflight(), run_dir=tmp_path / "r1")
    adb.phone.set_version("com.android.contacts", version_name="15.2.1", version_code=4521)
    app = AppSpec(PLAYGROUND, None, also_uses=("com.android.contacts", "com.example.not.installed"))
    used = run_preflight(adb, "sim", app=app, preflight=_preflight(), run_dir=tmp_path / "r2")
    assert "otherApps" not in plain.app_build and used.round_trips == plain.round_trips
    others = used.app_build["otherApps"]
    assert (others["com.android.contacts"]["versionName"], others["com.android.contacts"]["versionCode"]) == ("15.2.1", 4521)
    # An app that is not installed is recorded as unknown (the comparison then flags it), not as a pass.
    assert others["com.example.not.installed"]["versionName"] == "unknown"
    assert {key: value for key, value in used.app_build.items() if key != "otherApps"} == plain.app_build
