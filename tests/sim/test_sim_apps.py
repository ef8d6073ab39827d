"""Tests for the simulated apps: deep links and pref guards, bug repro, UX flow, Wi-Fi, resets, and every screen's dump."""

from __future__ import annotations

import re
import struct

import defusedxml.ElementTree as SafeET
import pytest

from pytest_agentbench.sim.apps import BUILTIN_APPS, read_shared_prefs, write_shared_prefs
from pytest_agentbench.sim.phone import Phone
from pytest_agentbench.sim.ui import SYSTEMUI_PACKAGE

PLAYGROUND = "dev.jasonpearson.automobile.playground"
SETTINGS = "com.android.settings"
ATTRIBUTES = ("index", "text", "resource-id", "class", "package", "content-desc", "checkable", "checked", "clickable",
              "enabled", "focusable", "focused", "scrollable", "long-clickable", "password", "selected", "bounds")
BOUNDS = re.compile(r"\[(\d+),(\d+)\]\[(\d+),(\d+)\]")


@pytest.fixture
def phone() -> Phone:
    return Phone()


def nodes(phone: Phone) -> list[dict[str, str]]:
    root = SafeET.fromstring(phone.shell("uiautomator dump /dev/tty").stdout.split(b"UI hierchary dumped to:")[0])
    return [dict(node.attrib) for node in root.iter("node")]


def texts(phone: Phone) -> list[str]:
    return [n["text"] for n in nodes(phone) if n["text"] and n["package"] != SYSTEMUI_PACKAGE]


def node(phone: Phone, text: str, cls: str | None = None) -> dict[str, str]:
    found = [n for n in nodes(phone) if (n["text"] == text or n["content-desc"] == text) and (cls is None or n["class"] == cls)]
    assert found, f"{text!r} not on screen: {texts(phone)}"
    return found[0]


def tap(phone: Phone, text: str, cls: str | None = None) -> None:
    left, top, right, bottom = map(int, BOUNDS.fullmatch(node(phone, text, cls)["bounds"]).groups())
    result = phone.shell(f"input tap {(left + right) // 2} {(top + bottom) // 2}")
    assert result.exit_code == 0


def open_link(phone: Phone, route: str) -> None:
    result = phone.shell(f"am start -a android.intent.action.VIEW -d automobile://playground/{route}")
    assert result.exit_code == 0, result


def seed_playground_prefs(phone: Phone) -> None:
    """Write both pref files through run-as, the way preflight does on a real phone."""
    onboarding = "<map><boolean name=\\\"onboarding_completed\\\" value=\\\"true\\\" /></map>"
    auth = "<map><boolean name=\\\"is_guest_mode\\\" value=\\\"true\\\" /></map>"
    line = (f"run-as {PLAYGROUND} sh -c \"mkdir -p shared_prefs && echo '{onboarding}' > shared_prefs/onboarding_prefs.xml"
            f" && echo '{auth}' > shared_prefs/auth_prefs.xml\"")
    result = phone.shell(line.replace('\\\\"', '\\"'))
    assert result.exit_code == 0, result


def test_demo_deep_link_redirects_until_prefs_are_written_then_bug_repro_works(phone: Phone) -> None:
    open_link(phone, "demos/bugs/repro")
    assert "Welcome to AutoMobile Playground" in texts(phone)
    seed_playground_prefs(phone)
    open_link(phone, "demos/bugs/repro")
    assert texts(phone)[:1] == ["Bug Reproduction Demo"]
    assert {"Expected count: 0", "Displayed count: 0", "Status: Idle"} <= set(texts(phone))
    tap(phone, "Enable Bug")
    assert node(phone, "", "android.widget.Switch")["checked"] == "true"
    for _ in range(3):
        tap(phone, "Add Item")
    assert {"Expected count: 3", "Displayed count: 0", "Status: Bug triggered: UI did not update"} <= set(texts(phone))
    tap(phone, "Reset")
    assert {"Expected count: 0", "Displayed count: 0", "Status: Reset"} <= set(texts(phone))
    tap(phone, "Enable Bug")
    tap(phone, "Add Item")
    assert {"Expected count: 1", "Displayed count: 1", "Status: Updated"} <= set(texts(phone))


