"""getprop/setprop -> the phone's system properties."""

from __future__ import annotations

from ..shell import Invocation
from ..system.clock import is_known_zone
from ..users import ROOT
from . import command


@command("getprop")
def getprop(inv: Invocation) -> int:
    props = inv.phone.props
    if not inv.args:
        inv.out("".join(f"[{key}]: [{props[key]}]\n" for key in sorted(props)))
        return 0
    default = inv.args[1] if len(inv.args) > 1 else ""
    inv.out(props.get(inv.args[0], default) + "\n")
    return 0


@command("setprop")
def setprop(inv: Invocation) -> int:
    if len(inv.args) != 2:
        return inv.fail("usage: setprop NAME VALUE")
    name, value = inv.args
    failed = f"Failed to set property '{name}' to '{value}'.\nSee dmesg for error reason."
    # ro.* is set once at boot; other system properties need root, except the debug/log ones the shell owns.
    if name.startswith("ro.") and name in inv.phone.props:
        return inv.fail(failed)
    if inv.user != ROOT and not name.startswith(_SHELL_WRITABLE):
        return inv.fail(failed)
    if name == "persist.sys.timezone":
        if not is_known_zone(value):
            return inv.fail(failed)
        inv.phone.set_timezone(value)
        return 0
    inv.phone.props[name] = value
    return 0


_SHELL_WRITABLE = ("debug.", "log.tag", "persist.log.tag", "persist.debug.", "dalvik.vm.", "service.adb.tcp")
