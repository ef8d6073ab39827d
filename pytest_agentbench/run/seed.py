"""A suite's seed steps -> the files to stage on the device and the commands that seed it, for preflight's reset round trip.

Every seed is an adb command a real device runs too: an SMS is `su 0 content insert --uri
content://sms/inbox ...` (only the default SMS app and root may write SMS, so the shell's insert
would be dropped), a photo is a PNG generated here, pushed to the staging directory with the other
staged files, copied to /sdcard/Pictures and scanned into MediaStore with the media scanner's
broadcast, and a job is `cmd jobscheduler timeout` (every running job stopped), `am force-stop` of
its app and `cmd jobscheduler run -f`, so it is the only job running and its app's process starts
for it. The seeds run after the app's data is cleared and before it is launched, so the app
starts on them (Messages imports the new threads into its bugle_db on start).
"""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_agentbench.device.shellscript import Script, sh
from pytest_agentbench.checks.seed import PICTURES_DIR, JobSeed, PhotoSeed, SeedStep, SmsSeed

SMS_INBOX_URI = "content://sms/inbox"
SCAN_ACTION = "android.intent.action.MEDIA_SCANNER_SCAN_FILE"
#: Seeded SMS are spaced this far apart (ms), oldest first, so a thread list has a stable order.
SMS_SPACING_MS = 60_000


def photo_png(width: int, height: int) -> bytes:
    """A real, small PNG of width x height: a smooth colour gradient (8-bit RGB, each row filtered with Sub).

    Deterministic, so a seeded photo has the same bytes on every run and machine.
    """
    if not (0 < width <= 65535 and 0 < height <= 65535):
        raise ValueError(f"a PNG needs a size from 1x1 to 65535x65535, got {width}x{height}")
    rows = []
    for y in range(height):
        blue = (y * 255) // max(1, height - 1)
        # Sub filter (1): each byte after the first pixel is the difference to its left neighbour, so
        # a horizontal gradient becomes a run of tiny constants that zlib squeezes to almost nothing.
        first = bytes((0, 64, blue))
        step = bytes(((255 // max(1, width - 1)) if width > 1 else 0, 0, 0))
        rows.append(b"\x01" + first + step * (width - 1))
    raw = b"".join(rows)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


@dataclass(frozen=True)
class SeedPlan:
    """What preflight does for a suite's seeds: files to push first, then one command per seed (a reset-script step)."""

    files: tuple[tuple[str, bytes], ...]
    steps: tuple[tuple[str, Script], ...]


def staged_photo_path(staging_dir: str, seed: PhotoSeed) -> str:
    return f"{staging_dir}/seed-{seed.name}"


def sms_command(seed: SmsSeed, date_ms: int) -> Script:
    """`su 0 content insert --uri content://sms/inbox ...`: the SMS a phone receives, as root."""
    read = 1 if seed.read else 0
    return sh("su", "0", "content", "insert", "--uri", SMS_INBOX_URI,
              "--bind", f"address:s:{bind_text(seed.address)}", "--bind", f"body:s:{bind_text(seed.body)}",
              "--bind", f"date:l:{date_ms}", "--bind", f"read:i:{read}", "--bind", f"seen:i:{read}")


def bind_text(value: str) -> str:
    """A `--bind` value with its colons escaped, as `content` splits COLUMN:TYPE:VALUE at every unescaped colon."""
    return value.replace(":", "\\:")


def photo_command(seed: PhotoSeed, staged: str) -> Script:
    """Copy the staged PNG into /sdcard/Pictures, remove the staged copy, and have the media scanner index it."""
    return Script.join([
        sh("mkdir", "-p", PICTURES_DIR),
        sh("cp", staged, seed.path),
        sh("rm", "-f", staged),
        sh("am", "broadcast", "-a", SCAN_ACTION, "-d", f"file://{seed.path}").quiet(),
    ], "&&")


def job_command(seed: JobSeed) -> Script:
    """Stop every running job, stop the app, then run its job: the one job running, its process started for it."""
    return Script.join([
        sh("cmd", "jobscheduler", "timeout").quiet(),
        sh("am", "force-stop", seed.package),
        sh("cmd", "jobscheduler", "run", "-f", seed.package, str(seed.job_id)),
    ], "&&")


def plan_seeds(seeds: Sequence[SeedStep], *, staging_dir: str, now_ms: int | None = None) -> SeedPlan:
    """The files and commands for a suite's seeds, in the suite's order.

    Args:
        seeds: The suite's `preflight.seed` steps.
        staging_dir: The world-readable device directory files are pushed to first.
        now_ms: The host's time (default: now); the n seeded SMS get dates n, n-1, ... minutes before it.

    Returns:
        The plan (empty when there are no seeds).
    """
    files: list[tuple[str, bytes]] = []
    steps: list[tuple[str, Script]] = []
    if now_ms is None:
        now_ms = int(time.time() * 1000)
    remaining = sum(isinstance(seed, SmsSeed) for seed in seeds)
    for index, seed in enumerate(seeds, start=1):
        label = f"seed {index} {seed.describe()}"
        if isinstance(seed, SmsSeed):
            steps.append((label, sms_command(seed, now_ms - remaining * SMS_SPACING_MS)))
            remaining -= 1
        elif isinstance(seed, JobSeed):
            steps.append((label, job_command(seed)))
        else:
            staged = staged_photo_path(staging_dir, seed)
            files.append((staged, photo_png(seed.width, seed.height)))
            steps.append((label, photo_command(seed, staged)))
    return SeedPlan(tuple(files), tuple(steps))
