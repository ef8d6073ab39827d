"""Device serials into AutoMobile-compatible claim files, benchmark locks and ownership refusals.

AutoMobile daemons coordinate through lock files so that two sessions never drive one phone.
The harness honours them: it refuses a device another live session holds, holds the device's
allocation claim itself through preflight, hands it over to the run's own server just before
the agent starts and takes it back afterwards. A separate benchmark-only lock
(`<claim file>.agent-benchmark`) keeps a second benchmark off the device for the whole run.

Layout (AutoMobile 0.0.85+, read from its `foreignDeviceOwnership.ts` and `fileLock.ts`):

* current claim: `<root>/<scope>/device-allocations/<base64url(serial)>.lock`, root =
  `$AUTOMOBILE_ADB_SERVER_COORDINATION_DIR` (legacy spelling `AUTO_MOBILE_...`), default
  `~/.auto-mobile/adb-servers`; scope names the adb server (`tcp-localhost-5037`).
* legacy claim (written by 0.0.84 daemons, still honoured by newer ones):
  `<coordination dir>/device-allocations/<base64url(serial)>.lock`, coordination dir =
  `$AUTOMOBILE_COORDINATION_DIR` (or `AUTO_MOBILE_COORDINATION_DIR`), default `~/.auto-mobile`.
* CtrlProxy forwarding lease: `<coordination dir>/ctrlproxy-forwards/<base64url(serial)>.lock`,
  taken by a daemon when it first talks to the device's CtrlProxy.

Every file has the same body: line 1 the owner pid, line 2 an owner token, line 3 JSON
`{"socketPath": ..., "acquiredAt": <epoch ms>}`. base64url is Node's: no `=` padding.

A file is published complete: written to a temp file, then `link()`ed into place (EEXIST = held).
A file whose pid is dead is stale: it is removed under an flock on `<file>.reclaim`, so racing
reclaimers cannot both win, and the link is retried. Release removes a file only while it still
names this claim's pid and token.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.device.claimfiles import (
    BENCHMARK_LOCK_SUFFIX,
    CLAIM_REMEDY,
    CLAIM_ROOT_ENV,
    CLAIM_SUBDIR,
    CTRL_PROXY_LEASE_SUBDIR,
    LOCK_REMEDY,
    acquire_file,
    benchmark_lock_path,
    busy_message,
    Claim,
    claim_path,
    claim_root,
    coordination_dir,
    encode_serial,
    Holder,
    HolderKind,
    pid_is_alive,
    read_holder,
    resolve_scope,
    scope_for_endpoint,
    Unreadable,
    unreadable_message,
)
from pytest_agentbench.errors import DeviceBusy


def acquire_claim(
    serial: str,
    *,
    scope: object,
    root: Path | str | None = None,
    socket_path: str = "",
    token: str | None = None,
) -> Claim:
    """Take the device's allocation claim, as an AutoMobile daemon would.

    Args:
        serial: The adb serial.
        scope: The adb server's claim scope (string, or an endpoint with `.scope` or host/port).
        root: The claim root; default `$AUTOMOBILE_ADB_SERVER_COORDINATION_DIR` or
            `~/.auto-mobile/adb-servers`.
        socket_path: Recorded in the body for whoever reads the claim.
        token: Owner token; a random one by default.

    Returns:
        The held claim.

    Raises:
        DeviceBusy: A live process (this one included, under another token) holds the claim, or
            the claim file is unreadable.
        DeviceError: The claim file cannot be written.
    """
    path = claim_path(serial, scope=scope, root=root)
    return acquire_file(serial, path, "allocation claim", socket_path=socket_path, token=token, remedy=CLAIM_REMEDY)


def acquire_benchmark_lock(serial: str, *, scope: object, root: Path | str | None = None) -> Claim:
    """Take the benchmark-only lock held for a whole run; a crashed run's lock is reclaimed.

    Args:
        serial: The adb serial.
        scope: The adb server's claim scope.
        root: The claim root (as for `acquire_claim`).

    Returns:
        The held lock.

    Raises:
        DeviceBusy: Another live benchmark holds the lock, or the lock file is unreadable.
        DeviceError: The lock file cannot be written.
    """
    path = benchmark_lock_path(serial, scope=scope, root=root)
    return acquire_file(serial, path, "benchmark lock", socket_path="", token=None, remedy=LOCK_REMEDY)


def benchmark_lock_holder(serial: str, *, scope: object, root: Path | str | None = None) -> Holder | None:
    """Who holds a device's benchmark lock, or None (no lock, or one that names nobody readable)."""
    try:
        return read_holder(benchmark_lock_path(serial, scope=scope, root=root), "benchmark lock")
    except Unreadable:
        return None