@pytest.mark.parametrize(
    ("prefs", "lands_on"),
    [({}, "Welcome to AutoMobile Playground"),
     ({"onboarding_prefs": {"onboarding_completed": True}}, "Sign in"),
     ({"onboarding_prefs": {"onboarding_completed": False}, "auth_prefs": {"is_guest_mode": True}},
      "Welcome to AutoMobile Playground"),
     ({"onboarding_prefs": {"onboarding_completed": True}, "auth_prefs": {"is_guest_mode": False}}, "Sign in"),
     ({"onboarding_prefs": {"onboarding_completed": True}, "auth_prefs": {"is_authenticated": True}}, "UX Flow"),
     ({"onboarding_prefs": {"onboarding_completed": True}, "auth_prefs": {"is_guest_mode": True}}, "UX Flow"),
     # A string "true" is not a boolean tag; SharedPreferences.getBoolean would not see it.
     ({"onboarding_prefs": {"onboarding_completed": "true"}, "auth_prefs": {"is_guest_mode": True}},
      "Welcome to AutoMobile Playground")],
)
def test_demo_routes_are_guarded_by_the_pref_files(phone: Phone, prefs: dict, lands_on: str) -> None:
    for name, values in prefs.items():
        write_shared_prefs(phone, PLAYGROUND, name, values)
    open_link(phone, "demos/ux/start")
    assert texts(phone)[0] == lands_on


def test_onboarding_and_guest_buttons_write_the_prefs(phone: Phone) -> None:
    open_link(phone, "onboarding")
    tap(phone, "Get started")
    assert texts(phone)[0] == "Sign in"
    tap(phone, "Continue as guest")
    assert texts(phone)[0] == "Home"
    assert read_shared_prefs(phone, PLAYGROUND, "onboarding_prefs") == {"onboarding_completed": True}
    assert read_shared_prefs(phone, PLAYGROUND, "auth_prefs") == {"is_guest_mode": True}
    tap(phone, "Demos")
    assert {"Demos", "Bug Reproduction", "UX Flow"} <= set(texts(phone))
    tap(phone, "Bug Reproduction")
    assert texts(phone)[0] == "Bug Reproduction Demo"


def test_sign_in_needs_both_fields_and_typed_text(phone: Phone) -> None:
    write_shared_prefs(phone, PLAYGROUND, "onboarding_prefs", {"onboarding_completed": True})
    open_link(phone, "login")
    tap(phone, "Sign in", "android.widget.Button")
    assert "Enter your email and password" in texts(phone)
    tap(phone, "Email")
    assert node(phone, "Email")["focused"] == "true"
    phone.shell("input text me@example.com")
    tap(phone, "Password")
    phone.shell("input text hunter2")
    password = node(phone, "\u2022" * 7)
    assert password["password"] == "true"
    tap(phone, "Sign in", "android.widget.Button")
    assert texts(phone)[0] == "Home"
    assert read_shared_prefs(phone, PLAYGROUND, "auth_prefs") == {"is_authenticated": True, "user_email": "me@example.com"}


def test_ux_flow_by_tapping(phone: Phone) -> None:
    seed_playground_prefs(phone)
    open_link(phone, "demos/ux/start")
    assert "Step 1 of 3: Start" in texts(phone)
    tap(phone, "Begin")
    assert {"Step 2 of 3: Details", "Choose a plan"} <= set(texts(phone))
    assert node(phone, "Continue")["enabled"] == "false"
    tap(phone, "Continue")
    assert "Step 2 of 3: Details" in texts(phone)  # a disabled button does nothing
    tap(phone, "Basic")
    tap(phone, "Pro")
    radios = {n["text"]: n["checked"] for n in nodes(phone) if n["class"] == "android.widget.RadioButton"}
    assert radios == {"Basic": "false", "Pro": "true", "Team": "false"}
    assert all(n["checkable"] == "true" for n in nodes(phone) if n["class"] == "android.widget.RadioButton")
    tap(phone, "Continue")
    assert {"Step 3 of 3: Summary", "Selected plan: Pro", "Flow complete"} <= set(texts(phone))
    tap(phone, "Restart")
    assert "Step 1 of 3: Start" in texts(phone)
    open_link(phone, "demos/ux/summary")
    assert "Selected plan: none" in texts(phone) and "Flow complete" not in texts(phone)


