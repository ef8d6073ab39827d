"""Shell command lines -> a small, stateful Android (packages, activities, settings, screen) -> CommandResult."""

from __future__ import annotations

import collections
import contextlib
import hashlib
import threading
import time
from dataclasses import dataclass

from . import shell
from .apps import BUILTIN_APPS, App, AppContext, AppRuntime, generic_app
from .defaults import KEYCODES, PHYSICAL_DENSITY, default_props, default_settings, user_build_props  # noqa: F401
from .fs import SimFileSystem
from .providers import PROVIDER_CLASSES, Provider
from .seeding import SeedingMixin
from .system.appops import AppOpsTable
from .system.processes import ProcessTable
from .system.clock import local
from .system.logbuffer import LogBuffer
from .system.power import PowerState
from .ui import UiNode, hit_test, layout_screen, status_bar, swipe_target, to_xml
from .users import ROOT, SHELL, app_uid_candidate

LAUNCHER_PACKAGE = "com.android.launcher3"
PHYSICAL_SIZE = (1080, 2400)

#: When the preinstalled apps were "installed": the system image's build time, the same on every
#: boot, so two sessions on fresh simulated phones see the same app build (lastUpdateTime).
SYSTEM_IMAGE_TIME = 1707091200  # 2024-02-05, the day of ro.build.id UQ1A.240205


@dataclass(frozen=True)
class CommandResult:
    """What one shell command line produced on the device."""

    stdout: bytes
    stderr: bytes
    exit_code: int


@dataclass
class PackageInfo:
    """The package manager's record of one installed package."""

    app: App
    version_name: str
    version_code: int
    first_install: int
    last_update: int
    code_dir: str
    debuggable: bool
    min_sdk: int
    target_sdk: int
    system: bool
    uid: int

    @property
    def package(self) -> str:
        return self.app.package

    @property
    def apk_path(self) -> str:
        return f"{self.code_dir}/base.apk"

    @property
    def component(self) -> str:
        return f"{self.app.package}/{self.app.activity}"


