"""One adb round trip -> what the screen shows: the uiautomator XML and a `screencap -p` PNG, split on a marker.

Preflight's end and the post-run read each save the screen twice, as a tree (`*.xml`, the
oracle reads it) and as a picture (`*.png`, people and the HTML report look at it). Both come
from one `exec-out`: `uiautomator dump /dev/tty; echo MARK; screencap -p`. exec-out has no pty,
so the PNG's bytes arrive untouched after the marker line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_agentbench.device.shellscript import Script, sh
from pytest_agentbench.device.uiautomator import extract_hierarchy
from pytest_agentbench.errors import DeviceError

if TYPE_CHECKING:
    from pytest_agentbench.device.adb import Adb

#: The line between the hierarchy and the PNG.
CAPTURE_MARK = "@@agentbench-screencap@@"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_IEND = b"IEND\xaeB`\x82"
_HIERARCHY_END = b"</hierarchy>"


@dataclass(frozen=True)
class ScreenCapture:
    """What one capture got: the hierarchy XML and the PNG, each None with the reason in `problems` when missing."""

    xml: str | None
    png: bytes | None
    problems: tuple[str, ...] = ()


def capture_script(*, hierarchy: bool = True) -> Script:
    """The capture command: the dump (unless `hierarchy` is False), the marker, then `screencap -p`."""
    parts = [sh("uiautomator", "dump", "/dev/tty")] if hierarchy else []
    return Script.join([*parts, sh("echo", CAPTURE_MARK), sh("screencap", "-p")], ";")


def png_problem(data: bytes) -> str | None:
    """Why `data` is not a whole PNG (signature first, IEND chunk last), or None when it is one."""
    if not data:
        return "screencap printed nothing"
    if not data.startswith(PNG_SIGNATURE):
        return f"screencap printed no PNG: {data[:80]!r}"
    if not data.rstrip(b"\r\n").endswith(_IEND):
        return f"the PNG from screencap is cut off after {len(data)} bytes"
    return None


def split_capture(raw: bytes, *, hierarchy: bool = True) -> ScreenCapture:
    """Cut the output of `capture_script` into the XML and the PNG (pure).

    The marker is looked for after the hierarchy's end tag: an app may show the marker's text
    (an agent can type anything), but inside the XML it sits in an attribute, before the one
    literal `</hierarchy>`.

    Args:
        raw: The command's stdout bytes.
        hierarchy: Whether the command dumped the hierarchy first.

    Returns:
        The capture; a missing or broken part is None and its reason is in `problems`.
    """
    mark = CAPTURE_MARK.encode() + b"\n"
    end = raw.find(_HIERARCHY_END)
    at = raw.find(mark, end + len(_HIERARCHY_END) if end >= 0 else 0)
    problems: list[str] = []
    if at < 0:
        return ScreenCapture(None, None, ("the capture printed no marker line: the device shell did not run it",))
    xml = None
    if hierarchy:
        try:
            xml = extract_hierarchy(raw[:at])
        except ValueError as exc:
            problems.append(str(exc))
    png: bytes | None = raw[at + len(mark):]
    # A device shell with a pty (not exec-out) would have turned \n into \r\n; exec-out does not.
    problem = png_problem(png)
    if problem:
        problems.append(problem)
        png = None
    return ScreenCapture(xml, png, tuple(problems))


def capture_screen(adb: Adb, serial: str, *, hierarchy: bool = True, timeout_s: float = 30) -> ScreenCapture:
    """The screen's XML and PNG in one round trip (`exec-out`).

    Args:
        adb: The device layer.
        serial: The device.
        hierarchy: Dump the uiautomator hierarchy too (False: the PNG only).
        timeout_s: Seconds before the device counts as lost.

    Returns:
        The capture (see `split_capture`); a part the device could not give is None.

    Raises:
        DeviceLost: The device went away.
        DeviceUnavailable: The adb server does not know the serial.
    """
    raw = adb.exec_out(serial, capture_script(hierarchy=hierarchy), timeout_s=timeout_s)
    return split_capture(raw, hierarchy=hierarchy)


def hierarchy_of(capture: ScreenCapture, serial: str) -> str:
    """The capture's XML, or the DeviceError `dump_screen` raises when uiautomator printed none."""
    if capture.xml is None:
        raise DeviceError(f"{serial}: {capture.problems[0] if capture.problems else 'no hierarchy'}",
                          command="uiautomator dump /dev/tty")
    return capture.xml