def ownership_files(
    serial: str,
    *,
    scope: object,
    root: Path | str | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[tuple[HolderKind, Path], ...]:
    """List the files a daemon's ownership check reads for a device, in the order they are judged."""
    coordination = coordination_dir(env)
    key = f"{encode_serial(serial)}.lock"
    base = claim_root(env) if root is None else Path(root)
    return (
        ("CtrlProxy forwarding lease", coordination / CTRL_PROXY_LEASE_SUBDIR / key),
        ("allocation claim", claim_path(serial, scope=scope, root=base)),
        ("legacy allocation claim", coordination / CLAIM_SUBDIR / key),
    )


def check_device_ownership(
    serial: str,
    *,
    scope: object,
    root: Path | str | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """Refuse a device another live session holds, before preflight touches it.

    Reads the CtrlProxy forwarding lease, the current allocation claim and the legacy (0.0.84)
    claim. A file naming this process is ours; a dead owner's file is stale and ignored.

    Args:
        serial: The adb serial.
        scope: The adb server's claim scope.
        root: The claim root (as for `acquire_claim`).
        env: Environment for the coordination directory (default `os.environ`).

    Raises:
        DeviceBusy: A live foreign process holds one of the files, or one is unreadable; the
            message names the holder (pid, liveness, socket, since when, file) and what to do.
    """
    own_pid = os.getpid()
    for kind, path in ownership_files(serial, scope=scope, root=root, env=env):
        try:
            holder = read_holder(path, kind)
        except Unreadable as exc:
            raise DeviceBusy(unreadable_message(serial, kind, path, str(exc))) from None
        if holder is None or holder.pid == own_pid or not holder.alive:
            continue
        raise DeviceBusy(busy_message(serial, holder, CLAIM_REMEDY))


@dataclass(frozen=True)
class Reclaim:
    """The outcome of taking the claim back after the agent: ours again, or someone else's."""

    claim: Claim | None
    interloper: Holder | None
    reason: str

    @property
    def screen_readable(self) -> bool:
        """True when the harness holds the device again and may dump the screen."""
        return self.claim is not None


def read_claim_holder(serial: str, *, scope: object, root: Path | str | None = None) -> Holder | None:
    """Who holds the device's allocation claim now; None when nobody does or the file names nobody."""
    try:
        return read_holder(claim_path(serial, scope=scope, root=root), "allocation claim")
    except Unreadable:
        return None


def reclaim_after_agent(
    serial: str,
    *,
    scope: object,
    root: Path | str | None = None,
    socket_path: str = "",
    token: str | None = None,
) -> Reclaim:
    """Take the allocation claim back after the agent (and its server) exited.

    The harness releases its claim (`Claim.release()`) just before the agent starts so the run's
    own server can claim the device; once that server is stopped its claim is gone or stale. A
    live claim by anyone else means another session took the device meanwhile: the screen must
    not be read and the screen check fails with `reason`.

    Args:
        serial: The adb serial.
        scope: The adb server's claim scope.
        root: The claim root (as for `acquire_claim`).
        socket_path: Recorded in the new claim's body.
        token: Owner token for the new claim.

    Returns:
        A `Reclaim` holding the new claim, or naming the interloper and why the screen is unreadable.

    Raises:
        DeviceError: The claim file cannot be written.
    """
    try:
        claim = acquire_claim(serial, scope=scope, root=root, socket_path=socket_path, token=token)
    except DeviceBusy as busy:
        path = claim_path(serial, scope=scope, root=root)
        try:
            holder = read_holder(path, "allocation claim")
        except Unreadable:
            holder = None
        reason = f"another session claimed the device during the run, so the screen was not read: {busy}"
        return Reclaim(claim=None, interloper=holder, reason=reason)
    return Reclaim(claim=claim, interloper=None, reason="")


__all__ = [
    "BENCHMARK_LOCK_SUFFIX",
    "CLAIM_ROOT_ENV",
    "Claim",
    "Holder",
    "Reclaim",
    "acquire_benchmark_lock",
    "acquire_claim",
    "benchmark_lock_holder",
    "benchmark_lock_path",
    "check_device_ownership",
    "claim_path",
    "claim_root",
    "coordination_dir",
    "encode_serial",
    "ownership_files",
    "pid_is_alive",
    "read_claim_holder",
    "reclaim_after_agent",
    "resolve_scope",
    "scope_for_endpoint",
]
