"""Image sizes from file headers (PNG, JPEG, GIF, WebP), and synthetic photos as real PNG files of a given size."""

from __future__ import annotations

import struct

from .png import encode_png


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) read from the file's header, as MediaProvider's scanner does; None for anything else."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return struct.unpack("<HH", data[6:10])
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and data[12:16] == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    index = 2
    while index + 9 < len(data):
        if data[index] != 0xFF:
            return None
        marker = data[index + 1]
        length = struct.unpack(">H", data[index + 2:index + 4])[0]
        # SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size.
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[index + 5:index + 9])
            return width, height
        index += 2 + length
    return None


MIME_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
              ".webp": "image/webp"}


def photo_png(width: int, height: int, *, top: int = 0, full_height: int | None = None) -> bytes:
    """A landscape "photo" (sky, sun band, hills) as a PNG of exactly width x height.

    Colour depends on the row only, so a crop is the same picture: `top` is the crop's first row in
    the original and `full_height` the original's height.
    """
    if width < 1 or height < 1:
        raise ValueError(f"a photo needs a positive size, not {width}x{height}")
    total = full_height or height
    rows = bytearray()
    for y in range(top, top + height):
        fraction = y / max(1, total - 1)
        if fraction < 0.55:  # sky, lighter towards the horizon
            color = (70 + int(120 * fraction), 130 + int(90 * fraction), 220)
        elif fraction < 0.6:  # the sun's band
            color = (250, 190, 90)
        else:  # hills, darker towards the bottom
            color = (60, 150 - int(80 * (fraction - 0.6)), 70)
        rows += bytes(color) * width
    return encode_png(bytes(rows), width, height)
