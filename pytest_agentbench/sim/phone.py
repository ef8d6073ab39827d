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
from .fs import SimFileSystem
from .ui import UiNode, hit_test, layout_screen, status_bar, to_xml

LAUNCHER_PACKAGE = "com.android.launcher3"
PHYSICAL_SIZE = (1080, 2400)
PHYSICAL_DENSITY = 420

KEYCODES = {"KEYCODE_HOME": 3, "KEYCODE_BACK": 4, "KEYCODE_DPAD_UP": 19, "KEYCODE_DPAD_DOWN": 20,
            "KEYCODE_DPAD_LEFT": 21, "KEYCODE_DPAD_RIGHT": 22, "KEYCODE_DPAD_CENTER": 23, "KEYCODE_VOLUME_UP": 24,
            "KEYCODE_VOLUME_DOWN": 25, "KEYCODE_POWER": 26, "KEYCODE_TAB": 61, "KEYCODE_SPACE": 62,
            "KEYCODE_ENTER": 66, "KEYCODE_DEL": 67, "KEYCODE_MENU": 82, "KEYCODE_ESCAPE": 111,
            "KEYCODE_FORWARD_DEL": 112, "KEYCODE_MOVE_HOME": 122, "KEYCODE_MOVE_END": 123, "KEYCODE_APP_SWITCH": 187,
            "KEYCODE_WAKEUP": 224, "KEYCODE_SLEEP": 223, "KEYCODE_CUT": 277, "KEYCODE_COPY": 278, "KEYCODE_PASTE": 279,
            "KEYCODE_SEARCH": 84, "KEYCODE_CAMERA": 27, "KEYCODE_VOLUME_MUTE": 164, "KEYCODE_NOTIFICATION": 83}


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

    @property
    def package(self) -> str:
        return self.app.package

    @property
    def apk_path(self) -> str:
        return f"{self.code_dir}/base.apk"

    @property
    def component(self) -> str:
        return f"{self.app.package}/{self.app.activity}"


def default_props(serial_hint: str) -> dict[str, str]:
    """The system properties of a fresh simulated phone (an API 34 userdebug build)."""
    return {
        "ro.build.version.sdk": "34", "ro.build.version.release": "14", "ro.build.version.codename": "REL",
        "ro.build.id": "UQ1A.240205.004", "ro.build.type": "userdebug", "ro.build.tags": "dev-keys",
        "ro.build.fingerprint": "agentbench/agentbench_sim/agentbench:14/UQ1A.240205.004/1:userdebug/dev-keys",
        "ro.build.version.security_patch": "2024-02-05",
        "ro.product.model": "AgentBench Sim", "ro.product.manufacturer": "AgentBench",
        "ro.product.brand": "agentbench", "ro.product.name": "agentbench_sim", "ro.product.device": "agentbench",
        "ro.product.cpu.abi": "x86_64", "ro.product.locale": "en-US", "persist.sys.locale": "en-US",
        "persist.sys.timezone": "UTC", "ro.boot.qemu.avd_name": f"AgentBench_{serial_hint}",
        "ro.kernel.qemu": "1", "ro.debuggable": "1", "ro.secure": "1", "ro.serialno": serial_hint,
        "ro.sf.lcd_density": str(PHYSICAL_DENSITY), "sys.boot_completed": "1", "dev.bootcomplete": "1",
        "init.svc.bootanim": "stopped", "service.adb.root": "0",
    }


