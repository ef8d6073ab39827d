"""`wm size|density [VALUE|reset]` -> the phone's display size and density, with overrides."""

from __future__ import annotations

import re

from ..shell import Invocation
from . import command


@command("wm")
def wm(inv: Invocation) -> int:
    phone = inv.phone
    if not inv.args or inv.args[0] not in ("size", "density"):
        return inv.fail("usage: wm [size|density] [reset|VALUE]")
    what, value = inv.args[0], (inv.args[1] if len(inv.args) > 1 else None)
    if what == "size":
        if value is None:
            inv.out("Physical size: {}x{}\n".format(*phone.physical_size))
            if phone.override_size:
                inv.out("Override size: {}x{}\n".format(*phone.override_size))
            return 0
        if value == "reset":
            phone.override_size = None
            return 0
        match = re.fullmatch(r"(\d+)x(\d+)", value)
        if not match:
            return inv.fail(f"Error: bad size {value}", 255)
        phone.override_size = (int(match.group(1)), int(match.group(2)))
        return 0
    if value is None:
        inv.out(f"Physical density: {phone.physical_density}\n")
        if phone.override_density:
            inv.out(f"Override density: {phone.override_density}\n")
        return 0
    if value == "reset":
        phone.override_density = None
        return 0
    if not value.isdigit():
        return inv.fail(f"Error: bad number {value}", 255)
    phone.override_density = int(value)
    return 0