def test_wifi_switch_toggles_the_global_setting_and_survives_resets(phone: Phone) -> None:
    phone.shell("monkey -p com.android.settings -c android.intent.category.LAUNCHER 1")
    assert {"Network & internet", "Wi-Fi off", "Connected devices", "Apps", "Display", "Sound", "About phone"} <= set(texts(phone))
    tap(phone, "Network & internet")
    assert {"Internet", "Airplane mode", "Hotspot & tethering"} <= set(texts(phone))
    tap(phone, "Internet")
    assert "To see available networks, turn Wi-Fi on" in texts(phone)
    assert node(phone, "", "android.widget.Switch")["checked"] == "false"
    tap(phone, "Wi-Fi")
    assert phone.shell("settings get global wifi_on").stdout == b"1\n"
    assert {"AndroidWifi", "Connected"} <= set(texts(phone))
    assert "To see available networks, turn Wi-Fi on" not in texts(phone)
    assert node(phone, "", "android.widget.Switch")["checked"] == "true"
    phone.shell("input keyevent KEYCODE_BACK")
    assert "Connected to AndroidWifi" in texts(phone)
    phone.shell(f"am force-stop {SETTINGS}")
    phone.shell(f"pm clear {SETTINGS}")
    phone.shell("monkey -p com.android.settings -c android.intent.category.LAUNCHER 1")
    assert "Connected to AndroidWifi" in texts(phone)
    assert texts(phone)[0] == "Settings"  # the process restarted at its launcher screen


def test_airplane_mode_switch_really_toggles_the_setting(phone: Phone) -> None:
    phone.shell("settings put global wifi_on 1")
    phone.shell("am start -a android.settings.WIRELESS_SETTINGS")
    tap(phone, "Airplane mode")
    assert phone.shell("settings get global airplane_mode_on").stdout == b"1\n"
    assert phone.shell("settings get global wifi_on").stdout == b"0\n"
    tap(phone, "Airplane mode")
    assert phone.shell("settings get global airplane_mode_on").stdout == b"0\n"


def test_force_stop_resets_ui_state_but_keeps_prefs_and_pm_clear_wipes_them(phone: Phone) -> None:
    seed_playground_prefs(phone)
    open_link(phone, "demos/bugs/repro")
    tap(phone, "Add Item")
    assert "Expected count: 1" in texts(phone)
    phone.shell(f"am force-stop {PLAYGROUND}")
    assert phone.foreground()[0] == "com.android.launcher3"
    open_link(phone, "demos/bugs/repro")
    assert {"Expected count: 0", "Status: Idle"} <= set(texts(phone))
    assert phone.shell(f"pm clear {PLAYGROUND}").stdout == b"Success\n"
    assert phone.shell(f"run-as {PLAYGROUND} ls shared_prefs").exit_code == 1
    open_link(phone, "demos/bugs/repro")
    assert texts(phone)[0] == "Welcome to AutoMobile Playground"


def test_back_navigates_up_and_leaves_the_app_at_its_root(phone: Phone) -> None:
    phone.shell("monkey -p com.android.settings -c android.intent.category.LAUNCHER 1")
    tap(phone, "Network & internet")
    tap(phone, "Internet")
    phone.shell("input keyevent KEYCODE_BACK")
    assert texts(phone)[0] == "Network & internet"
    phone.shell("input keyevent 4")
    assert texts(phone)[0] == "Settings"
    phone.shell("input keyevent KEYCODE_BACK")
    assert phone.foreground()[0] == "com.android.launcher3"
    tap(phone, "Settings")  # the process is still alive: it comes back where it was
    assert texts(phone)[0] == "Settings"


@pytest.mark.parametrize(("icon", "package", "title"), [
    ("Settings", SETTINGS, "Settings"), ("Playground", PLAYGROUND, "Welcome to AutoMobile Playground"),
    ("Clock", "com.android.deskclock", "Alarm"), ("Messages", "com.google.android.apps.messaging", "Messages"),
])
def test_launcher_icons_open_their_apps(phone: Phone, icon: str, package: str, title: str) -> None:
    assert node(phone, icon)["content-desc"] == icon
    tap(phone, icon)
    assert phone.foreground()[0] == package
    assert texts(phone)[0] == title


def test_tap_outside_any_clickable_node_changes_nothing(phone: Phone) -> None:
    phone.shell("monkey -p com.android.settings -c android.intent.category.LAUNCHER 1")
    before = phone.screen_xml()
    phone.shell("input tap 540 2300")
    phone.shell("input tap 540 10")  # the status bar
    assert phone.screen_xml() == before


@pytest.mark.parametrize(
    ("values", "xml_fragment"),
    [({"flag": True}, '<boolean name="flag" value="true" />'), ({"n": 7}, '<int name="n" value="7" />'),
     ({"big": 2**40}, f'<long name="big" value="{2**40}" />'), ({"f": 1.5}, '<float name="f" value="1.5" />'),
     ({"s": "a<b & c"}, '<string name="s">a&lt;b &amp; c</string>'),
     ({"tags": ("x", "y")}, '<set name="tags"><string>x</string><string>y</string></set>')],
)
def test_shared_prefs_typed_tags_round_trip(phone: Phone, values: dict, xml_fragment: str) -> None:
    write_shared_prefs(phone, PLAYGROUND, "typed", values)
    text = phone.shell(f"run-as {PLAYGROUND} cat shared_prefs/typed.xml").stdout.decode()
    assert xml_fragment in text
    assert read_shared_prefs(phone, PLAYGROUND, "typed") == values


