"""A launched app + the suite's `startScreenIncludes` -> its start screen as soon as it is drawn and still, in a bounded poll instead of a fixed sleep.

`preflight.settleSeconds` is the longest preflight waits for the start screen. A suite with
`startScreenIncludes` names what that screen shows, so preflight need not sleep the whole time: it
dumps the hierarchy (`uiautomator dump`, which on a real phone itself waits for the UI to go idle)
every START_POLL_S until the app's nodes show every include. Then it takes the one capture it
always takes (the device checks' before-snapshot, the XML and the PNG in one exec-out), and that
capture must show the same app nodes as the dump before it (texts, ids, state and bounds: a layout
still moving differs). Two looks in a row that agree are the settled screen; a screen that changed
between them is looked at again. When the deadline passes first, the last capture decides, as the
one capture after the fixed sleep did, so a start screen slower than `settleSeconds` fails the
start-screen check exactly as before and no check is weaker.

The simulated phone draws a screen within the command that opens it, so there the first dump
already shows it; a real phone gets the whole `settleSeconds` when it needs it. A suite without
`startScreenIncludes` has nothing to look for and sleeps `settleSeconds`, as before.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Generic, TypeVar

from pytest_agentbench.device.uiautomator import dump_screen, missing_texts, parse_hierarchy, screen_signature
from pytest_agentbench.errors import DeviceError, DeviceLost, DeviceUnavailable

if TYPE_CHECKING:
    from pytest_agentbench.device.adb import Adb
    from pytest_agentbench.device.capture import ScreenCapture

#: Seconds between two dumps of a start screen that is not drawn yet (a real phone's dump takes longer itself).
START_POLL_S = 0.1
T = TypeVar("T")
Signature = tuple[tuple[object, ...], ...]


@dataclass(frozen=True)
class SettledScreen(Generic[T]):
    """The capture preflight keeps (with what its round trip read too), and how the wait went."""

    capture: ScreenCapture
    taken: T
    #: Seconds from the launch to the start of the capture kept (that capture was taken after a fixed sleep too).
    waited_s: float
    #: Dumps and captures taken, the kept one included.
    looks: int
    #: Whether two looks in a row showed every include and the same app nodes before the deadline.
    settled: bool


def app_signature(xml: str | None, package: str, includes: tuple[str, ...]) -> Signature | None:
    """The app's nodes in a dump when they show every include, else None (pure).

    Args:
        xml: A uiautomator dump (None when the device gave none).
        package: The suite's app; other windows (status bar, keyboard) do not count.
        includes: `startScreenIncludes`.

    Returns:
        `screen_signature` of the app's nodes, or None when the dump is missing, malformed or lacks an include.
    """
    if xml is None:
        return None
    try:
        nodes = [node for node in parse_hierarchy(xml) if node.package == package]
    except ValueError:
        return None
    texts = [value for node in nodes for value in (node.text, node.content_desc) if value]
    return None if missing_texts(includes, texts) else screen_signature(nodes)


def wait_for_start_screen(
    adb: Adb,
    serial: str,
    *,
    package: str,
    includes: tuple[str, ...],
    settle_s: float,
    take: Callable[[], tuple[ScreenCapture, T]],
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> SettledScreen[T]:
    """Look at the screen until it shows `includes` twice in a row, unchanged, or `settle_s` is over; then keep the last capture.

    Args:
        adb: The device layer.
        serial: The device.
        package: The suite's app.
        includes: `startScreenIncludes` (not empty).
        settle_s: The deadline, in seconds from now (`settleSeconds`).
        take: The capture preflight keeps (one round trip: before-snapshot, XML, PNG) -> (capture, what else it read).
        sleep: Waits between looks (injected by tests).
        clock: Monotonic seconds (injected by tests).

    Returns:
        The last capture `take` made, what it read, the seconds waited and the looks taken.

    Raises:
        DeviceLost: The device went away.
        DeviceUnavailable: The adb server does not know the serial.
    """
    started = clock()
    deadline = started + settle_s
    looks = 0
    seen: Signature | None = None  # the app's nodes of the last look that showed every include
    while True:
        if seen is not None or clock() >= deadline:
            waited = clock() - started
            capture, taken = take()
            looks += 1
            now = app_signature(capture.xml, package, includes)
            if (now is not None and now == seen) or clock() >= deadline:
                return SettledScreen(capture, taken, waited, looks, settled=now is not None and now == seen)
            seen = now  # changed since the last look (or lost an include): look again
            sleep(max(0.0, min(START_POLL_S, deadline - clock())))
        else:
            try:
                xml: str | None = dump_screen(adb, serial)
            except (DeviceLost, DeviceUnavailable):
                raise
            except DeviceError:
                xml = None  # no hierarchy yet ("could not get idle state"): the app is still drawing
            seen = app_signature(xml, package, includes)
            looks += 1
            if seen is None:
                sleep(max(0.0, min(START_POLL_S, deadline - clock())))
