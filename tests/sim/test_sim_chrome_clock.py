"""Chrome's settings (search engine, secure connections -> Preferences) and Clock (world clocks, home clock, snooze)."""

from __future__ import annotations

import json

import pytest

from pytest_agentbench.sim.apps.chrome import NEW_KEY, OLD_KEY, secure_key
from pytest_agentbench.sim.apps.clock import PREFS as CLOCK_PREFS, world_clock_ids
from pytest_agentbench.sim.apps.model import read_shared_prefs
from pytest_agentbench.sim.phone import Phone

from simui import back, open_link, tap, texts, type_into

CHROME = "com.android.chrome"
CHROME_PREFERENCES = f"/data/data/{CHROME}/app_chrome/Default/Preferences"
CLOCK = "com.android.deskclock"


@pytest.fixture
def phone() -> Phone:
    return Phone()


def chrome_settings(phone: Phone) -> None:
    phone.launch(CHROME)
    tap(phone, "More options")
    tap(phone, "Settings")


def preferences(phone: Phone) -> dict:
    return json.loads(phone.shell(f"su 0 cat {CHROME_PREFERENCES}").stdout)


# Chrome.


def test_a_fresh_chrome_profile_has_no_preferences_file(phone: Phone) -> None:
    chrome_settings(phone)
    assert "Google" in texts(phone)
    assert not phone.fs.exists(CHROME_PREFERENCES)
    missing = phone.shell(f"su 0 cat {CHROME_PREFERENCES}")
    assert missing.exit_code == 1 and b"No such file or directory" in missing.stderr


def test_choosing_a_search_engine_writes_preferences_readable_only_as_root(phone: Phone) -> None:
    chrome_settings(phone)
    tap(phone, "Search engine")
    tap(phone, "DuckDuckGo")
    back(phone)
    assert "DuckDuckGo" in texts(phone)
    data = preferences(phone)["default_search_provider_data"]["template_url_data"]
    assert (data["short_name"], data["keyword"], data["prepopulate_id"]) == ("DuckDuckGo", "duckduckgo.com", 92)
    assert phone.shell(f"cat {CHROME_PREFERENCES}").exit_code == 1
    refused = phone.shell(f"run-as {CHROME} cat app_chrome/Default/Preferences")
    assert refused.stderr == f"run-as: package not debuggable: {CHROME}\n".encode()


@pytest.mark.parametrize(("version", "key"), [("131.0.6778.200", NEW_KEY), ("129.0.1.1", NEW_KEY),
                                              ("124.0.6367.219", OLD_KEY), ("not-a-version", NEW_KEY)])
def test_secure_connections_key_follows_chrome_version(phone: Phone, version: str, key: str) -> None:
    assert secure_key(version) == key
    phone.set_version(CHROME, version_name=version)
    chrome_settings(phone)
    tap(phone, "Privacy and security")
    tap(phone, "Always use secure connections")
    prefs = preferences(phone)
    assert prefs[key] is True and ({NEW_KEY, OLD_KEY} - {key}).isdisjoint(prefs)
    tap(phone, "Always use secure connections")
    assert preferences(phone)[key] is False


def test_chrome_opens_web_links(phone: Phone) -> None:
    open_link(phone, "https://example.com/")
    assert phone.foreground()[0] == CHROME
    assert "This site can't be reached" in texts(phone)


# Clock.


def clock_prefs(phone: Phone) -> dict:
    return read_shared_prefs(phone, CLOCK, CLOCK_PREFS)


def test_adding_world_clocks_writes_the_city_list(phone: Phone) -> None:
    phone.launch(CLOCK)
    tap(phone, "Clock tab")
    tap(phone, "Add city")
    type_into(phone, "Search", "tok")
    assert [t for t in texts(phone) if t not in ("Select a city", "tok")] == ["Tokyo"]
    tap(phone, "Tokyo")
    back(phone)
    tap(phone, "Add city")
    tap(phone, "London")
    back(phone)
    assert world_clock_ids(clock_prefs(phone)) == ["C27", "C15"]
    assert {"Tokyo", "London"} <= set(texts(phone))
    text = phone.shell(f"su 0 cat /data/data/{CLOCK}/shared_prefs/{CLOCK_PREFS}.xml").stdout.decode()
    assert '<int name="number_of_cities" value="2" />' in text and '<string name="city_id_0">C27</string>' in text
    tap(phone, "Add city")
    tap(phone, "Tokyo")  # the picker is a checklist: a second tap removes the city
    assert world_clock_ids(clock_prefs(phone)) == ["C15"]


def test_home_clock_shows_when_the_device_zone_moves_but_is_no_world_clock(phone: Phone) -> None:
    phone.launch(CLOCK)  # first start records the home zone: the device's (UTC)
    assert clock_prefs(phone)["home_time_zone"] == "UTC"
    tap(phone, "Clock tab")
    assert "Coordinated Universal Time" not in texts(phone)[1:3]
    # DeskClock compares UTC offsets now, so a zone that is never at UTC's offset always shows it.
    phone.set_timezone("Asia/Tokyo")
    shown = texts(phone)
    assert shown[shown.index("Coordinated Universal Time") + 1].startswith("Home - ")
    assert world_clock_ids(clock_prefs(phone)) == []
    tap(phone, "Settings")
    tap(phone, "Automatic home clock")
    back(phone)
    assert "Coordinated Universal Time" not in texts(phone)


def test_a_fresh_clock_on_a_london_host_records_london_as_home_only(phone: Phone) -> None:
    phone.set_timezone("Europe/London")
    phone.shell(f"pm clear {CLOCK}")
    phone.launch(CLOCK)
    prefs = clock_prefs(phone)
    assert prefs["home_time_zone"] == "Europe/London" and "number_of_cities" not in prefs


def test_snooze_length_and_automatic_home_clock(phone: Phone) -> None:
    phone.launch(CLOCK)
    tap(phone, "Settings")
    tap(phone, "Snooze length")
    tap(phone, "15 minutes")
    assert "15 minutes" in texts(phone)
    tap(phone, "Automatic home clock")
    prefs = clock_prefs(phone)
    assert prefs["snooze_duration"] == "15" and prefs["automatic_home_clock"] is False
