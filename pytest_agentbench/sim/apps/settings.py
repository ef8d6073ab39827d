"""The Settings app declared as data: Network & internet, the Wi-Fi switch (the `wifi_on` setting), and friends."""

from __future__ import annotations

from ..system.appops import ALLOW, IGNORE
from ..ui import Button, Each, Radio, Row, Switch, Text, Title
from .model import App, AppContext, Screen

BATTERY_MODES = ("Unrestricted", "Optimized", "Restricted")


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
        "android.settings.MANAGE_APPLICATIONS_SETTINGS": "apps/all",
        "android.settings.MANAGE_ALL_APPLICATIONS_SETTINGS": "apps/all",
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
        "apps": Screen("apps", (
            Title("Apps"), _go("See all apps", "apps/all"), Row("Default apps"), Row("Special app access"),
        )),
        "apps/all": Screen("apps/all", (
            Title("All apps"),
            Each("all_apps", Row("{app_row_label}", on_tap="open_app_info", arg="{app_row_package}",
                                 summary="{app_row_summary}")),
        )),
        "appinfo": Screen("appinfo", (
            Title("App info"),
            Text("{app_label}", id="app_name"),
            Text("Version {app_version}"),
            Button("Force stop", "force_stop_app"),
            Row("Notifications", summary="On"),
            Row("Permissions", summary="No permissions requested"),
            Row("Storage & cache", summary="{app_storage}"),
            _go("App battery usage", "appinfo/battery", "{battery_mode}"),
            Row("Open by default", summary="Allow app to open supported links"),
        )),
        "appinfo/battery": Screen("appinfo/battery", (
            Title("App battery usage"),
            Text("{app_label}"),
            *(Radio(mode, checked=f"battery_is_{mode}", on_tap="set_battery_mode") for mode in BATTERY_MODES),
            Text("Restricted: limit battery while in background. App may not work as expected."),
        )),
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

    def resolve_action(self, action: str, data: str | None) -> str | None:
        # APPLICATION_DETAILS_SETTINGS carries the app as `package:PKG`.
        if action == "android.settings.APPLICATION_DETAILS_SETTINGS" and data and data.startswith("package:"):
            return f"appinfo:{data[len('package:'):]}"
        return super().resolve_action(action, data)

    def redirect(self, ctx: AppContext, route: str) -> str:
        if route.startswith("appinfo:"):
            package = route[len("appinfo:"):]
            ctx.state["app_package"] = package
            return "appinfo" if package in ctx.phone.packages else "apps/all"
        return route

    def derived(self, ctx: AppContext) -> dict[str, object]:
        wifi_on = ctx.setting("global", "wifi_on") == "1"
        return {**self._app_state(ctx),
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

    def _app_state(self, ctx: AppContext) -> dict[str, object]:
        phone = ctx.phone
        apps = sorted((info for info in phone.packages.values() if info.app.launchable), key=lambda info: info.app.label)
        state: dict[str, object] = {"all_apps": [
            {"app_row_label": info.app.label, "app_row_package": info.package,
             "app_row_summary": battery_mode(ctx, info.package) if battery_mode(ctx, info.package) == "Restricted" else ""}
            for info in apps]}
        package = str(ctx.state.get("app_package") or "")
        info = phone.packages.get(package)
        if info is not None:
            mode = battery_mode(ctx, package)
            state.update(app_label=info.app.label, app_version=info.version_name, battery_mode=mode,
                         app_storage="Cleared" if package not in phone.runtimes else "In use",
                         **{f"battery_is_{name}": mode == name for name in BATTERY_MODES})
        return state

    def tap_open_app_info(self, ctx: AppContext, package: str) -> None:
        ctx.state["app_package"] = package
        ctx.navigate("appinfo")

    def tap_force_stop_app(self, ctx: AppContext, arg: str) -> None:
        package = str(ctx.state.get("app_package") or "")
        if package in ctx.phone.packages and package != self.package:
            ctx.phone.force_stop(package)

    def tap_set_battery_mode(self, ctx: AppContext, mode: str) -> None:
        """What Settings' BatteryOptimizeUtils does: the RUN_ANY_IN_BACKGROUND op plus the power allowlist."""
        package = str(ctx.state.get("app_package") or "")
        if package not in ctx.phone.packages:
            return
        ctx.phone.appops.set_mode(package, "RUN_ANY_IN_BACKGROUND", IGNORE if mode == "Restricted" else ALLOW)
        if mode == "Unrestricted":
            ctx.phone.power.allowlist.add(package)
        else:
            ctx.phone.power.allowlist.discard(package)
        ctx.log("BatteryOptimizeUtils", f"Set {package} app usage state to {mode.upper()}")

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


def battery_mode(ctx: AppContext, package: str) -> str:
    """Restricted (op ignored), Unrestricted (on the power allowlist) or Optimized (the default)."""
    if ctx.phone.appops.mode(package, "RUN_ANY_IN_BACKGROUND") == IGNORE:
        return "Restricted"
    return "Unrestricted" if package in ctx.phone.power.allowlist else "Optimized"
