"""Settings' app list, app info and App battery usage screen (RUN_ANY_IN_BACKGROUND and the power allowlist)."""

from __future__ import annotations

import pytest

from pytest_agentbench.sim.phone import Phone

from simui import back, find, tap, texts

TESTBED = "dev.agentbench.testbed"
SETTINGS = "com.android.settings"


@pytest.fixture
def phone() -> Phone:
    return Phone()


def open_battery_usage(phone: Phone, label: str = "Testbed") -> None:
    phone.launch(SETTINGS)
    tap(phone, "Apps")
    tap(phone, "See all apps")
    tap(phone, label)
    assert texts(phone)[:2] == ["App info", label]
    tap(phone, "App battery usage")


def op(phone: Phone, package: str) -> str:
    return phone.shell(f"cmd appops get {package} RUN_ANY_IN_BACKGROUND").stdout.decode()


def test_all_apps_lists_the_launchable_apps(phone: Phone) -> None:
    phone.launch(SETTINGS)
    tap(phone, "Apps")
    tap(phone, "See all apps")
    shown = texts(phone)
    assert {"Chrome", "Clock", "Contacts", "Messages", "Photos", "Playground", "Settings", "Testbed"} <= set(shown)
    assert "Media Storage" not in shown


def test_restricted_sets_the_op_to_ignore_and_releases_the_wake_lock(phone: Phone) -> None:
    open_battery_usage(phone)
    assert texts(phone)[:2] == ["App battery usage", "Testbed"]
    tap(phone, "Restricted")
    assert op(phone, TESTBED) == "RUN_ANY_IN_BACKGROUND: ignore\n"
    assert "Testbed:SyncWorker" not in phone.shell("dumpsys power").stdout.decode()
    back(phone)
    assert "Restricted" in texts(phone)  # the app info row's summary
    assert phone.shell("cmd appops query-op RUN_ANY_IN_BACKGROUND ignore").stdout == f"{TESTBED}\n".encode()


def test_unrestricted_and_optimized(phone: Phone) -> None:
    open_battery_usage(phone, "Chrome")
    tap(phone, "Unrestricted")
    # Allow is the op's default: Android 14 drops the package's setting, as it never had one.
    assert op(phone, "com.android.chrome") == "No operations.\nDefault mode: allow\n"
    assert "user,com.android.chrome," in phone.shell("dumpsys deviceidle whitelist").stdout.decode()
    tap(phone, "Optimized")
    assert "com.android.chrome" not in phone.shell("dumpsys deviceidle whitelist").stdout.decode()
    assert find(phone, "Optimized")["checked"] == "true" and find(phone, "Unrestricted")["checked"] == "false"


def test_app_details_intent_opens_app_info(phone: Phone) -> None:
    result = phone.shell(f"am start -a android.settings.APPLICATION_DETAILS_SETTINGS -d package:{TESTBED}")
    assert result.exit_code == 0, result
    assert texts(phone)[:2] == ["App info", "Testbed"]
    tap(phone, "Force stop")
    assert TESTBED not in phone.runtimes


def test_launcher_shows_the_new_apps(phone: Phone) -> None:
    for label, package in (("Chrome", "com.android.chrome"), ("Photos", "com.google.android.apps.photos"),
                           ("Contacts", "com.android.contacts"), ("Testbed", TESTBED)):
        phone.go_home()
        tap(phone, label)
        assert phone.foreground()[0] == package
