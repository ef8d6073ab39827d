"""The Clock app declared as data: alarms, world clocks picked from a city list, the home clock and snooze length.

Clock keeps its settings in its default SharedPreferences file,
`shared_prefs/com.android.deskclock_preferences.xml`, with DeskClock's keys: the world-clock list
as `number_of_cities` (int) plus `city_id_0`, `city_id_1`, ... (strings, ids from `CITIES`), the
home time zone as `home_time_zone` (written on the first launch from the device's zone),
`automatic_home_clock` (boolean, default true) and `snooze_duration` (minutes as a string,
default "10"), and how an alarm rings: `auto_silence` ("Silence after", minutes as a string,
default "10", "-1" never) and `alarm_crescendo_duration` ("Gradually increase volume", seconds
as a string, default "0": off). When the device zone's UTC offset differs from the home zone's right now (as
DeskClock compares them), the Clock tab shows a home clock, which is not a world clock.
"""

from __future__ import annotations

import time

from ..system.clock import local, offset_text
from ..ui import Button, Each, Field, Radio, Row, Switch, Text, Title
from .model import App, AppContext, Screen, write_shared_prefs

PACKAGE = "com.android.deskclock"
PREFS = "com.android.deskclock_preferences"
SNOOZE_CHOICES = (5, 10, 15, 20, 25, 30)
SILENCE_CHOICES = (("-1", "Never"), ("1", "1 minute"), ("5", "5 minutes"), ("10", "10 minutes"), ("15", "15 minutes"),
                   ("20", "20 minutes"), ("25", "25 minutes"))
CRESCENDO_CHOICES = (("0", "Off"), *((str(seconds), f"{seconds} seconds") for seconds in range(5, 65, 5)))
CITIES: tuple[tuple[str, str, str], ...] = (
    ("C1", "Amsterdam", "Europe/Amsterdam"), ("C2", "Athens", "Europe/Athens"), ("C3", "Auckland", "Pacific/Auckland"),
    ("C4", "Bangkok", "Asia/Bangkok"), ("C5", "Berlin", "Europe/Berlin"),
    ("C6", "Buenos Aires", "America/Argentina/Buenos_Aires"), ("C7", "Cairo", "Africa/Cairo"),
    ("C8", "Chicago", "America/Chicago"), ("C9", "Dubai", "Asia/Dubai"), ("C10", "Hong Kong", "Asia/Hong_Kong"),
    ("C11", "Honolulu", "Pacific/Honolulu"), ("C12", "Istanbul", "Europe/Istanbul"),
    ("C13", "Johannesburg", "Africa/Johannesburg"), ("C14", "Lisbon", "Europe/Lisbon"), ("C15", "London", "Europe/London"),
    ("C16", "Los Angeles", "America/Los_Angeles"), ("C17", "Madrid", "Europe/Madrid"),
    ("C18", "Mexico City", "America/Mexico_City"), ("C19", "Mumbai", "Asia/Kolkata"), ("C20", "New York", "America/New_York"),
    ("C21", "Paris", "Europe/Paris"), ("C22", "Rome", "Europe/Rome"), ("C23", "Sao Paulo", "America/Sao_Paulo"),
    ("C24", "Seoul", "Asia/Seoul"), ("C25", "Singapore", "Asia/Singapore"), ("C26", "Sydney", "Australia/Sydney"),
    ("C27", "Tokyo", "Asia/Tokyo"), ("C28", "Toronto", "America/Toronto"), ("C29", "Zurich", "Europe/Zurich"),
)
_CITY_BY_ID = {city_id: (name, zone) for city_id, name, zone in CITIES}


def city_name(zone: str) -> str:
    """The city Clock shows for a time zone (its own list first, else the zone id's last part)."""
    for _city_id, name, city_zone in CITIES:
        if city_zone == zone:
            return name
    if zone in ("UTC", "GMT", "Etc/UTC"):
        return "Coordinated Universal Time"
    return zone.rsplit("/", 1)[-1].replace("_", " ")


