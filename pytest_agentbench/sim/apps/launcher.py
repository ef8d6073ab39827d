"""The home screen declared as data: app icons -> launching their apps."""

from __future__ import annotations

from ..ui import Icon
from .model import App, AppContext, Screen

# Icon label -> package; the committed suites and agents rely on these labels.
HOME_ICONS = {
    "Settings": "com.android.settings",
    "Playground": "dev.jasonpearson.automobile.playground",
    "Clock": "com.android.deskclock",
    "Messages": "com.google.android.apps.messaging",
    "Chrome": "com.android.chrome",
    "Photos": "com.google.android.apps.photos",
    "Contacts": "com.android.contacts",
    "Testbed": "dev.agentbench.testbed",
}


class LauncherApp(App):
    package = "com.android.launcher3"
    label = "Launcher3"
    activity = "com.android.launcher3.uioverrides.QuickstepLauncher"
    start_route = "main"
    launchable = False
    screens = {"main": Screen("main", tuple(Icon(label, "launch", arg=label) for label in HOME_ICONS))}

    def tap_launch(self, ctx: AppContext, label: str) -> None:
        package = HOME_ICONS[label]
        if package in ctx.phone.packages:
            ctx.phone.launch(package)
