"""One phone's tool actions -> few adb round trips, with the last observed element list remembered."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from pytest_agentbench.device.adb import Adb, ShellResult
from pytest_agentbench.device.shellscript import Script, sh
from pytest_agentbench.errors import DeviceError
from pytest_agentbench.device.uiautomator import (
    IDLE_RETRIES,
    NOT_IDLE,
    Element,
    Screen,
    format_elements,
    indexed_elements,
    parse_screen,
    screen_signature,
)

# The foreground activity comes from the window manager; the marker splits its lines from the
# XML so one exec round trip serves both. Fixed text only: no value of ours is spliced in.
_FOREGROUND_MARKER = "__agentbench_dump__"
_OBSERVE_SCRIPT = Script(
    "dumpsys window displays | grep -E 'mCurrentFocus|mFocusedApp'; "
    f"echo {_FOREGROUND_MARKER}; uiautomator dump /dev/tty"
)
_FOCUS_PATTERNS = (
    re.compile(r"mCurrentFocus=Window\{\S+ \S+ ([\w.]+)/([\w.$]+)\}"),
    re.compile(r"mFocusedApp=\S*ActivityRecord\{\S+ \S+ ([\w.]+)/([\w.$]+)"),
)
# A real phone's dump waits for idle, but animations can finish just after it; one short
# second look keeps "the screen did not change" honest without slowing every action.
_SETTLE_RETRY_S = 0.4
SWIPE_DURATION_MS = 300

KEYCODES = {
    "back": "KEYCODE_BACK",
    "home": "KEYCODE_HOME",
    "enter": "KEYCODE_ENTER",
    "delete": "KEYCODE_DEL",
    "recent": "KEYCODE_APP_SWITCH",
    "volume_up": "KEYCODE_VOLUME_UP",
    "volume_down": "KEYCODE_VOLUME_DOWN",
    "power": "KEYCODE_POWER",
    "tab": "KEYCODE_TAB",
    "menu": "KEYCODE_MENU",
}


@dataclass(frozen=True)
class Observation:
    """One look at the phone: the parsed dump, its element list and the text an agent reads."""

    foreground: str
    screen: Screen
    elements: tuple[Element, ...]
    signature: tuple[tuple[object, ...], ...]
    raw_chars: int
    #: The uiautomator XML as dumped (without the device's trailing status text).
    xml: str = ""

    @property
    def text(self) -> str:
        """The compact observe text (no raw XML)."""
        return format_elements(self.elements, foreground=self.foreground)

    @property
    def size(self) -> tuple[int, int]:
        """The screen size, from the widest window root's bounds."""
        width = max((node.bounds[2] for node in self.screen.nodes), default=1080)
        height = max((node.bounds[3] for node in self.screen.nodes), default=2400)
        return width, height


def _parse_foreground(lines: str, screen: Screen) -> str:
    """`pkg/activity` from the window manager's focus lines, else the app package of the dump."""
    for pattern in _FOCUS_PATTERNS:
        match = pattern.search(lines)
        if match is not None:
            package, activity = match.groups()
            # Android's own short form: pkg/.Activity when the class lives in the package.
            if activity.startswith(package + "."):
                activity = activity[len(package):]
            return f"{package}/{activity}"
    packages = [node.package for node in screen.nodes if node.package and node.package != "com.android.systemui"]
    return f"{packages[0]} (activity unknown)" if packages else "unknown"


def _app_signature(screen: Screen) -> tuple[tuple[object, ...], ...]:
    """The signature without the status bar: its clock ticking is not the agent's action changing the screen."""
    app_nodes = [node for node in screen.nodes if node.package != "com.android.systemui"]
    return screen_signature(app_nodes or screen.nodes)


def _xml_only(text: str) -> str:
    # `uiautomator dump /dev/tty` prints "UI hierchary dumped to: /dev/tty" after the document.
    end = text.rfind("</hierarchy>")
    return text[: end + len("</hierarchy>")].strip() if end >= 0 else text.strip()


def encode_input_text(text: str) -> str:
    """Text for `input text`: spaces become `%s` (its only space syntax); quoting happens later."""
    return text.replace(" ", "%s")