def world_clock_ids(prefs: dict[str, object]) -> list[str]:
    """The selected cities, as CityDAO reads them: `number_of_cities` entries `city_id_N`."""
    count = prefs.get("number_of_cities", 0)
    ids = [prefs.get(f"city_id_{index}") for index in range(count if isinstance(count, int) else 0)]
    return [city_id for city_id in ids if isinstance(city_id, str) and city_id in _CITY_BY_ID]


class ClockApp(App):
    package = PACKAGE
    label = "Clock"
    activity = "com.android.deskclock.DeskClock"
    start_route = "alarm"
    screens = {
        "alarm": Screen("alarm", (
            Title("Alarm"),
            Text("No alarms", when="!alarm_set"),
            Row("7:30 AM", summary="Alarm on", when="alarm_set"),
            Button("Add alarm", "add_alarm"),
            Text("Clock {now}"),
            Button("Clock", "go", arg="clock", desc="Clock tab"),
            Button("Settings", "go", arg="settings"),
        )),
        "clock": Screen("clock", (
            Title("Clock"),
            Text("{now}", id="digital_clock"),
            Text("{today} - {local_city}"),
            Row("{home_city}", summary="Home - {home_time}", when="show_home", id="home_clock"),
            Each("world_clocks", Row("{city}", summary="{city_time} - {city_offset}", id="world_clock")),
            Button("Add city", "open_city_picker", desc="Add city"),
            Button("Settings", "go", arg="settings"),
        )),
        "cities": Screen("cities", (
            Title("Select a city"),
            Field("Search", id="city_search"),
            Each("city_choices", Row("{city}", on_tap="toggle_city", arg="{city_id}", summary="{city_mark}")),
        )),
        "settings": Screen("settings", (
            Title("Settings"),
            Text("Clock"),
            Row("Home time zone", on_tap="go", arg="settings/home", summary="{home_city}"),
            Switch("Automatic home clock", checked="auto_home", on_tap="toggle_auto_home"),
            Text("Alarms"),
            Row("Silence after", on_tap="go", arg="settings/silence", summary="{silence_label}"),
            Row("Snooze length", on_tap="go", arg="settings/snooze", summary="{snooze} minutes"),
            Row("Gradually increase volume", on_tap="go", arg="settings/crescendo", summary="{crescendo_label}"),
        )),
        "settings/silence": Screen("settings/silence", (
            Title("Silence after"),
            *(Radio(label, checked=f"silence_is_{value}", on_tap="set_silence", arg=value) for value, label in SILENCE_CHOICES),
        )),
        "settings/crescendo": Screen("settings/crescendo", (
            Title("Gradually increase volume"),
            *(Radio(label, checked=f"crescendo_is_{value}", on_tap="set_crescendo", arg=value)
              for value, label in CRESCENDO_CHOICES),
        )),
        "settings/home": Screen("settings/home", (
            Title("Home time zone"),
            Each("home_choices", Row("{city}", on_tap="set_home", arg="{city_id}", summary="{city_offset}")),
        )),
        "settings/snooze": Screen("settings/snooze", (
            Title("Snooze length"),
            *(Radio(f"{minutes} minutes", checked=f"snooze_is_{minutes}", on_tap="set_snooze", arg=str(minutes))
              for minutes in SNOOZE_CHOICES),
        )),
    }

    def on_start(self, ctx: AppContext) -> None:
        # DeskClock records the home zone the first time it asks for it: the zone the device is in then.
        if "home_time_zone" not in ctx.prefs(PREFS):
            ctx.put_pref(PREFS, "home_time_zone", ctx.phone.timezone)

    def derived(self, ctx: AppContext) -> dict[str, object]:
        prefs = ctx.prefs(PREFS)
        now = time.time()
        device_zone = ctx.phone.timezone
        home_zone = str(prefs.get("home_time_zone") or device_zone)
        selected = world_clock_ids(prefs)
        search = ctx.runtime.fields.get("city_search", "").strip().lower()
        snooze = str(prefs.get("snooze_duration", "10"))
        local_now = local(now, device_zone)
        silence = str(prefs.get("auto_silence", "10"))
        crescendo = str(prefs.get("alarm_crescendo_duration", "0"))
        return {
            "silence_label": dict(SILENCE_CHOICES).get(silence, silence),
            **{f"silence_is_{value}": silence == value for value, _label in SILENCE_CHOICES},
            "crescendo_label": dict(CRESCENDO_CHOICES).get(crescendo, crescendo),
            **{f"crescendo_is_{value}": crescendo == value for value, _label in CRESCENDO_CHOICES},
            "now": local_now.strftime("%H:%M"),
            "today": local_now.strftime("%a, %b %d").replace(" 0", " "),
            "local_city": city_name(device_zone),
            "show_home": prefs.get("automatic_home_clock", True) is True and _offset(now, home_zone) != _offset(now, device_zone),
            "home_city": city_name(home_zone),
            "home_time": local(now, home_zone).strftime("%H:%M"),
            "auto_home": prefs.get("automatic_home_clock", True) is True,
            "snooze": snooze,
            **{f"snooze_is_{minutes}": snooze == str(minutes) for minutes in SNOOZE_CHOICES},
            "world_clocks": [_clock_item(now, city_id) for city_id in selected],
            "city_choices": [{"city": name, "city_id": city_id, "city_mark": "Added" if city_id in selected else ""}
                             for city_id, name, _zone in CITIES if search in name.lower()],
            "home_choices": [{"city": name, "city_id": city_id, "city_offset": offset_text(now, zone)}
                             for city_id, name, zone in CITIES],
        }

    def tap_add_alarm(self, ctx: AppContext, arg: str) -> None:
        # A fixed alarm keeps the screen stable; alarms live in the process only.
        ctx.state["alarm_set"] = True

    def tap_open_city_picker(self, ctx: AppContext, arg: str) -> None:
        ctx.runtime.fields["city_search"] = ""  # a new picker starts with an empty search
        ctx.navigate("cities")

    def tap_toggle_city(self, ctx: AppContext, city_id: str) -> None:
        """The city picker is a checklist: a tap adds the city to the world clocks, or removes it."""
        selected = world_clock_ids(ctx.prefs(PREFS))
        if city_id in selected:
            selected.remove(city_id)
        else:
            selected.append(city_id)
        save_world_clocks(ctx, selected)

    def tap_set_home(self, ctx: AppContext, city_id: str) -> None:
        ctx.put_pref(PREFS, "home_time_zone", _CITY_BY_ID[city_id][1])
        ctx.runtime.stack.pop()

    def tap_toggle_auto_home(self, ctx: AppContext, arg: str) -> None:
        ctx.put_pref(PREFS, "automatic_home_clock", ctx.prefs(PREFS).get("automatic_home_clock", True) is not True)

    def tap_set_silence(self, ctx: AppContext, minutes: str) -> None:
        ctx.put_pref(PREFS, "auto_silence", minutes)
        ctx.runtime.stack.pop()

    def tap_set_crescendo(self, ctx: AppContext, seconds: str) -> None:
        ctx.put_pref(PREFS, "alarm_crescendo_duration", seconds)
        ctx.runtime.stack.pop()

    def tap_set_snooze(self, ctx: AppContext, minutes: str) -> None:
        ctx.put_pref(PREFS, "snooze_duration", minutes)
        ctx.runtime.stack.pop()


def save_world_clocks(ctx: AppContext, city_ids: list[str]) -> None:
    """Rewrite the world-clock list as CityDAO does: the count, then one `city_id_N` per city (stale ones dropped)."""
    prefs = {key: value for key, value in ctx.prefs(PREFS).items() if not key.startswith("city_id_")}
    prefs["number_of_cities"] = len(city_ids)
    prefs.update({f"city_id_{index}": city_id for index, city_id in enumerate(city_ids)})
    write_shared_prefs(ctx.phone, PACKAGE, PREFS, prefs)


def _offset(now: float, zone: str) -> object:
    return local(now, zone).utcoffset()


def _clock_item(now: float, city_id: str) -> dict[str, object]:
    name, zone = _CITY_BY_ID[city_id]
    return {"city": name, "city_time": local(now, zone).strftime("%H:%M"), "city_offset": offset_text(now, zone)}
