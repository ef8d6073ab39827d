"""App declarations (screens, routes, handlers) + per-run state -> what the simulated phone shows and does."""

from __future__ import annotations

import json
import posixpath
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar
from collections.abc import Callable
from xml.sax.saxutils import escape

import defusedxml.ElementTree as SafeET

from ..system.appops import IGNORE
from ..ui import Widget

if TYPE_CHECKING:
    from ..phone import Phone

PrefValue = bool | int | float | str | tuple[str, ...]
EVENT_LOG = "files/events.jsonl"


@dataclass(frozen=True)
class Screen:
    """A route of an app and the widgets it shows, top to bottom."""

    route: str
    widgets: tuple[Widget, ...]


@dataclass
class AppRuntime:
    """An app's in-memory process state: lost on `am force-stop`, kept between adb calls."""

    stack: list[str]
    state: dict[str, object] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)
    focused_field: str = ""
    scroll: dict[str, int] = field(default_factory=dict)  # route -> scroll offset in px
    pid: int = 0  # the process id `ps`, logcat and wake locks show

    @property
    def route(self) -> str:
        return self.stack[-1]


class AppContext:
    """What a tap handler may touch: its runtime, the phone's settings and its own private storage."""

    def __init__(self, phone: Phone, app: App, runtime: AppRuntime) -> None:
        self.phone = phone
        self.app = app
        self.runtime = runtime

    @property
    def state(self) -> dict[str, object]:
        return self.runtime.state

    def navigate(self, route: str) -> None:
        """Push a route (after the app's redirect rules), as an in-app navigation does."""
        self.runtime.stack.append(self.app.redirect(self, route))
        self.runtime.focused_field = ""

    def replace(self, route: str) -> None:
        """Replace the whole back stack with one route (a flow that must not go back)."""
        self.runtime.stack[:] = [self.app.redirect(self, route)]
        self.runtime.focused_field = ""

    def setting(self, namespace: str, key: str) -> str | None:
        return self.phone.settings[namespace].get(key)

    def put_setting(self, namespace: str, key: str, value: str) -> None:
        self.phone.settings[namespace][key] = value

    def prefs(self, name: str) -> dict[str, PrefValue]:
        return read_shared_prefs(self.phone, self.app.package, name)

    def put_pref(self, name: str, key: str, value: PrefValue) -> None:
        values = self.prefs(name)
        values[key] = value
        write_shared_prefs(self.phone, self.app.package, name, values)

    def private_path(self, relative: str) -> str:
        """An absolute path inside the app's private storage (`files/events.jsonl` -> /data/data/PKG/files/...)."""
        return posixpath.join(self.phone.fs.private_dir(self.app.package), relative)

    def read_file(self, relative: str) -> bytes | None:
        """A file of the app's private storage, or None when it is missing."""
        try:
            return self.phone.fs.read(self.private_path(relative), user=self.app.package)
        except OSError:
            return None

    def write_file(self, relative: str, data: bytes) -> None:
        self.phone.fs.write(self.private_path(relative), data, mode=0o660, user=self.app.package)

    def log(self, tag: str, message: str, priority: str = "I") -> None:
        """Write a line to logcat from the app's process."""
        self.phone.log(tag, message, priority=priority, package=self.app.package)

    def log_event(self, event: str, **fields: object) -> None:
        """Append one JSON line to the app's event log (`files/events.jsonl`): when, which screen, what happened."""
        record = {"ts": int(time.time() * 1000), "event": event, "screen": self.runtime.route, **fields}
        path = self.private_path(EVENT_LOG)
        self.phone.fs.write(path, (json.dumps(record, sort_keys=True) + "\n").encode(), mode=0o660,
                            user=self.app.package, append=True)


@dataclass(frozen=True)
class SyncJob:
    """An app's JobScheduler job that syncs in the background and holds a wake lock while it runs."""

    job_id: int
    service: str
    tag: str


