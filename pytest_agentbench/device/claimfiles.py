"""A device serial + a claim root -> AutoMobile-compatible lock files: their paths, bodies, holders, and taking and releasing them.

The mechanics only (what a file says, who holds it, linking it into place, reclaiming a stale
one); `claims.py` holds the harness's policy on top. Layout and body are described there.
"""

from __future__ import annotations

import base64
import datetime as _dt
import fcntl
import itertools
import json
import os
import secrets
import stat
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pytest_agentbench.errors import DeviceBusy, DeviceError

CLAIM_ROOT_ENV = "AUTOMOBILE_ADB_SERVER_COORDINATION_DIR"
LEGACY_CLAIM_ROOT_ENV = "AUTO_MOBILE_ADB_SERVER_COORDINATION_DIR"
COORDINATION_DIR_ENV = "AUTOMOBILE_COORDINATION_DIR"
LEGACY_COORDINATION_DIR_ENV = "AUTO_MOBILE_COORDINATION_DIR"
CLAIM_SUBDIR = "device-allocations"
CTRL_PROXY_LEASE_SUBDIR = "ctrlproxy-forwards"
BENCHMARK_LOCK_SUFFIX = ".agent-benchmark"

_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
_SECURE_DIR_MODE = 0o700
_SECURE_FILE_MODE = 0o600
# A claim can be released or reclaimed between a failed link() and the read that follows; a few
# rounds settle every realistic race, and a bound keeps a pathological loop from spinning forever.
_MAX_ACQUIRE_ROUNDS = 8

# Temp and stale-marker names must be unique per call even across threads of one process.
_name_counter = itertools.count(1)
_name_lock = threading.Lock()

HolderKind = Literal["allocation claim", "legacy allocation claim", "CtrlProxy forwarding lease", "benchmark lock"]


def _unique_suffix() -> str:
    with _name_lock:
        return f"{os.getpid()}.{next(_name_counter)}"


def encode_serial(serial: str) -> str:
    """Turn a device serial into the file-name-safe key AutoMobile uses.

    Args:
        serial: The adb serial (`emulator-5554`, `127.0.0.1:40001`).

    Returns:
        base64url of the UTF-8 serial without `=` padding, as Node's `Buffer.toString("base64url")`.
    """
    return base64.urlsafe_b64encode(serial.encode("utf-8")).decode("ascii").rstrip("=")


def scope_for_endpoint(host: str, port: int | str) -> str:
    """Name the claim scope of an adb server endpoint.

    Args:
        host: The adb server host; every loopback spelling shares one scope.
        port: The adb server port.

    Returns:
        `tcp-<host>-<port>` with characters outside `[A-Za-z0-9.-]` replaced by `_`.
    """
    canonical = "localhost" if host.lower() in _LOOPBACK_HOSTS else host.lower()
    raw = f"tcp-{canonical}-{port}"
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in ".-") else "_" for ch in raw)


def resolve_scope(scope: object) -> str:
    """Accept a scope string, an object with `.scope`, or one with `.host` and `.port`."""
    if isinstance(scope, str):
        if not scope or "/" in scope or scope in {".", ".."}:
            raise ValueError(f"claim scope {scope!r} is not a single path segment")
        return scope
    named = getattr(scope, "scope", None)
    if isinstance(named, str):
        return resolve_scope(named)
    host, port = getattr(scope, "host", None), getattr(scope, "port", None)
    if isinstance(host, str) and port is not None:
        return scope_for_endpoint(host, port)
    raise TypeError(f"cannot derive a claim scope from {scope!r}: pass a string or an adb endpoint")


