"""A session's candidate serials -> the device pool, and one serial -> a ClaimedDevice (benchmark lock, allocation claim, handover)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.device.adb import Adb
from pytest_agentbench.device.claims import (
    Claim,
    Reclaim,
    acquire_benchmark_lock,
    acquire_claim,
    check_device_ownership,
    reclaim_after_agent,
)
from pytest_agentbench.errors import DeviceBusy, DeviceUnavailable


@dataclass
class DevicePool:
    """The session's devices: the adb client, the candidate serials, the simulated phones it started."""

    adb: Adb
    candidates: list[str]
    pinnable: bool
    fleet: Any = None

    @contextmanager
    def claim(self) -> Iterator[ClaimedDevice]:
        """Hold the first candidate nobody else holds, for one test.

        For each candidate in order: the AutoMobile ownership check, the benchmark-only lock,
        then the allocation claim; the first device that passes all three is yielded and
        released afterwards, whatever happens in between.

        Raises:
            DeviceBusy: Every candidate is held; the message says by whom.
        """
        scope = self.adb.endpoint.scope
        refusals: list[str] = []
        for serial in self.candidates:
            try:
                check_device_ownership(serial, scope=scope)
                lock = acquire_benchmark_lock(serial, scope=scope)
            except DeviceBusy as busy:
                refusals.append(str(busy))
                continue
            try:
                claim = acquire_claim(serial, scope=scope, socket_path="")
            except BaseException:
                lock.release()
                raise
            device = ClaimedDevice(serial=serial, adb=self.adb, scope=scope, fingerprint={}, lock=lock, claim=claim)
            try:
                yield device
            finally:
                device.release()
            return
        raise DeviceBusy("; ".join(refusals) or "no candidate device")


@dataclass
class ClaimedDevice:
    """A device held for one test: the benchmark lock for the whole run, the claim around preflight.

    The allocation claim is handed to the agent's own MCP server just before the agent starts
    (`hand_over()`) and taken back when it exits (`take_back()`); if someone else claimed the
    device meanwhile, `take_back()` says so and the screen must not be read.
    """

    serial: str
    adb: Adb
    scope: str
    #: The device fingerprint, read afresh by every preflight (empty until the first one).
    fingerprint: dict[str, str]
    lock: Claim
    claim: Claim | None

    def hand_over(self) -> None:
        if self.claim is not None:
            self.claim.release()
            self.claim = None

    def take_back(self) -> Reclaim:
        outcome = reclaim_after_agent(self.serial, scope=self.scope)
        self.claim = outcome.claim
        return outcome

    def release(self) -> None:
        if self.claim is not None:
            self.claim.release()
            self.claim = None
        self.lock.release()


def share_of(count: int, *, workers: int, index: int) -> int:
    """How many of `count` simulated phones pytest-xdist worker `index` of `workers` starts (at least one)."""
    if workers <= 1:
        return count
    return max(1, count // workers + (1 if index < count % workers else 0))


def ensure_server(adb: Adb) -> bool:
    """Start the adb server if none listens; True when this process started it (and so stops it)."""
    if adb.server_running():
        return False
    try:
        adb.ensure_server()
    except DeviceUnavailable:
        # Another process (an xdist sibling) may have won the race to start it.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if adb.server_running():
                return False
            time.sleep(0.1)
        raise
    return True
