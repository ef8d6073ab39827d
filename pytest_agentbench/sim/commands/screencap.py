"""`screencap [-p] [FILE]` -> a PNG (or raw RGBA) image of the current screen."""

from __future__ import annotations

import struct

from ..png import render_png, render_rgb
from ..shell import Invocation
from . import command


@command("screencap")
def screencap(inv: Invocation) -> int:
    args = list(inv.args)
    as_png = "-p" in args
    files = []
    i = 0
    while i < len(args):
        if args[i] in ("-d", "-a"):
            i += 2
            continue
        if not args[i].startswith("-"):
            files.append(args[i])
        i += 1
    target = files[0] if files else None
    if target and target.endswith(".png"):
        as_png = True
    phone = inv.phone
    roots = phone.render()
    width, height = phone.size
    if as_png:
        data = render_png(roots, width, height, night=phone.night_mode)
    else:
        # Raw: width, height, pixel format (1 = RGBA_8888), dataspace (0 = unknown), then pixels.
        rgb = render_rgb(roots, width, height, night=phone.night_mode)
        rgba = bytearray(width * height * 4)
        rgba[0::4], rgba[1::4], rgba[2::4] = rgb[0::3], rgb[1::3], rgb[2::3]
        rgba[3::4] = b"\xff" * (width * height)
        data = struct.pack("<IIII", width, height, 1, 0) + bytes(rgba)
    if target is None:
        inv.out(data)
        return 0
    try:
        phone.fs.write(inv.path(target), data, user=inv.user, make_parents=False)
    except OSError:
        # screencap keeps stderr empty (clients merge streams); failures only show in the exit status.
        return 1
    return 0
