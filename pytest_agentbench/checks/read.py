"""Every check's Reads -> one batched adb round trip -> DeviceReads; and DeviceReads <-> the run directory (device-<label>.json, device-state/).

The batch is one shell script: each read is bracketed by markers that carry a random nonce (so a
file's content cannot fake them), runs with its stderr joined to its stdout, and ends with its
exit status. A binary file (a database) comes back base64-encoded in the same output, so the
before- and the after-read each cost one round trip however many checks a suite has. Another
command (the screen capture) can follow the batch in the same round trip.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.checks.base import DeviceReads, RawRead, Read
from pytest_agentbench.device.rootshell import known_su_form, rooted
from pytest_agentbench.device.shellscript import Script, echo_status, sh

if TYPE_CHECKING:
    from pytest_agentbench.device.adb import Adb

MARK = "@@agentbench-read@@"
#: The saved reads of a run directory: device-before.json, device-after.json, device-cleanup.json.
READS_FILE = "device-{label}.json"
STATE_DIR = "device-state"
READ_TIMEOUT_S = 120.0


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


# ----------------------------------------------------------------------------- pure: script and output


def batch_script(reads: Sequence[Read], nonce: str) -> Script:
    """One script that makes every read, each between `MARK<nonce> begin i` and `MARK<nonce> end i STATUS`.

    Args:
        reads: The reads, each one command.
        nonce: Random hex; the markers carry it, so no output can imitate them.

    Returns:
        The script (its parts joined with `;`: a failing read never stops the next one).
    """
    if not reads:
        raise ValueError("a batch needs at least one read")
    if not re.fullmatch(r"[0-9a-f]+", nonce):
        raise ValueError(f"the nonce must be hex digits, got {nonce!r}")
    parts: list[Script] = []
    for index, read in enumerate(reads):
        parts += [
            sh("echo", f"{MARK}{nonce} begin {index}"),
            read.script.merge_stderr(),
            # Right after the output, newline or not, so the output is exactly what comes before it.
            echo_status(f"{MARK}{nonce} end {index} "),
        ]
    return Script.join(parts, ";")


def split_batch(output: str, reads: Sequence[Read], nonce: str) -> dict[str, RawRead]:
    """Cut a batch's output into one RawRead per read key.

    A read whose begin marker is missing, or whose end marker never came (the device's answer
    stopped), gets status None. A binary read that exited 0 carries its decoded bytes.
    """
    found: dict[str, RawRead] = {}
    for index, read in enumerate(reads):
        begin = re.compile(re.escape(f"{MARK}{nonce} begin {index}") + r"\r?\n").search(output)
        if begin is None:
            found[read.key] = RawRead(None, "")
            continue
        end = re.compile(re.escape(f"{MARK}{nonce} end {index} ") + r"(\d+)").search(output, begin.end())
        if end is None:
            found[read.key] = RawRead(None, output[begin.end():])
            continue
        text, status = output[begin.end():end.start()], int(end.group(1))
        found[read.key] = _decoded(read, text, status)
    return found


def _decoded(read: Read, text: str, status: int) -> RawRead:
    if not read.binary or status != 0:
        return RawRead(status, text)
    try:
        return RawRead(status, "", base64.b64decode("".join(text.split()), validate=True))
    except (binascii.Error, ValueError) as exc:
        return RawRead(1, f"the device's base64 output did not decode ({exc}): {text[:200]}")


# ----------------------------------------------------------------------------- device


@dataclass(frozen=True)
class BatchResult:
    """The reads, and the untouched bytes the command after the batch printed (the screen capture)."""

    reads: DeviceReads
    then_output: bytes = b""


def read_device(
    adb: Adb,
    serial: str,
    reads: Sequence[Read],
    *,
    then: Script | None = None,
    timeout_s: float = READ_TIMEOUT_S,
    nonce: str | None = None,
    now: Callable[[], datetime] = utc_now,
) -> BatchResult:
    """Make every read in one adb round trip, optionally followed by another command in the same trip.

    Args:
        adb: The device layer.
        serial: The device.
        reads: The reads (deduplicated by key by the caller).
        then: A command to run after the reads in the same round trip (the screen capture, whose
            PNG must reach the caller byte for byte); its output is returned as `then_output`.
        timeout_s: Seconds for the whole trip.
        nonce: The markers' nonce (random when None; tests pass one).
        now: The clock that stamps the reads.

    Returns:
        The reads and the following command's output.

    Raises:
        DeviceLost: The device went away.
    """
    nonce = nonce or secrets.token_hex(6)
    read_at = now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if not reads:
        raw = adb.exec_out(serial, then, timeout_s=timeout_s) if then is not None else b""
        return BatchResult(DeviceReads({}, read_at), raw)
    # Root reads are written `su 0 CMD`; the device's own su form (detected once) replaces it.
    script = rooted(batch_script(reads, nonce), known_su_form(adb, serial))
    if then is not None:
        script = Script.join([script, then], ";")
    raw = adb.exec_out(serial, script, timeout_s=timeout_s)
    # The batch is text; what follows its last end marker (a PNG) is cut off as bytes, untouched.
    last = re.compile(re.escape(f"{MARK}{nonce} end {len(reads) - 1} ").encode() + rb"\d+\r?\n").search(raw)
    cut_at = last.end() if last is not None else len(raw)
    text = raw[:cut_at].decode("utf-8", "replace")
    return BatchResult(DeviceReads(split_batch(text, reads, nonce), read_at), raw[cut_at:])


# ----------------------------------------------------------------------------- run directory


def _file_name(index: int, key: str) -> str:
    tail = key.rsplit("/", 1)[-1] or "read"
    return f"{index:02d}-{re.sub(r'[^A-Za-z0-9._-]+', '_', tail)[:80]}"


def save_reads(reads: DeviceReads, run_dir: Path, label: str) -> Path:
    """Write `device-<label>.json`; binary reads go to `device-state/<label>/` with their SHA-256.

    Returns:
        The JSON file's path.
    """
    entries: dict[str, Any] = {}
    for index, (key, raw) in enumerate(reads.reads.items()):
        if raw.data is not None:
            relative = Path(STATE_DIR) / label / _file_name(index, key)
            (run_dir / relative).parent.mkdir(parents=True, exist_ok=True)
            (run_dir / relative).write_bytes(raw.data)
            entries[key] = {"status": raw.status, "file": relative.as_posix(), "bytes": len(raw.data),
                            "sha256": hashlib.sha256(raw.data).hexdigest()}
        else:
            entries[key] = {"status": raw.status, "text": raw.text}
    path = run_dir / READS_FILE.format(label=label)
    path.write_text(json.dumps({"readAt": reads.read_at, "reads": entries}, indent=2, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    return path


def load_reads(run_dir: Path, label: str) -> DeviceReads | None:
    """Read `device-<label>.json` back (None when the run saved none).

    A saved binary file that is missing or does not match its recorded SHA-256 becomes a failed
    read with that sentence, so a re-audit never judges other bytes than the run did.
    """
    path = run_dir / READS_FILE.format(label=label)
    if not path.is_file():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        # An unreadable save judges as "not read": every check that needs it fails with a sentence.
        return DeviceReads({}, None)
    reads: dict[str, RawRead] = {}
    for key, entry in (document.get("reads") or {}).items():
        reads[key] = _loaded(run_dir, entry)
    return DeviceReads(reads, document.get("readAt"))


def _loaded(run_dir: Path, entry: Mapping[str, Any]) -> RawRead:
    status = entry.get("status")
    if "file" not in entry:
        return RawRead(status, str(entry.get("text", "")))
    target = run_dir / entry["file"]
    try:
        data = target.read_bytes()
    except OSError:
        return RawRead(1, f"the saved copy {entry['file']} is missing from the run directory")
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        return RawRead(1, f"the saved copy {entry['file']} does not match the SHA-256 recorded with it")
    return RawRead(status, "", data)
