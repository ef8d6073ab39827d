"""Two small stock apps the home screen links to (Clock, Messages), declared as data."""

from __future__ import annotations

import time

from ..ui import Button, Row, Text, Title
from .model import App, AppContext, Screen


class ClockApp(App):
    package = "com.android.deskclock"
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
        )),
    }

    def derived(self, ctx: AppContext) -> dict[str, object]:
        return {"now": time.strftime("%H:%M", time.gmtime())}

    def tap_add_alarm(self, ctx: AppContext, arg: str) -> None:
        # A fixed alarm keeps the screen stable; alarms live in the process only.
        ctx.state["alarm_set"] = True


class MessagesApp(App):
    package = "com.google.android.apps.messaging"
    label = "Messages"
    activity = "com.google.android.apps.messaging.ui.ConversationListActivity"
    version_name = "20240205_00_RC00"
    version_code = 200000
    start_route = "list"
    screens = {
        "list": Screen("list", (Title("Messages"), Text("No conversations yet"), Button("Start chat", "go", arg="new"))),
        "new": Screen("new", (Title("New conversation"), Text("No contacts"))),
    }