class App:
    """An installed app declared as data: subclasses set the class attributes and write `tap_<name>` handlers.

    A handler is `def tap_<name>(self, ctx: AppContext, arg: str) -> None`; widgets name it in `on_tap`.
    """

    package: ClassVar[str]
    label: ClassVar[str]
    activity: ClassVar[str]
    version_name: ClassVar[str] = "14"
    version_code: ClassVar[int] = 34
    min_sdk: ClassVar[int] = 34
    target_sdk: ClassVar[int] = 34
    debuggable: ClassVar[bool] = False
    system: ClassVar[bool] = True
    # Whether the app has a MAIN/LAUNCHER activity (the home screen itself answers to HOME instead).
    launchable: ClassVar[bool] = True
    start_route: ClassVar[str] = "main"
    screens: ClassVar[dict[str, Screen]] = {}
    # Intent actions (other than VIEW of a deep link) that open a route, e.g. android.settings.WIFI_SETTINGS.
    actions: ClassVar[dict[str, str]] = {}
    # The app's own deep links, `<prefix><route>[?query]` (e.g. automobile://playground/); None: no scheme.
    deep_link_prefix: ClassVar[str | None] = None
    # A background sync job (JobScheduler id, service, the wake lock its work holds while it runs), or None.
    sync_job: ClassVar[SyncJob | None] = None
    # Whether that job runs from boot (the testbed's stuck sync), not only once run (`cmd jobscheduler run`).
    sync_from_boot: ClassVar[bool] = False

    def initial_state(self) -> dict[str, object]:
        """The in-memory state a fresh process starts with."""
        return {}

    def derived(self, ctx: AppContext) -> dict[str, object]:
        """Values computed from device state (settings, prefs) at render time."""
        return {}

    def redirect(self, ctx: AppContext, route: str) -> str:
        """The route actually shown when `route` is requested (guards such as "sign in first")."""
        return route

    def resolve_uri(self, uri: str) -> str | None:
        """The route a VIEW deep link opens in this app, or None when the app does not handle it.

        With a `deep_link_prefix`, the path after it is the route (the query ignored); an unknown
        path still opens the app at its start destination, as a navigation graph does.
        """
        prefix = self.deep_link_prefix
        if prefix is None or not uri.startswith(prefix):
            return None
        route = uri[len(prefix):].split("?", 1)[0].strip("/")
        return route if route in self.screens else self.start_route

    def resolve_action(self, action: str, data: str | None) -> str | None:
        """The route an intent action opens (`actions` by default), or None; data is the intent's URI."""
        return self.actions.get(action)

    def launch_route(self, ctx: AppContext) -> str:
        return self.redirect(ctx, self.start_route)

    def on_start(self, ctx: AppContext) -> None:
        """Called when the app's process starts (first launch, or after force-stop or `pm clear`)."""

    def on_content_changed(self, phone: Phone, authority: str) -> None:
        """Called after a provider's data changed (a ContentObserver); Messages re-imports SMS here."""

    def background_wake_locks(self, phone: Phone) -> tuple[str, ...]:
        """Tags of the wake locks the app's background work holds right now (shown by `dumpsys power`).

        A running sync job holds its lock while the app may run in the background: restricting the
        app (RUN_ANY_IN_BACKGROUND `ignore`) stops the work and releases it.
        """
        job = self.sync_job
        if job is None or self.package not in phone.running_jobs:
            return ()
        return () if phone.appops.mode(self.package, "RUN_ANY_IN_BACKGROUND") == IGNORE else (job.tag,)

    def handler(self, name: str) -> Callable[[AppContext, str], None]:
        method = getattr(self, f"tap_{name}", None)
        if method is None:
            raise LookupError(f"{self.package} declares a tap handler {name!r} but has no tap_{name} method")
        return method

    def tap_go(self, ctx: AppContext, route: str) -> None:
        """Shared handler: navigate to the route given as the widget's arg."""
        ctx.navigate(route)


def prefs_path(phone: Phone, package: str, name: str) -> str:
    return posixpath.join(phone.fs.private_dir(package), "shared_prefs", f"{name}.xml")


def read_shared_prefs(phone: Phone, package: str, name: str) -> dict[str, PrefValue]:
    """Read `shared_prefs/<name>.xml` the way SharedPreferences does; a missing or broken file is empty."""
    path = prefs_path(phone, package, name)
    try:
        data = phone.fs.read(path, user=package)
    except OSError:
        return {}
    try:
        root = SafeET.fromstring(data)
    except Exception:  # noqa: BLE001 - Android discards an unparsable prefs file the same way
        return {}
    values: dict[str, PrefValue] = {}
    for element in root:
        key = element.get("name")
        if key is None:
            continue
        raw = element.get("value")
        try:
            if element.tag == "boolean":
                values[key] = raw == "true"
            elif element.tag in ("int", "long"):
                values[key] = int(raw)
            elif element.tag == "float":
                values[key] = float(raw)
            elif element.tag == "string":
                values[key] = element.text or ""
            elif element.tag == "set":
                values[key] = tuple(child.text or "" for child in element)
        except (TypeError, ValueError):
            continue
    return values


def write_shared_prefs(phone: Phone, package: str, name: str, values: dict[str, PrefValue]) -> None:
    """Write `shared_prefs/<name>.xml` with Android's typed tags, as the app itself would."""
    lines = ["<?xml version='1.0' encoding='utf-8' standalone='yes' ?>", "<map>"]
    for key, value in values.items():
        attr = escape(key, {'"': "&quot;"})
        if isinstance(value, bool):
            lines.append(f'    <boolean name="{attr}" value="{str(value).lower()}" />')
        elif isinstance(value, int):
            tag = "int" if -(2**31) <= value < 2**31 else "long"
            lines.append(f'    <{tag} name="{attr}" value="{value}" />')
        elif isinstance(value, float):
            lines.append(f'    <float name="{attr}" value="{value}" />')
        elif isinstance(value, tuple):
            items = "".join(f"<string>{escape(item)}</string>" for item in value)
            lines.append(f'    <set name="{attr}">{items}</set>')
        else:
            lines.append(f'    <string name="{attr}">{escape(str(value))}</string>')
    lines.append("</map>")
    phone.fs.write(prefs_path(phone, package, name), ("\n".join(lines) + "\n").encode(), mode=0o660, user=package)