class PhoneDriver:
    """Drives one serial through the device layer and remembers what the agent last saw.

    Attributes:
        serial: The device serial.
        last: The latest observation (from observe or an action's result), None before the first.
    """

    def __init__(self, adb: Adb, serial: str) -> None:
        self._adb = adb
        self.serial = serial
        self.last: Observation | None = None

    def observe(self) -> Observation:
        """Dump the screen once (with the focus lines in the same round trip) and remember it.

        Raises:
            DeviceError: The device did not answer, or what it printed is not a dump.
        """
        raw = self._adb.exec_out(self.serial, _OBSERVE_SCRIPT, timeout_s=30).decode("utf-8", "replace")
        for _ in range(IDLE_RETRIES):
            # uiautomator already waited for idle before giving up; an animating screen usually settles by the next dump.
            if NOT_IDLE not in raw:
                break
            raw = self._adb.exec_out(self.serial, _OBSERVE_SCRIPT, timeout_s=30).decode("utf-8", "replace")
        focus, _, xml = raw.partition(_FOREGROUND_MARKER)
        if not xml:
            focus, xml = "", raw
        try:
            screen = parse_screen(xml)
        except ValueError as exc:
            raise DeviceError(
                f"the screen dump from {self.serial} was unreadable ({exc}); the screen may be locked or "
                "animating: call observe again",
                command="uiautomator dump /dev/tty", output=raw[-2000:],
            ) from exc
        observation = Observation(
            foreground=_parse_foreground(focus, screen),
            screen=screen,
            elements=indexed_elements(screen),
            signature=_app_signature(screen),
            raw_chars=len(xml.strip()),
            xml=_xml_only(xml),
        )
        self.last = observation
        return observation

    def current(self) -> Observation:
        """The remembered observation, or a fresh one when there is none yet."""
        return self.last if self.last is not None else self.observe()

    def run(self, script: Script | list[str], *, check: bool = True) -> ShellResult:
        """Run one device shell command line through the device layer."""
        return self._adb.shell(self.serial, script, timeout_s=30, check=check)

    def after_action(self, before: Observation) -> tuple[Observation, bool]:
        """Look again after an action and tell whether the screen changed since `before`."""
        after = self.observe()
        if after.signature == before.signature:
            time.sleep(_SETTLE_RETRY_S)
            after = self.observe()
        return after, after.signature != before.signature

    # ------------------------------------------------------------------ actions

    def tap(self, x: int, y: int) -> None:
        """Tap a point."""
        self.run(sh("input", "tap", x, y))

    def type_text(self, text: str, *, tap_first: tuple[int, int] | None = None) -> None:
        """Type into the focused field, optionally tapping a field first (one round trip)."""
        typing = sh("input", "text", encode_input_text(text))
        if tap_first is None:
            self.run(typing)
        else:
            self.run(Script.join([sh("input", "tap", *tap_first), typing], "&&"))

    def swipe(self, start: tuple[int, int], end: tuple[int, int]) -> None:
        """Swipe from one point to another."""
        self.run(sh("input", "swipe", *start, *end, SWIPE_DURATION_MS))

    def key(self, button: str) -> None:
        """Press a named button (a key of KEYCODES)."""
        self.run(sh("input", "keyevent", KEYCODES[button]))

    def launch(self, package: str) -> ShellResult:
        """Start an app's launcher activity (monkey resolves it, as mobile-mcp does)."""
        return self.run(sh("monkey", "-p", package, "-c", "android.intent.category.LAUNCHER", "1"), check=False)

    def force_stop(self, package: str) -> None:
        """Stop an app."""
        self.run(sh("am", "force-stop", package))

    def open_link(self, url: str) -> ShellResult:
        """Send a VIEW intent for a URL."""
        return self.run(sh("am", "start", "-a", "android.intent.action.VIEW", "-d", url), check=False)

    def read_log(self, tag: str | None) -> ShellResult:
        """`logcat -d` (the buffer so far, then exit), only `tag`'s lines when given."""
        return self.run(sh("logcat", "-d", "-v", "threadtime", *(("-s", tag) if tag else ())), check=False)

    def installed_packages(self) -> list[str]:
        """Every installed package name (used only to explain a failed launch)."""
        output = self.run(sh("pm", "list", "packages"), check=False).stdout
        return sorted(line.removeprefix("package:").strip() for line in output.splitlines() if line.startswith("package:"))