def test_unparsable_prefs_file_reads_as_empty(phone: Phone) -> None:
    phone.fs.write(f"/data/data/{PLAYGROUND}/shared_prefs/onboarding_prefs.xml", b"<map><boolean", user=PLAYGROUND)
    assert read_shared_prefs(phone, PLAYGROUND, "onboarding_prefs") == {}


def _all_screens() -> list[tuple[str, str]]:
    return [(cls.package, route) for cls in BUILTIN_APPS for route in cls.screens]


@pytest.mark.parametrize("display", ["default", "720x1280", "landscape"])
@pytest.mark.parametrize(("package", "route"), _all_screens())
def test_every_screen_round_trips_through_uiautomator_dump(phone: Phone, package: str, route: str, display: str) -> None:
    if display == "landscape":
        phone.shell("content insert --uri content://settings/system --bind name:s:user_rotation --bind value:i:1")
    elif display != "default":
        phone.shell(f"wm size {display}")
    phone.launch(package)
    phone.runtimes[package].stack[:] = [route]
    assert phone.shell("uiautomator dump").exit_code == 0
    xml = phone.fs.read("/sdcard/window_dump.xml")
    root = SafeET.fromstring(xml)
    assert root.tag == "hierarchy" and root.get("rotation") == ("1" if display == "landscape" else "0")
    width, height = phone.size
    packages = set()
    for element in root.iter("node"):
        assert tuple(element.attrib) == ATTRIBUTES
        left, top, right, bottom = map(int, BOUNDS.fullmatch(element.get("bounds")).groups())
        assert 0 <= left <= right <= width and 0 <= top <= bottom <= height
        for flag in ATTRIBUTES[6:16]:
            assert element.get(flag) in ("true", "false")
        packages.add(element.get("package"))
    assert packages == {package, SYSTEMUI_PACKAGE}
    declared = [w.text for w in type(phone.packages[package].app).screens[route].widgets
                if w.text and w.kind != "each" and "{" not in w.text and not w.when]
    shown = {n.get("text") for n in root.iter("node")} | {n.get("content-desc") for n in root.iter("node")}
    for _ in range(2):  # what does not fit is reached by scrolling (the landscape editor takes two swipes)
        phone.swipe(width // 2, height - 100, width // 2, 100)
        shown |= {n["text"] for n in nodes(phone)} | {n["content-desc"] for n in nodes(phone)}
    assert set(declared) <= shown
    png = phone.shell("screencap -p").stdout
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (width, height)


@pytest.mark.parametrize("app_class", BUILTIN_APPS, ids=lambda cls: cls.package)
def test_every_declared_tap_names_an_existing_handler_and_route(app_class: type) -> None:
    app = app_class()
    for screen in app.screens.values():
        # An `each` list's template rows are widgets too.
        for widget in [w for top in screen.widgets for w in (top, *top.items)]:
            if widget.on_tap:
                assert callable(app.handler(widget.on_tap))
            if widget.on_tap == "go":
                assert widget.arg in app.screens, f"{app.package}: {widget.text!r} goes to unknown route {widget.arg!r}"
    assert app.start_route in app.screens
    assert set(app.actions.values()) <= set(app.screens)


def test_a_screen_taller_than_the_display_scrolls_with_swipes(phone: Phone) -> None:
    phone.shell("settings put system user_rotation 1")  # landscape: 1080 px tall
    phone.shell("monkey -p com.android.settings -c android.intent.category.LAUNCHER 1")
    content = [n for n in nodes(phone) if n["resource-id"] == f"{SETTINGS}:id/content"][0]
    assert content["scrollable"] == "true"
    assert "About phone" not in texts(phone)
    phone.shell("input swipe 1200 900 1200 300 300")
    assert "About phone" in texts(phone)
    tap(phone, "About phone")
    assert texts(phone)[0] == "About phone"
    phone.shell("input keyevent KEYCODE_BACK")
    assert "About phone" in texts(phone)  # the list keeps its scroll position
    phone.shell("input swipe 1200 300 1200 5000 300")
    assert texts(phone)[0] == "Settings"


def test_a_screen_that_fits_does_not_scroll(phone: Phone) -> None:
    phone.shell("monkey -p com.android.settings -c android.intent.category.LAUNCHER 1")
    before = phone.screen_xml()
    phone.shell("input swipe 540 1900 540 400 300")
    assert phone.screen_xml() == before
    assert 'scrollable="true"' not in before
