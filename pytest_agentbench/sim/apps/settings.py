"""The Settings app declared as data: Network & internet, the Wi-Fi switch (the `wifi_on` setting), and friends."""

from __future__ import annotations

from ..ui import Row, Switch, Text, Title
from .model import App, AppContext, Screen


def _go(text: str, route: str, summary: str = "") -> Row:
    return Row(text, on_tap="go", arg=route, summary=summary)


class SettingsApp(App):
    package = "com.android.settings"
    label = "Settings"
    activity = "com.android.settings.Settings"
    start_route = "main"
    actions = {
        "android.settings.SETTINGS": "main",
        "android.settings.WIRELESS_SETTINGS": "network",
        "android.settings.WIFI_SETTINGS": "internet",
        "android.settings.AIRPLANE_MODE_SETTINGS": "network",
        "android.settings.DISPLAY_SETTINGS": "display",
        "android.settings.SOUND_SETTINGS": "sound",
        "android.settings.DEVICE_INFO_SETTINGS": "about",
        "android.settings.APPLICATION_SETTINGS": "apps",
    }
    screens = {
        "main": Screen("main", (
            Title("Settings"),
            _go("Network & internet", "network", "{wifi_summary}"),
            _go("Connected devices", "connected", "Bluetooth, pairing"),
            _go("Apps", "apps", "Assistant, recent apps, default apps"),
            _go("Display", "display", "Dark theme, font size, brightness"),
            _go("Sound", "sound", "Volume, vibration, Do Not Disturb"),
            _go("About phone", "about", "{device_name}"),
        )),
        "network": Screen("network", (
            Title("Network & internet"),
            _go("Internet", "internet", "{wifi_summary}"),
            Switch("Airplane mode", checked="airplane_on", on_tap="airplane"),
            _go("Hotspot & tethering", "hotspot", "Off"),
        )),
        "internet": Screen("internet", (
            Title("Internet"),
            Switch("Wi-Fi", checked="wifi_on", on_tap="wifi"),
            Text("To see available networks, turn Wi-Fi on", when="!wifi_on"),
            Row("AndroidWifi", summary="Connected", when="wifi_on"),
        )),
        "hotspot": Screen("hotspot", (
            Title("Hotspot & tethering"), Row("Wi-Fi hotspot", summary="Off"), Row("USB tethering", summary="Off"),
        )),
        "connected": Screen("connected", (
            Title("Connected devices"), Row("Pair new device"), Text("No connected devices"),
        )),
        "apps": Screen("apps", (Title("Apps"), Row("Default apps"), Row("Special app access"))),
        "display": Screen("display", (
            Title("Display"), Switch("Dark theme", checked="night_mode", on_tap="dark_theme"),
            Row("Font size", summary="{font_size}"),
        )),
        "sound": Screen("sound", (Title("Sound"), Row("Media volume"), Row("Do Not Disturb", summary="Off"))),
        "about": Screen("about", (
            Title("About phone"), Row("Device name", summary="{device_name}"), Row("Model", summary="{model}"),
            Row("Android version", summary="{release}"), Row("Build number", summary="{build_id}"),
        )),
    }

    def derived(self, ctx: AppContext) -> dict[str, object]:
        wifi_on = ctx.setting("global", "wifi_on") == "1"
        return {
            "wifi_on": wifi_on,
            "wifi_summary": "Connected to AndroidWifi" if wifi_on else "Wi-Fi off",
            "airplane_on": ctx.setting("global", "airplane_mode_on") == "1",
            "night_mode": ctx.phone.night_mode,
            "device_name": ctx.setting("global", "device_name") or ctx.phone.props["ro.product.model"],
            "model": ctx.phone.props["ro.product.model"],
            "release": ctx.phone.props["ro.build.version.release"],
            "build_id": ctx.phone.props["ro.build.id"],
            "font_size": "Default" if ctx.setting("system", "font_scale") in (None, "1.0", "1") else "Custom",
        }

    def tap_wifi(self, ctx: AppContext, arg: str) -> None:
        # Wi-Fi is device state (the global setting), so it outlives this app's process and data.
        ctx.put_setting("global", "wifi_on", "0" if ctx.setting("global", "wifi_on") == "1" else "1")

    def tap_airplane(self, ctx: AppContext, arg: str) -> None:
        turning_on = ctx.setting("global", "airplane_mode_on") != "1"
        ctx.put_setting("global", "airplane_mode_on", "1" if turning_on else "0")
        if turning_on:
            # As on a phone: airplane mode switches the radios off.
            ctx.put_setting("global", "wifi_on", "0")

    def tap_dark_theme(self, ctx: AppContext, arg: str) -> None:
        ctx.put_setting("secure", "ui_night_mode", "1" if ctx.phone.night_mode else "2")
