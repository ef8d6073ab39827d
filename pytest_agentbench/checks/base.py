"""What every check kind shares: a Read (one device command), its RawRead output, the Check value, and unreadable-source sentences.

A kind's reader half says which `Read`s it needs; `checks/read.py` runs every check's reads in one
batched adb round trip and hands back `DeviceReads` (key -> `RawRead`); the kind turns those into
a JSON snapshot, and its validator turns a before- and an after-snapshot into a `Check`. Nothing
here does I/O.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_agentbench.device.shellscript import Script, sh

#: Where an app's private storage lives on user 0 (what `su 0` reads).
APP_DATA_ROOT = "/data/data"
# Seen texts longer than this are cut in a Check, so a report stays readable.
_SEEN_CHARS = 400


@dataclass(frozen=True)
class Check:
    """One verify check: what was expected, whether it held, and what was actually seen.

    Attributes:
        kind: `answer`, `screen`, `device-use`, `no-shell`, or a device check kind (`sqlite`, ...).
        expected: What the check wanted, as a sentence or the expected text.
        passed: Whether it held.
        seen: What the run showed; for a failed device check, the sentence that says why.
        name: The check's name (device checks: the suite's `name:`), None for the others.
    """

    kind: str
    expected: str
    passed: bool
    seen: str
    name: str | None = None


@dataclass(frozen=True)
class CheckContext:
    """What a validator may know besides the device: the agent's final answer (for `report`)."""

    answer: str | None = None


@dataclass(frozen=True)
class Read:
    """One single device command whose output a check needs.

    Attributes:
        key: What is read, as a stable name (`file:/data/data/PKG/shared_prefs/x.xml`); reads with
            equal keys are made once, however many checks need them.
        script: One command (no `;`, `&&`, `|` at its top level); its stderr is joined to its stdout.
        binary: The command prints base64 of a binary file (a database); the reader decodes it.
    """

    key: str
    script: Script
    binary: bool = False

    def __post_init__(self) -> None:
        if self.script.separator is not None:
            raise ValueError(f"a Read is one command, not {self.script.text!r}")


@dataclass(frozen=True)
class RawRead:
    """What one Read printed.

    Attributes:
        status: The command's exit status; None when the device's answer stopped before it ended.
        text: Its output (stdout and stderr, in order); for a binary read, the base64 text.
        data: The decoded bytes of a binary read that exited 0, else None.
    """

    status: int | None
    text: str
    data: bytes | None = None


@dataclass(frozen=True)
class DeviceReads:
    """Every read of one moment (before the run, after it, after cleanup): key -> RawRead."""

    reads: Mapping[str, RawRead] = field(default_factory=dict)
    read_at: str | None = None

    def get(self, key: str) -> RawRead | None:
        return self.reads.get(key)


# ----------------------------------------------------------------------------- reads


def app_path(package: str, relative: str) -> str:
    """An absolute path inside an app's private storage (`/data/data/PKG/relative`).

    Raises:
        ValueError: The relative path is absolute or climbs out with `..`.
    """
    if relative.startswith("/") or ".." in relative.split("/"):
        raise ValueError(f"expected a path inside the app's storage, got {relative!r}")
    return posixpath.join(APP_DATA_ROOT, package, relative)


def root_file_read(path: str, *, binary: bool = False) -> Read:
    """Read a file as root (`su 0 cat PATH`, or `su 0 base64 PATH` for a binary file)."""
    program = "base64" if binary else "cat"
    return Read(f"{'b64' if binary else 'file'}:{path}", sh("su", "0", program, path), binary=binary)


# ----------------------------------------------------------------------------- sentences


def cut(text: Any, limit: int = _SEEN_CHARS) -> str:
    """One line of at most `limit` characters (whitespace runs become one space)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def show(value: Any) -> str:
    """A value as a suite author wrote it: JSON for data, quoted strings."""
    if isinstance(value, (set, frozenset)):
        value = sorted(value, key=str)
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value, ensure_ascii=False, default=str)


# `cat: /data/data/x/a.xml: No such file or directory`: the reading program says the path is missing.
# The shell saying it (`/system/bin/sh: cat: No such file or directory`, when a su passed the
# command's words to a shell as a script name) or su saying it is su's own syntax, not a missing file.
_NO_SUCH_FILE = re.compile(r"^(?!(?:\S*/)?sh: )(?!su: )\S+: .+: No such file or directory", re.IGNORECASE | re.MULTILINE)
_NO_SU = re.compile(r"\bsu\b.*(inaccessible or not found|not found|No such file)", re.IGNORECASE)
#: A "No such file" about something other than the path, or su refusing its own arguments (the emulator's
#: `su: invalid uid/gid '-c'`): the command did not run as written.
_NOT_RUN_AS_WRITTEN = re.compile(r"No such file or directory|inaccessible or not found|\binvalid uid/gid\b", re.IGNORECASE)


def is_missing_file(raw: RawRead) -> bool:
    """The read failed because the file is not there (cat/base64 said so about the path it was given)."""
    return raw.status not in (0, None) and bool(_NO_SUCH_FILE.search(raw.text)) and not _NO_SU.search(raw.text)


def unreadable(raw: RawRead | None, what: str) -> str | None:
    """Why a read gives no usable output, as a sentence naming the source; None when it exited 0.

    Args:
        raw: The read's output (None: the batch did not contain it).
        what: The source, as the sentence should name it (`Chrome's Preferences (/data/data/...)`).

    Returns:
        None for a successful read, else one sentence.
    """
    if raw is None:
        return f"{what} was not read: the device read did not include it"
    if raw.status is None:
        return f"{what} could not be read: the device's answer stopped before this read finished"
    if raw.status == 0:
        return None
    if _NO_SU.search(raw.text) or (raw.status == 127 and re.search(r"\bsu\b", raw.text)):
        return (f"{what} needs root and this device has no `su` (a user build?): use a userdebug or eng "
                "build, such as an emulator image without Google Play")
    if "not allowed to su" in raw.text:
        return f"{what} needs root and `su` refused: {cut(raw.text, 200)}"
    if _NO_SUCH_FILE.search(raw.text):
        return f"{what} does not exist"
    if _NOT_RUN_AS_WRITTEN.search(raw.text):
        return (f"{what} could not be read: the root command did not run as written, so this says nothing about "
                f"the file (su's own syntax? the device's su form is detected as the fingerprint's suForm): "
                f"{cut(raw.text, 200)}")
    if "Permission denied" in raw.text:
        return f"{what} could not be read: permission denied ({cut(raw.text, 200)})"
    return f"{what} could not be read (exit {raw.status}): {cut(raw.text, 200) or 'no output'}"


def failed(kind: str, name: str, expected: str, why: str) -> Check:
    """A failed check whose `seen` is the sentence that says why."""
    return Check(kind, expected, False, cut(why), name)


def passed(kind: str, name: str, expected: str, seen: str) -> Check:
    return Check(kind, expected, True, cut(seen), name)


def snapshot_error(message: str) -> dict[str, Any]:
    """The snapshot of a source that could not be read: validators fail with this sentence."""
    return {"error": message}
