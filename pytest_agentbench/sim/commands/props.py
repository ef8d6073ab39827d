"""getprop/setprop -> the phone's system properties."""

from __future__ import annotations

from ..shell import Invocation
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
    # Only root may change ro.* on a user-debug build without `adb root`.
    if name.startswith("ro.") and name in inv.phone.props:
        return inv.fail(f"Failed to set property '{name}' to '{value}'.\nSee dmesg for error reason.")
    inv.phone.props[name] = value
    return 0
