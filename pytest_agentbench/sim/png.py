"""Laid-out screen nodes -> pixels (boxes + a 5x7 bitmap font) -> a PNG file, so screenshots show the screen's texts."""

from __future__ import annotations

import struct
import threading
import zlib
from collections import OrderedDict

from .ui import UiNode

# The classic 5x7 font, printable ASCII from 0x20: five column bytes per glyph, bit 0 is the top row.
_FONT_HEX = (
    "0000000000 00005f0000 0007000700 147f147f14 242a7f2a12 2313086462 3649552250 0005030000 001c224100"
    " 0041221c00 082a1c2a08 08083e0808 0050300000 0808080808 0060600000 2010080402 3e5149453e 00427f4000"
    " 4261514946 2141454b31 1814127f10 2745454539 3c4a494930 0171090503 3649494936 064949291e 0036360000"
    " 0056360000 0814224100 1414141414 0041221408 0201510906 324979413e 7e1111117e 7f49494936 3e41414122"
    " 7f4141221c 7f49494941 7f09090101 3e41415132 7f0808087f 00417f4100 2040413f01 7f08142241 7f40404040"
    " 7f0204027f 7f0408107f 3e4141413e 7f09090906 3e4151215e 7f09192946 4649494931 01017f0101 3f4040403f"
    " 1f2040201f 7f2018207f 6314081463 0304780403 6151494543 007f414100 0204081020 0041417f00 0402010204"
    " 4040404040 0001020400 2054545478 7f48444438 3844444420 384444487f 3854545418 087e090102 0c5252523e"
    " 7f08040478 00447d4000 2040443d00 7f10284400 00417f4000 7c04180478 7c08040478 3844444438 7c14141408"
    " 081414187c 7c08040408 4854545420 043f444020 3c4040207c 1c2040201c 3c4030403c 4428102844 0c5050503c"
    " 4464544c44 0008364100 00007f0000 0041360800 0201020402"
)
_GLYPHS = [bytes.fromhex(glyph) for glyph in _FONT_HEX.split()]
_FALLBACK = bytes.fromhex("7f4141417f")  # a box for characters the font does not have

_LIGHT = {"background": (255, 255, 255), "text": (28, 27, 31), "summary": (96, 96, 104), "statusbar": (32, 33, 36),
          "statusbar_text": (255, 255, 255), "button": (103, 80, 164), "button_text": (255, 255, 255),
          "field": (120, 120, 128), "switch_on": (103, 80, 164), "switch_off": (180, 180, 186),
          "disabled": (200, 200, 204), "divider": (230, 230, 234), "icon": (232, 222, 248)}
_DARK = {**_LIGHT, "background": (28, 27, 31), "text": (230, 225, 229), "summary": (180, 180, 188),
         "divider": (60, 60, 66), "icon": (74, 68, 88)}


class Canvas:
    """An RGB pixel buffer with the few drawing operations a screen needs."""

    def __init__(self, width: int, height: int, color: tuple[int, int, int]) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(color) * (width * height))

    def rect(self, left: int, top: int, right: int, bottom: int, color: tuple[int, int, int]) -> None:
        left, right = max(0, left), min(self.width, right)
        top, bottom = max(0, top), min(self.height, bottom)
        if left >= right:
            return
        run = bytes(color) * (right - left)
        for y in range(top, bottom):
            start = (y * self.width + left) * 3
            self.pixels[start:start + len(run)] = run

    def outline(self, left: int, top: int, right: int, bottom: int, color: tuple[int, int, int], thickness: int = 3) -> None:
        self.rect(left, top, right, top + thickness, color)
        self.rect(left, bottom - thickness, right, bottom, color)
        self.rect(left, top, left + thickness, bottom, color)
        self.rect(right - thickness, top, right, bottom, color)

    def text(self, x: int, y: int, text: str, color: tuple[int, int, int], scale: int, max_width: int) -> None:
        """Draw text with its top-left at (x, y); characters past max_width are cut, as an ellipsis would."""
        advance = 6 * scale
        for index, char in enumerate(text):
            left = x + index * advance
            if left + 5 * scale > x + max_width:
                break
            code = ord(char)
            glyph = _GLYPHS[code - 32] if 32 <= code < 32 + len(_GLYPHS) else _FALLBACK
            for column, bits in enumerate(glyph):
                for row in range(7):
                    if bits >> row & 1:
                        px = left + column * scale
                        py = y + row * scale
                        self.rect(px, py, px + scale, py + scale, color)


def render_rgb(roots: list[UiNode], width: int, height: int, *, night: bool = False) -> bytes:
    """Paint the window roots (first one at the bottom) into a width*height*3 RGB buffer."""
    palette = _DARK if night else _LIGHT
    canvas = Canvas(width, height, palette["background"])
    for root in roots:
        for node in root.walk():
            _paint(canvas, node, palette)
    return bytes(canvas.pixels)