def _first_set(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = (env.get(name) or "").strip()
        if value:
            return value
    return None


def claim_root(env: Mapping[str, str] | None = None) -> Path:
    """Return the claim root shared by every daemon on one adb server.

    Args:
        env: Environment to read (default `os.environ`).

    Returns:
        `$AUTOMOBILE_ADB_SERVER_COORDINATION_DIR` (or its legacy spelling), else
        `~/.auto-mobile/adb-servers`; always absolute.
    """
    env = os.environ if env is None else env
    override = _first_set(env, CLAIM_ROOT_ENV, LEGACY_CLAIM_ROOT_ENV)
    if override:
        return Path(override).expanduser().absolute()
    return Path.home() / ".auto-mobile" / "adb-servers"


def coordination_dir(env: Mapping[str, str] | None = None) -> Path:
    """Return AutoMobile's shared coordination directory (legacy claims, CtrlProxy leases).

    Args:
        env: Environment to read (default `os.environ`).

    Returns:
        `$AUTOMOBILE_COORDINATION_DIR` (or its legacy spelling), else `~/.auto-mobile`.
    """
    env = os.environ if env is None else env
    override = _first_set(env, COORDINATION_DIR_ENV, LEGACY_COORDINATION_DIR_ENV)
    if override:
        return Path(override).expanduser().absolute()
    return Path.home() / ".auto-mobile"


def claim_path(serial: str, *, scope: object, root: Path | str | None = None) -> Path:
    """Return the allocation claim file of a device.

    Args:
        serial: The adb serial.
        scope: The adb server's claim scope (string or endpoint, see `resolve_scope`).
        root: The claim root; default from the environment (`claim_root`).

    Returns:
        `<root>/<scope>/device-allocations/<base64url(serial)>.lock`.
    """
    base = claim_root() if root is None else Path(root)
    return base / resolve_scope(scope) / CLAIM_SUBDIR / f"{encode_serial(serial)}.lock"


def benchmark_lock_path(serial: str, *, scope: object, root: Path | str | None = None) -> Path:
    """Return the benchmark-only lock file of a device (`<claim file>.agent-benchmark`)."""
    claim = claim_path(serial, scope=scope, root=root)
    return claim.with_name(claim.name + BENCHMARK_LOCK_SUFFIX)


def pid_is_alive(pid: int) -> bool:
    """Tell whether a process with this pid exists (signal 0; a foreign user's process counts).

    A zombie is dead: it holds nothing, and where nobody reaps orphans (a container whose init
    does not) a daemon that exited would otherwise keep its claim forever.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


@dataclass(frozen=True)
class Holder:
    """Who a lock file names, read from its three-line body."""

    kind: HolderKind
    path: Path
    pid: int
    token: str
    socket_path: str
    acquired_at_ms: int | None
    alive: bool

    def describe(self) -> str:
        """One sentence naming the holder: pid and liveness, socket, since when, the file."""
        parts = [f"pid {self.pid} ({'alive' if self.alive else 'dead'})"]
        if self.socket_path:
            parts.append(f"socket {self.socket_path}")
        if self.acquired_at_ms is not None:
            since = _dt.datetime.fromtimestamp(self.acquired_at_ms / 1000, tz=_dt.timezone.utc)
            parts.append(f"since {since.strftime('%Y-%m-%dT%H:%M:%SZ')}")
        return f"{self.kind} {self.path} names " + ", ".join(parts)


class Unreadable(Exception):
    """A lock file exists but names no owner (empty, no pid, or cannot be read)."""


def _format_body(pid: int, token: str, socket_path: str, acquired_at_ms: int) -> str:
    metadata = json.dumps({"socketPath": socket_path, "acquiredAt": acquired_at_ms}, separators=(",", ":"))
    return f"{pid}\n{token}\n{metadata}"


def read_holder(path: Path, kind: HolderKind) -> Holder | None:
    """Read a lock file; None when it does not exist, `Unreadable` when it names nobody."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise Unreadable(f"cannot be read ({exc.__class__.__name__}: {exc})") from exc
    if not text:
        raise Unreadable("is empty")
    lines = text.split("\n", 2)
    try:
        pid = int(lines[0].strip())
    except ValueError:
        raise Unreadable(f"names no pid (first line {lines[0][:40]!r})") from None
    if pid <= 0:
        # pid 0 and -1 address process groups, never one owner; AutoMobile treats them as unreadable.
        raise Unreadable(f"names pid {pid}, which is no single process")
    token = lines[1].strip() if len(lines) > 1 else ""
    socket_path, acquired_at = "", None
    if len(lines) > 2:
        try:
            metadata = json.loads(lines[2])
        except json.JSONDecodeError:
            metadata = {}
        if isinstance(metadata, dict):
            socket_path = str(metadata.get("socketPath") or "")
            raw_since = metadata.get("acquiredAt")
            acquired_at = int(raw_since) if isinstance(raw_since, (int, float)) else None
    return Holder(kind, path, pid, token, socket_path, acquired_at, pid_is_alive(pid))


def _ensure_private_dir(directory: Path) -> None:
    """Create the claim directory 0700; refuse a symlinked one (someone could redirect claims)."""
    missing = [d for d in (directory, *directory.parents) if not d.exists()]
    try:
        # mkdir(parents=True) would give intermediate directories the default mode; create each
        # missing one ourselves so the whole tree we add is private.
        for component in reversed(missing):
            component.mkdir(mode=_SECURE_DIR_MODE, exist_ok=True)
        info = directory.lstat()
    except OSError as exc:
        raise DeviceError(
            f"cannot create the device claim directory {directory}: {exc.strerror}; make it writable "
            f"or point {CLAIM_ROOT_ENV} at a writable directory"
        ) from exc
    if stat.S_ISLNK(info.st_mode):
        raise DeviceError(f"refusing the device claim directory {directory}: it is a symbolic link")
    if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) != _SECURE_DIR_MODE:
        os.chmod(directory, _SECURE_DIR_MODE)