class Phone(SeedingMixin):
    """A simulated Android phone; every public method takes the one lock, so transport threads may call it.

    Overrides: `props` (dict merged into the system properties; `{"ro.build.type": "user"}` makes a
    production build without su or `adb root`), `settings` (namespace -> dict), `size` ((w, h)
    physical pixels), `density`, `apps` (App instances to install instead of the built-in set), and
    the shorthands `model`, `manufacturer`, `sdk`, `release`; `su_variant` (`aosp`, `magisk`, `root-only`); `busy_screen_dumps` ({package: N}: its next N dumps
    print "ERROR: could not get idle state."). Seeding calls are in sim/seeding.py.
    """

    def __init__(self, serial_hint: str = "sim", **overrides: object) -> None:
        self.lock = threading.RLock()
        self.serial_hint = serial_hint
        self.fs = SimFileSystem()
        self.counters: collections.Counter[str] = collections.Counter()
        self.command_log: list[str] = []
        self.props = default_props(serial_hint)
        shorthand = {"model": "ro.product.model", "manufacturer": "ro.product.manufacturer",
                     "sdk": "ro.build.version.sdk", "release": "ro.build.version.release"}
        for key, prop in shorthand.items():
            if key in overrides:
                self.props[prop] = str(overrides.pop(key))
        props = {k: str(v) for k, v in dict(overrides.pop("props", {}) or {}).items()}
        if props.get("ro.build.type") == "user":
            user_build_props(self.props)
        self.props.update(props)
        self.settings = default_settings()
        for namespace, values in dict(overrides.pop("settings", {}) or {}).items():
            self.settings[namespace].update({k: str(v) for k, v in values.items()})
        self.physical_size: tuple[int, int] = tuple(overrides.pop("size", PHYSICAL_SIZE))  # type: ignore[assignment]
        self.physical_density = int(overrides.pop("density", PHYSICAL_DENSITY))  # type: ignore[arg-type]
        apps = overrides.pop("apps", None)
        #: Package -> how many more `uiautomator dump`s with it in front print "could not get idle state".
        self.busy_screen_dumps: dict[str, int] = {str(k): int(v) for k, v in dict(overrides.pop("busy_screen_dumps", {}) or {}).items()}  # type: ignore[call-overload]
        #: How su reads its words: `aosp`, `magisk` or `root-only` (sim/commands/su.py).
        self.su_variant = str(overrides.pop("su_variant", "aosp"))
        if self.su_variant not in ("aosp", "magisk", "root-only"):
            raise ValueError(f"su_variant must be aosp, magisk or root-only, got {self.su_variant!r}")
        if overrides:
            raise TypeError(f"Phone() got unknown overrides: {', '.join(sorted(overrides))}")
        self.override_size: tuple[int, int] | None = None
        self.override_density: int | None = None
        self.boot_time = time.time()
        self.packages: dict[str, PackageInfo] = {}
        self.runtimes: dict[str, AppRuntime] = {}
        self.tasks: list[str] = []  # z-order of running apps; the last one is in the foreground
        self.awake = True
        #: The foreground user (`am get-current-user`); `am switch-user N` changes it.
        self.current_user = 0
        self._install_serial = 0
        self.adbd_root = False  # `adb root` restarted adbd as root
        self.appops = AppOpsTable()
        self.logs = LogBuffer()
        self.power = PowerState()
        self.providers: dict[str, Provider] = {cls.authority: cls() for cls in PROVIDER_CLASSES}
        self._next_pid = 3100
        self.processes = ProcessTable(self._new_pid)
        self._background_pids: dict[str, int] = {}
        #: Packages whose sync job (`App.sync_job`) is running, with when it started: at boot, or at `cmd jobscheduler run`.
        self.running_jobs: dict[str, float] = {}
        self._media_serial = 0
        self.log("SystemServer", "Entered the Android system server!", buffer="system")
        for app in (apps if apps is not None else [cls() for cls in BUILTIN_APPS]):
            self._install(app, apk=None, version_name=app.version_name, version_code=app.version_code,
                          stamp=SYSTEM_IMAGE_TIME)
        for binary in sorted(_command_names()):
            if binary != "su":
                self.fs.write(f"/system/bin/{binary}", b"", mode=0o755)
        if self.debuggable_build:
            self.fs.write("/system/xbin/su", b"", mode=0o4750)
            # A benchmark image: Chrome's first-run screens off, as docs/jobs.md asks (read on userdebug only).
            self.fs.write("/data/local/tmp/chrome-command-line", b"_ --disable-fre --no-default-browser-check --no-first-run\n")
        #: RoleManager's holders (`cmd role`): Messages is the default SMS app, as the Messages job needs.
        self.roles: dict[str, list[str]] = {"android.app.role.SMS": ["com.google.android.apps.messaging"]}
        self.log("ActivityManager", "System now ready", buffer="system")
        self.launch(LAUNCHER_PACKAGE)
        self.log("BootReceiver", "Boot completed; time zone " + self.timezone, buffer="system")

    # The contract the transport and tests use.

    @property
    def banner_props(self) -> dict[str, str]:
        """The properties adbd announces in its CNXN banner."""
        return {key: self.props[key] for key in ("ro.product.name", "ro.product.model", "ro.product.device")}

    def shell(self, command: str, *, user: str | None = None) -> CommandResult:
        """Run one command line as `adb shell` does and return what it printed and its exit status.

        Args:
            command: The command line.
            user: Run as this user (`root` inside an interactive `su`); default: whoever adbd runs as.
        """
        with self.lock:
            self.command_log.append(command)
            stdout, stderr, status = shell.run(self, command, user=user or self.adbd_user)
            return CommandResult(stdout, stderr, status)

    def take_busy_dump(self) -> bool:
        """Whether this dump fails as an animating screen's does (uses up one of `busy_screen_dumps`)."""
        with self.lock:
            front = self.tasks[-1] if self.tasks else ""
            if self.busy_screen_dumps.get(front, 0) <= 0:
                return False
            self.busy_screen_dumps[front] -= 1
            self.counters["busy-screen-dumps"] += 1
            return True

    # Build, identity and time.

    @property
    def debuggable_build(self) -> bool:
        """userdebug/eng builds (ro.debuggable=1): su exists and adbd may restart as root."""
        return self.props.get("ro.debuggable") == "1" and self.props.get("ro.build.type") != "user"

    @property
    def adbd_user(self) -> str:
        """Who adbd's shell and sync services run as."""
        return ROOT if self.adbd_root else SHELL

    def set_adbd_root(self, root: bool) -> None:
        """`adb root` / `adb unroot`: adbd restarts as root (userdebug only) or as the shell user."""
        with self.lock:
            self.adbd_root = root and self.debuggable_build
            self.props["service.adb.root"] = "1" if self.adbd_root else "0"

    @property
    def timezone(self) -> str:
        return self.props.get("persist.sys.timezone") or "UTC"

    def now_local(self):  # noqa: ANN201 - a datetime in the device's zone
        return local(time.time(), self.timezone)

    def process_pid(self, package: str) -> int:
        """The pid of the app's process, or of the background process its services run in."""
        runtime = self.runtimes.get(package)
        if runtime is not None and runtime.pid:
            return runtime.pid
        if package not in self._background_pids:
            self._background_pids[package] = self._new_pid()
        return self._background_pids[package]

    def background_pids(self) -> dict[str, int]:
        """Packages whose background work runs in a process of its own, with that process's pid."""
        with self.lock:
            for package, info in self.packages.items():
                if info.app.background_wake_locks(self):
                    self.process_pid(package)
            return dict(self._background_pids)

    def _new_pid(self) -> int:
        self._next_pid += 37
        return self._next_pid

    def notify_change(self, authority: str) -> None:
        """A provider's data changed: apps observing it react (Messages imports new SMS)."""
        with self.lock:
            for info in list(self.packages.values()):
                info.app.on_content_changed(self, authority)

    def set_version(self, package: str, version_name: str | None = None, version_code: int | None = None) -> None:
        """Simulate an app update: new versionName/versionCode and a later lastUpdateTime."""
        with self.lock:
            info = self.packages[package]
            if version_name is not None:
                info.version_name = version_name
            if version_code is not None:
                info.version_code = int(version_code)
            info.last_update = max(int(time.time()), info.last_update + 1)

    def foreground(self) -> tuple[str, str]:
        """The (package, activity class) of the focused window."""
        with self.lock:
            package = self.tasks[-1]
            return package, self.packages[package].app.activity

    def screen_xml(self) -> str:
        """The current screen as `uiautomator dump` writes it."""
        with self.lock:
            return to_xml(self.render(), self.rotation)

    @contextlib.contextmanager
    def unlocked(self):
        """Let other threads use the phone while this one waits (`sleep`), then take the lock back at its depth."""
        try:
            saved = self.lock._release_save()  # type: ignore[attr-defined]  # what Condition.wait uses
        except RuntimeError:  # this thread does not hold the lock
            yield
            return
        try:
            yield
        finally:
            self.lock._acquire_restore(saved)  # type: ignore[attr-defined]

    # Display.

    @property
    def size(self) -> tuple[int, int]:
        width, height = self.override_size or self.physical_size
        return (height, width) if self.rotation % 2 else (width, height)

    @property
    def density(self) -> int:
        return self.override_density or self.physical_density

    @property
    def rotation(self) -> int:
        try:
            return int(self.settings["system"].get("user_rotation", "0")) % 4
        except ValueError:
            return 0

    @property
    def night_mode(self) -> bool:
        return self.settings["secure"].get("ui_night_mode") == "2"

    def render(self) -> list[UiNode]:
        """Lay out the foreground app and the status bar as window roots (app first, system UI on top)."""
        with self.lock:
            width, height = self.size
            package = self.tasks[-1]
            app = self.packages[package].app
            runtime = self.runtimes[package]
            ctx = AppContext(self, app, runtime)
            screen = app.screens[runtime.route]
            state = {**runtime.state, **app.derived(ctx)}
            root, runtime.scroll[runtime.route] = layout_screen(
                package, screen.widgets, state, width=width, height=height, fields=runtime.fields,
                focused_field=runtime.focused_field, scroll=runtime.scroll.get(runtime.route, 0))
            clock = self.now_local().strftime("%H:%M")
            return [root, status_bar(width, clock, wifi_on=self.settings["global"].get("wifi_on") == "1")]

    # Activity manager.

    def context(self, package: str) -> AppContext:
        return AppContext(self, self.packages[package].app, self.runtimes[package])

    def launch(self, package: str) -> str:
        """Bring an app to the front as its launcher icon does (a running app keeps its state)."""
        with self.lock:
            info = self.packages[package]
            if package not in self.runtimes:
                runtime = AppRuntime(stack=[info.app.start_route], state=info.app.initial_state(),
                                     pid=self._background_pids.pop(package, 0) or self._new_pid())
                self.runtimes[package] = runtime
                self.log("ActivityManager", f"Start proc {runtime.pid}:{package}/{_user_tag(info.uid)} for "
                         f"top-activity {{{package}/{info.app.activity}}}", buffer="system")
                ctx = AppContext(self, info.app, runtime)
                info.app.on_start(ctx)
                runtime.stack[:] = [info.app.launch_route(ctx)]
            self._to_front(package)
            return info.app.activity

    def open_route(self, package: str, route: str) -> None:
        """Open an app at a route (deep link or action intent), applying the app's redirects."""
        with self.lock:
            self.launch(package)
            ctx = self.context(package)
            target = ctx.app.redirect(ctx, route)
            if ctx.runtime.route != target:
                ctx.runtime.stack.append(target)
            ctx.runtime.focused_field = ""

    def resolve_view(self, uri: str) -> tuple[str, str] | None:
        """The (package, route) that handles a VIEW intent for `uri`, or None."""
        with self.lock:
            for package, info in self.packages.items():
                route = info.app.resolve_uri(uri)
                if route is not None:
                    return package, route
            return None

    def resolve_action(self, action: str, data: str | None = None) -> tuple[str, str] | None:
        """The (package, route) that handles an intent action (with its data URI, e.g. `package:PKG`), or None."""
        with self.lock:
            for package, info in self.packages.items():
                route = info.app.resolve_action(action, data)
                if route is not None:
                    return package, route
            return None

    def go_home(self) -> None:
        with self.lock:
            self.launch(LAUNCHER_PACKAGE)

    def press_back(self) -> None:
        """BACK: hide the keyboard first, then pop the back stack; at the root the app goes to the background."""
        with self.lock:
            package = self.tasks[-1]
            runtime = self.runtimes[package]
            if runtime.focused_field:
                runtime.focused_field = ""
            elif len(runtime.stack) > 1:
                runtime.stack.pop()
            elif package != LAUNCHER_PACKAGE:
                self.tasks.remove(package)
                if not self.tasks:
                    self.launch(LAUNCHER_PACKAGE)

    def force_stop(self, package: str) -> None:
        """Kill the app's process: its in-memory UI state is gone; the launcher shows if it was in front."""
        with self.lock:
            if self.runtimes.pop(package, None) is not None and package in self.packages:
                self.log("ActivityManager", f"Force stopping {package} appid={self.packages[package].uid} user=0: "
                         "from pid 4242", buffer="system")
            self.power.release(package)
            # The process is gone, and with it the running job and its wake lock (a job runs it again).
            self.running_jobs.pop(package, None)
            self._background_pids.pop(package, None)
            if package in self.tasks:
                self.tasks.remove(package)
            if package == LAUNCHER_PACKAGE or not self.tasks:
                self.launch(LAUNCHER_PACKAGE)

    def clear_data(self, package: str) -> None:
        """`pm clear`: stop the app and wipe its private storage (shared_prefs included)."""
        with self.lock:
            self.force_stop(package)
            private = self.fs.private_dir(package)
            if self.fs.exists(private):
                self.fs.remove(private, recursive=True, user="root")
            self.fs.mkdir(private, parents=True, mode=0o700, user="root")
            for authority, provider in self.providers.items():
                if provider.package == package:  # a provider's data is gone: its observers hear of it
                    self.notify_change(authority)

    # Input.

    def tap(self, x: int, y: int) -> None:
        """Tap: the deepest clickable node at the point runs its app's handler."""
        with self.lock:
            node = hit_test(self.render(), x, y)
            if node is None or not node.on_tap or node.package not in self.runtimes:
                return
            ctx = self.context(node.package)
            if node.on_tap == "__focus__":
                ctx.runtime.focused_field = node.field_id
                return
            ctx.runtime.focused_field = ""
            ctx.app.handler(node.on_tap)(ctx, node.arg)

    def swipe(self, x1: int, y1: int, x2: int, y2: int) -> None:
        """A vertical swipe scrolls the foreground screen (finger up = content moves up), if it overflows.

        A sideways one (mostly horizontal, at least a fifth of the screen's width) started on a row
        with an `on_swipe` handler runs it (swipe to dismiss); elsewhere it does nothing.
        """
        with self.lock:
            if abs(x2 - x1) > abs(y2 - y1):
                node = swipe_target(self.render(), x1, y1)
                if node is not None and abs(x2 - x1) >= self.size[0] // 5 and node.package in self.runtimes:
                    self.context(node.package).app.handler(node.on_swipe)(self.context(node.package), node.arg)
                return
            runtime = self.runtimes[self.tasks[-1]]
            runtime.scroll[runtime.route] = runtime.scroll.get(runtime.route, 0) + (y1 - y2)
            self.render()  # clamps the offset to what the content can scroll

    def type_text(self, text: str) -> None:
        """Keyboard text goes to the focused text field of the foreground app, if any."""
        with self.lock:
            runtime = self.runtimes[self.tasks[-1]]
            if runtime.focused_field:
                runtime.fields[runtime.focused_field] = runtime.fields.get(runtime.focused_field, "") + text

    def key(self, code: int) -> None:
        with self.lock:
            runtime = self.runtimes[self.tasks[-1]]
            if code == KEYCODES["KEYCODE_BACK"]:
                self.press_back()
            elif code == KEYCODES["KEYCODE_HOME"]:
                self.go_home()
            elif code in (KEYCODES["KEYCODE_DEL"],) and runtime.focused_field:
                value = runtime.fields.get(runtime.focused_field, "")
                runtime.fields[runtime.focused_field] = value[:-1]
            elif code == KEYCODES["KEYCODE_ENTER"] and runtime.focused_field:
                runtime.focused_field = ""
            elif code == KEYCODES["KEYCODE_SPACE"]:
                self.type_text(" ")
            elif code in (KEYCODES["KEYCODE_POWER"], KEYCODES["KEYCODE_SLEEP"]):
                self.awake = code == KEYCODES["KEYCODE_POWER"] and not self.awake
            elif code == KEYCODES["KEYCODE_WAKEUP"]:
                self.awake = True

    # Package manager.

    def install(self, app: App, apk: bytes, *, version_name: str, version_code: int) -> PackageInfo:
        """Install or update a package from APK bytes (kept byte for byte as base.apk)."""
        with self.lock:
            return self._install(app, apk=apk, version_name=version_name, version_code=version_code,
                                 stamp=int(time.time()))

    def _install(self, app: App, *, apk: bytes | None, version_name: str, version_code: int, stamp: int) -> PackageInfo:
        previous = self.packages.get(app.package)
        preinstalled = apk is None  # built into the system image, not installed from an APK
        self._install_serial += 1
        token = hashlib.sha256(f"{app.package}:{self._install_serial}:{stamp}".encode()).hexdigest()
        code_dir = f"/data/app/~~{token[:22]}==/{app.package}-{token[22:44]}=="
        if apk is None:
            apk = f"package={app.package}\nversionName={version_name}\nversionCode={version_code}\n".encode()
        if previous is not None:
            self.force_stop(app.package)
            if self.fs.exists(previous.code_dir):
                self.fs.remove(previous.code_dir, recursive=True)
            stamp = max(stamp, previous.last_update + 1)
        self.fs.write(f"{code_dir}/base.apk", apk, mode=0o644, mtime=stamp)
        private = self.fs.private_dir(app.package)
        if not self.fs.exists(private):
            self.fs.mkdir(private, parents=True, mode=0o700, user="root")
        info = PackageInfo(app=app, version_name=version_name, version_code=version_code,
                           first_install=previous.first_install if previous else stamp, last_update=stamp,
                           code_dir=code_dir, debuggable=app.debuggable, min_sdk=app.min_sdk,
                           target_sdk=app.target_sdk, system=app.system and preinstalled,
                           uid=previous.uid if previous else self._free_uid(app.package))
        self.packages[app.package] = info
        if app.sync_job is not None and app.sync_from_boot:
            self.running_jobs[app.package] = self.boot_time
        return info

    def _free_uid(self, package: str) -> int:
        taken = {info.uid for info in self.packages.values()}
        attempt = 0
        while app_uid_candidate(package, attempt) in taken:
            attempt += 1
        return app_uid_candidate(package, attempt)

    def uninstall(self, package: str) -> None:
        """Remove a package, its APK, its private storage, its app-ops and wake locks."""
        with self.lock:
            info = self.packages.pop(package)
            self.runtimes.pop(package, None)
            self.appops.forget(package)
            self.power.release(package)
            self.running_jobs.pop(package, None)
            self.power.allowlist.discard(package)
            if package in self.tasks:
                self.tasks.remove(package)
                if not self.tasks:
                    self.launch(LAUNCHER_PACKAGE)
            for path in (info.code_dir, self.fs.private_dir(package)):
                if self.fs.exists(path):
                    self.fs.remove(path, recursive=True, user="root")

    def app_for_install(self, package: str, label: str | None = None) -> App:
        """The declared app for a package name, or a plain one-screen app for an unknown APK."""
        for cls in BUILTIN_APPS:
            if cls.package == package:
                return cls()
        return generic_app(package, label or package.rsplit(".", 1)[-1].title())

    def _to_front(self, package: str) -> None:
        if package in self.tasks:
            self.tasks.remove(package)
        self.tasks.append(package)


def _user_tag(uid: int) -> str:
    return f"u0a{uid - 10000}"


def _command_names() -> list[str]:
    from .commands import COMMANDS

    return list(COMMANDS)
