"""`input tap|text|keyevent|swipe|press` -> taps, typing and keys on the phone's screen."""

from __future__ import annotations

from ..phone import KEYCODES
from ..shell import Invocation
from . import command

_SOURCES = {"touchscreen", "touchpad", "keyboard", "mouse", "dpad", "gamepad", "stylus", "trackball", "joystick",
            "touchnavigation", "rotaryencoder"}
# Below this distance a swipe is a tap (or a long press), as Android's touch slop decides.
_TOUCH_SLOP_PX = 24


@command("input")
def input_(inv: Invocation) -> int:
    args = list(inv.args)
    if args and args[0] in _SOURCES:
        args = args[1:]
    if args[:1] == ["-d"]:
        args = args[2:]
    if not args:
        return inv.fail("Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]", 255)
    verb, rest = args[0], args[1:]
    phone = inv.phone
    try:
        if verb == "tap":
            x, y = _numbers(rest, 2)
            phone.tap(int(x), int(y))
        elif verb in ("swipe", "draganddrop"):
            x1, y1, x2, y2 = _numbers(rest[:4], 4)
            if abs(x2 - x1) + abs(y2 - y1) <= _TOUCH_SLOP_PX:
                phone.tap(int(x1), int(y1))
            else:
                phone.swipe(int(x1), int(y1), int(x2), int(y2))
        elif verb == "text":
            if not rest:
                raise ValueError("input text needs a string")
            phone.type_text(rest[0].replace("%s", " "))
        elif verb == "keyevent":
            codes = [a for a in rest if a not in ("--longpress", "--doubletap", "--delay")]
            if not codes:
                raise ValueError("input keyevent needs a key code")
            for name in codes:
                phone.key(keycode(name))
        elif verb in ("press", "roll", "motionevent", "keycombination"):
            pass
        else:
            return inv.fail(f"Error: Unknown command: {verb}", 255)
    except ValueError as error:
        return inv.fail(f"Error: {error}", 255)
    return 0


def keycode(name: str) -> int:
    """A key code from `KEYCODE_BACK`, `BACK` or `4`; raises ValueError for an unknown name."""
    if name.isdigit():
        return int(name)
    key = name if name.startswith("KEYCODE_") else f"KEYCODE_{name}"
    if key in KEYCODES:
        return KEYCODES[key]
    if len(key) == len("KEYCODE_") + 1 and key[-1].isalnum():
        # Letters and digits type themselves; they only matter to a focused text field.
        return 0
    raise ValueError(f"Unknown keycode: {name}")


def _numbers(values: list[str], count: int) -> list[float]:
    if len(values) < count:
        raise ValueError(f"expected {count} coordinates, got {len(values)}")
    try:
        return [float(v) for v in values[:count]]
    except ValueError as error:
        raise ValueError(f"bad coordinate in {' '.join(values)}") from error