#: The last screens encoded, by what painting them reads: preflight captures each run's start screen
#: and a proof's scenarios start on the same one, so most captures repeat a recent screen (a PNG is
#: ~25 KB; painting and compressing one costs ~0.1 s of a shared CPU).
_RECENT_PNGS: OrderedDict[tuple[object, ...], bytes] = OrderedDict()
_RECENT_LIMIT = 16
_RECENT_LOCK = threading.Lock()


def _painted(roots: list[UiNode], width: int, height: int, night: bool) -> tuple[object, ...]:
    """Everything `_paint` reads, in painting order: two screens with the same key have the same pixels."""
    return (width, height, night, tuple((node.style, node.cls, node.bounds, node.text, node.content_desc, node.enabled,
                                         node.checked, node.focused) for root in roots for node in root.walk()))


def render_png(roots: list[UiNode], width: int, height: int, *, night: bool = False) -> bytes:
    """The screen as a PNG (8-bit RGB, no interlace), the format `screencap -p` writes; a recent screen's bytes are reused."""
    key = _painted(roots, width, height, night)
    with _RECENT_LOCK:
        if key in _RECENT_PNGS:
            _RECENT_PNGS.move_to_end(key)
            return _RECENT_PNGS[key]
    data = encode_png(render_rgb(roots, width, height, night=night), width, height)
    with _RECENT_LOCK:
        _RECENT_PNGS[key] = data
        while len(_RECENT_PNGS) > _RECENT_LIMIT:
            _RECENT_PNGS.popitem(last=False)
    return data


def encode_png(rgb: bytes, width: int, height: int) -> bytes:
    """Encode an RGB buffer as PNG: signature, IHDR, one IDAT, IEND."""
    stride = width * 3
    raw = bytearray()
    for y in range(height):
        raw.append(0)  # filter type None for every scanline
        raw.extend(rgb[y * stride:(y + 1) * stride])

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(raw), 6)) + chunk(b"IEND", b"")


def _paint(canvas: Canvas, node: UiNode, palette: dict[str, tuple[int, int, int]]) -> None:
    left, top, right, bottom = node.bounds
    style = node.style
    text_color = palette["text"] if node.enabled else palette["disabled"]
    scale = 4
    if style == "statusbar":
        if node.cls == "android.widget.FrameLayout":
            canvas.rect(left, top, right, bottom, palette["statusbar"])
        text_color, scale = palette["statusbar_text"], 4
        if not node.text and node.content_desc:
            canvas.rect(left + 10, top + 18, right - 10, bottom - 18, palette["statusbar_text"])
    elif style == "button":
        canvas.rect(left, top, right, bottom, palette["button"] if node.enabled else palette["disabled"])
        text_color = palette["button_text"]
    elif style in ("switch_on", "switch_off"):
        canvas.rect(left, top, right, bottom, palette[style])
        knob = (right - (bottom - top), top) if style == "switch_on" else (left, top)
        canvas.rect(knob[0] + 6, knob[1] + 6, knob[0] + (bottom - top) - 6, bottom - 6, palette["background"])
    elif style == "image":
        canvas.rect(left, top, right, bottom, palette["icon"])
        canvas.outline(left, top, right, bottom, palette["button"])
    elif style == "field":
        canvas.outline(left, top, right, bottom, palette["button"] if node.focused else palette["field"])
    elif style == "row":
        canvas.rect(left, bottom - 2, right, bottom, palette["divider"])
    elif style == "radio":
        size = min(60, bottom - top)
        cy = (top + bottom) // 2
        canvas.outline(left, cy - size // 2, left + size, cy + size // 2, palette["button"], thickness=6)
        if node.checked:
            canvas.rect(left + 15, cy - size // 2 + 15, left + size - 15, cy + size // 2 - 15, palette["button"])
        left += size + 30
    elif style == "icon":
        canvas.rect(left + 50, top + 20, right - 50, top + 160, palette["icon"])
        if node.text:
            canvas.text(left + 58, top + 62, node.text[:1], palette["button"], 8, right - left - 100)
        top = top + 170
        scale = 3
    elif style == "title":
        scale = 7
    elif style == "summary":
        text_color, scale = palette["summary"], 3
    if not node.text:
        return
    text_height = 7 * scale
    available = max(0, right - left - 24)
    text_width = min(available, len(node.text) * 6 * scale)
    if style in ("button", "icon"):
        x = left + (right - left - text_width) // 2
    else:
        x = left + 12
    y = top + max(0, (bottom - top - text_height) // 2) if style != "icon" else top
    canvas.text(x, y, node.text, text_color, scale, available)