def default_settings() -> dict[str, dict[str, str]]:
    """Settings a fresh phone has; anything else reads as `null`, as on Android."""
    return {
        "global": {"wifi_on": "0", "airplane_mode_on": "0", "device_name": "AgentBench Sim", "adb_enabled": "1",
                   "window_animation_scale": "1.0", "transition_animation_scale": "1.0",
                   "animator_duration_scale": "1.0", "auto_time": "1", "auto_time_zone": "1",
                   "stay_on_while_plugged_in": "7", "development_settings_enabled": "1"},
        "system": {"font_scale": "1.0", "user_rotation": "0", "accelerometer_rotation": "0",
                   "screen_brightness": "102", "screen_off_timeout": "1800000"},
        "secure": {"navigation_mode": "2", "ui_night_mode": "1", "accessibility_enabled": "0",
                   "default_input_method": "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME",
                   "enabled_input_methods": "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME",
                   "android_id": "a9e1b2c3d4e5f607"},
    }


class Phone:
    """A simulated Android phone; every public method takes the one lock, so transport threads may call it.

    Overrides: `props` (dict merged into the system properties), `settings` (namespace -> dict),
    `size` ((w, h) physical pixels), `density`, `apps` (App instances to install instead of the
    built-in set), and the shorthands `model`, `manufacturer`, `sdk`, `release`.
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
        self.props.update({k: str(v) for k, v in dict(overrides.pop("props", {}) or {}).items()})
        self.settings = default_settings()
        for namespace, values in dict(overrides.pop("settings", {}) or {}).items():
            self.settings[namespace].update({k: str(v) for k, v in values.items()})
        self.physical_size: tuple[int, int] = tuple(overrides.pop("size", PHYSICAL_SIZE))  # type: ignore[assignment]
        self.physical_density = int(overrides.pop("density", PHYSICAL_DENSITY))  # type: ignore[arg-type]
        apps = overrides.pop("apps", None)
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
        for app in (apps if apps is not None else [cls() for cls in BUILTIN_APPS]):
            self._install(app, apk=None, version_name=app.version_name, version_code=app.version_code,
                          stamp=SYSTEM_IMAGE_TIME)
        for binary in sorted(_command_names()):
            self.fs.write(f"/system/bin/{binary}", b"", mode=0o755)
        self.launch(LAUNCHER_PACKAGE)

    # The contract the transport and tests use.

    @property
    def banner_props(self) -> dict[str, str]:
        """The properties adbd announces in its CNXN banner."""
        return {key: self.props[key] for key in ("ro.product.name", "ro.product.model", "ro.product.device")}

    def shell(self, command: str) -> CommandResult:
        """Run one command line as `adb shell` does and return what it printed and its exit status."""
        with self.lock:
            self.command_log.append(command)
            stdout, stderr, status = shell.run(self, command)
            return CommandResult(stdout, stderr, status)

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
            clock = time.strftime("%H:%M", time.gmtime())
            return [root, status_bar(width, clock, wifi_on=self.settings["global"].get("wifi_on") == "1")]

    # Activity manager.

    def context(self, package: str) -> AppContext:
        return AppContext(self, self.packages[package].app, self.runtimes[package])

    def launch(self, package: str) -> str:
        """Bring an app to the front as its launcher icon does (a running app keeps its state)."""
        with self.lock:
            info = self.packages[package]
            if package not in self.runtimes:
                runtime = AppRuntime(stack=[info.app.start_route], state=info.app.initial_state())
                self.runtimes[package] = runtime
                runtime.stack[:] = [info.app.launch_route(AppContext(self, info.app, runtime))]
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

    def resolve_action(self, action: str) -> tuple[str, str] | None:
        with self.lock:
            for package, info in self.packages.items():
                if action in info.app.actions:
                    return package, info.app.actions[action]
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
            self.runtimes.pop(package, None)
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
        """A vertical swipe scrolls the foreground screen (finger up = content moves up), if it overflows."""
        with self.lock:
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
                           target_sdk=app.target_sdk, system=app.system and preinstalled)
        self.packages[app.package] = info
        return info

    def uninstall(self, package: str) -> None:
        """Remove a package, its APK and its private storage."""
        with self.lock:
            info = self.packages.pop(package)
            self.runtimes.pop(package, None)
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


def _command_names() -> list[str]:
    from .commands import COMMANDS

    return list(COMMANDS)