@dataclass(frozen=True)
class Claim:
    """A lock file this process holds; `release()` removes it only while it is still ours."""

    serial: str
    kind: HolderKind
    path: Path
    pid: int
    token: str
    socket_path: str
    acquired_at_ms: int

    def still_held(self) -> bool:
        """Tell whether the file still names this claim's pid and token."""
        try:
            holder = read_holder(self.path, self.kind)
        except Unreadable:
            return False
        return holder is not None and holder.pid == self.pid and holder.token == self.token

    def release(self) -> bool:
        """Remove the file if it still names this claim's pid and token.

        Returns:
            True when the file was ours and is gone; False when it was missing or someone else's.
        """
        if not self.still_held():
            return False
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True


def busy_message(serial: str, holder: Holder, remedy: str) -> str:
    return f"device {serial} is held by another session: {holder.describe()}. {remedy}"


def unreadable_message(serial: str, kind: HolderKind, path: Path, why: str) -> str:
    return (
        f"device {serial} has a {kind} that {why}: {path}. Cannot tell who holds the device, so the run is "
        f"refused. If no AutoMobile session or benchmark is using {serial}, delete that file and run again."
    )


CLAIM_REMEDY = (
    "Stop that AutoMobile session (or wait until it releases the device) and run again; "
    "if that pid is not an AutoMobile process, delete the file."
)
LOCK_REMEDY = (
    "Another benchmark run is using this device; wait for it to finish or pass another --device. "
    "If that pid is not a benchmark run, delete the file."
)


def acquire_file(
    serial: str,
    path: Path,
    kind: HolderKind,
    *,
    socket_path: str,
    token: str | None,
    remedy: str,
) -> Claim:
    """Link a complete lock file into place; reclaim a dead owner's file; refuse a live one."""
    _ensure_private_dir(path.parent)
    claim = Claim(
        serial=serial,
        kind=kind,
        path=path,
        pid=os.getpid(),
        token=token or secrets.token_hex(16),
        socket_path=socket_path,
        acquired_at_ms=int(_dt.datetime.now(tz=_dt.timezone.utc).timestamp() * 1000),
    )
    temp = path.with_name(f"{path.name}.{_unique_suffix()}.tmp")
    try:
        # The body is complete before link() publishes it, so readers never see a torn claim.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _SECURE_FILE_MODE)
        try:
            os.write(fd, _format_body(claim.pid, claim.token, socket_path, claim.acquired_at_ms).encode("utf-8"))
        finally:
            os.close(fd)
    except OSError as exc:
        raise DeviceError(f"cannot write the {kind} for {serial} at {path}: {exc.strerror}; make {path.parent} writable") from exc
    try:
        for _ in range(_MAX_ACQUIRE_ROUNDS):
            try:
                os.link(temp, path)
                return claim
            except FileExistsError:
                pass
            except OSError as exc:
                raise DeviceError(f"cannot write the {kind} for {serial} at {path}: {exc.strerror}") from exc
            try:
                holder = read_holder(path, kind)
            except Unreadable as exc:
                raise DeviceBusy(unreadable_message(serial, kind, path, str(exc))) from None
            if holder is None:
                continue  # released between our link and our read: try again
            if holder.pid == claim.pid and holder.token == claim.token:
                return claim  # taking back a claim we already hold (same pid and token)
            if holder.alive:
                raise DeviceBusy(busy_message(serial, holder, remedy))
            _remove_stale(path, holder)
        raise DeviceBusy(f"device {serial}: the {kind} at {path} kept changing hands; try again")
    finally:
        try:
            temp.unlink()
        except FileNotFoundError:
            pass


def _remove_stale(path: Path, observed: Holder) -> None:
    """Remove a dead owner's file, unless it changed since it was read.

    Reclaimers take an flock on `<file>.reclaim` first, so only one of them judges and removes
    the stale file at a time; a racing reclaimer then finds the winner's live claim. Acquirers
    only ever link() into an empty path and never remove anyone's file, so under the lock the
    re-read file cannot change before it is unlinked. flock is released by the kernel when a
    process dies, so a crash inside this section leaves no lock behind. The `.reclaim` file is
    kept: unlinking a file others may be waiting to lock would split them onto two inodes.
    """
    guard = path.with_name(path.name + ".reclaim")
    fd = os.open(guard, os.O_RDWR | os.O_CREAT, _SECURE_FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            current = read_holder(path, observed.kind)
        except Unreadable:
            return  # someone is mid-way through something we cannot judge; the next round refuses
        if current is None or current.pid != observed.pid or current.token != observed.token or current.alive:
            return
        try:
            path.unlink()
        except FileNotFoundError:
            pass
    finally:
        os.close(fd)  # closing the descriptor drops the flock


