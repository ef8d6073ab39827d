"""A session's candidate serials -> the device pool, and one serial -> a ClaimedDevice (benchmark lock, allocation claim, handover)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentbench.device import claimlog
from pytest_agentbench.device.adb import Adb, AdbEndpoint
from pytest_agentbench.device.claims import (
    Claim,
    Reclaim,
    acquire_benchmark_lock,
    acquire_claim,
    benchmark_lock_holder,
    check_device_ownership,
    reclaim_after_agent,
)
from pytest_agentbench.device.selection import DeviceEntry, choose_devices
from pytest_agentbench.device.server import ensure_answering, ensure_server, stop_server  # noqa: F401 (the session's adb server)
from pytest_agentbench.errors import DeviceBusy, DeviceError, DeviceUnavailable


#: How long a run waits for a device held by a sibling xdist worker's run (each of those is bounded
#: by its own timeout, so this only catches a sibling that never lets go).
SIBLING_WAIT_S = 3600.0
_SIBLING_POLL_S = 0.2


def held_by_sibling(pid: int) -> bool:
    """Whether `pid` is another pytest-xdist worker of this session: a child of the same controller.

    Such a holder is a run of this very session, so the device frees up when that run ends;
    another session's lock is a refusal, as always. Without /proc nothing counts as a sibling.
    """
    if not os.environ.get("PYTEST_XDIST_WORKER") or pid == os.getpid():
        return False
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return False
    return len(fields) > 1 and int(fields[1]) == os.getppid()


@dataclass(frozen=True)
class Candidate:
    """A device a run may claim: its serial and the client of the adb server that lists it."""

    serial: str
    adb: Adb

    def __str__(self) -> str:
        return str(DeviceEntry(self.serial, self.adb.endpoint))


@dataclass
class DevicePool:
    """The session's devices: the session's adb client, the candidates, the simulated phones it started.

    Every holding is written to `claim_log` (a `device/claimlog.py` file) when one is given.
    """

    adb: Adb
    candidates: list[Candidate]
    pinnable: bool
    fleet: Any = None
    claim_log: Path | None = None
    sibling_wait_s: float = SIBLING_WAIT_S
    is_sibling: Callable[[int], bool] = held_by_sibling
    #: Per device (scope, serial): the undo commands the last run's cleanup could not complete, for the next run.
    unfinished_cleanup: dict[tuple[str, str], tuple[Any, ...]] = field(default_factory=dict)

    @contextmanager
    def claim(self, holder: str = "") -> Iterator[ClaimedDevice]:
        """Hold the first candidate nobody else holds, for one test.

        For each candidate in order: the AutoMobile ownership check, the benchmark-only lock,
        then the allocation claim; the first device that passes all three is yielded and
        released afterwards, whatever happens in between. When every candidate is taken and a
        sibling xdist worker's run holds one of them (more workers than devices), the claim
        waits for it, up to `sibling_wait_s`; anyone else holding them is a refusal at once.

        Args:
            holder: Who holds it, for the claim log (the run's node id).

        Raises:
            DeviceBusy: Every candidate is held; the message says by whom.
        """
        device = self._take()
        try:
            if self.claim_log is not None:
                claimlog.append(self.claim_log, "held", serial=device.serial, scope=device.scope, holder=holder)
            yield device
        finally:
            if self.claim_log is not None:
                claimlog.append(self.claim_log, "released", serial=device.serial, scope=device.scope, holder=holder)
            device.release()

    def _take(self) -> ClaimedDevice:
        deadline = time.monotonic() + self.sibling_wait_s
        while True:
            refusals: list[str] = []
            sibling_holds = False
            for candidate in self.candidates:
                serial, scope = candidate.serial, candidate.adb.endpoint.scope
                try:
                    check_device_ownership(serial, scope=scope)
                    lock = acquire_benchmark_lock(serial, scope=scope)
                except DeviceBusy as busy:
                    refusals.append(str(busy))
                    # The benchmark lock says whose run it is, whichever check refused (during a
                    # sibling's run its MCP server holds the allocation claim).
                    lock_holder = benchmark_lock_holder(serial, scope=scope)
                    sibling_holds = sibling_holds or (lock_holder is not None and lock_holder.alive and self.is_sibling(lock_holder.pid))
                    continue
                try:
                    claim = acquire_claim(serial, scope=scope, socket_path="")
                except BaseException:
                    lock.release()
                    raise
                return ClaimedDevice(serial=serial, adb=candidate.adb, scope=scope, lock=lock, claim=claim,
                                     unfinished=self.unfinished_cleanup)
            if not sibling_holds or time.monotonic() >= deadline:
                raise DeviceBusy("; ".join(refusals) or "no candidate device")
            time.sleep(_SIBLING_POLL_S)


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
    lock: Claim
    claim: Claim | None
    #: The session's unfinished cleanup per device (`DevicePool.unfinished_cleanup`), shared by its claims.
    unfinished: dict[tuple[str, str], tuple[Any, ...]] = field(default_factory=dict)

    def leave_unfinished_cleanup(self, actions: tuple[Any, ...]) -> None:
        """Keep the undo commands a run's cleanup could not complete, so the next run on this device retries them first."""
        if actions:
            self.unfinished[(self.scope, self.serial)] = tuple(actions)
        else:
            self.unfinished.pop((self.scope, self.serial), None)

    def take_unfinished_cleanup(self) -> tuple[Any, ...]:
        """The previous run's unfinished undo commands on this device (once), or ()."""
        return self.unfinished.pop((self.scope, self.serial), ())

    def hand_over(self) -> None:
        if self.claim is not None:
            self.claim.release()
            self.claim = None

    def take_back(self) -> Reclaim:
        outcome = reclaim_after_agent(self.serial, scope=self.scope)
        self.claim = outcome.claim
        return outcome

    def environ(self, base: Mapping[str, str]) -> dict[str, str]:
        """`base` pointed at this device's adb server, for the agent and its MCP server.

        Unchanged when the device is on the server `base` already names; a device on another
        server (`--device HOST:PORT/SERIAL`) gets ADB_SERVER_SOCKET and the two ANDROID_ADB_*
        variables of its own server, so the run's MCP server reaches the same phone.
        """
        env = dict(base)
        if AdbEndpoint.from_environ(env) != self.adb.endpoint:
            env.update(self.adb.endpoint.environ())
        return env

    def release(self) -> None:
        if self.claim is not None:
            self.claim.release()
            self.claim = None
        self.lock.release()


def candidates_for(
    adb: Adb, entries: Sequence[DeviceEntry], *, pinnable: bool, clients: Mapping[AdbEndpoint, Adb] | None = None
) -> list[Candidate]:
    """The `--device` entries -> the candidates, each with the adb client of its own server.

    Entries are grouped by adb server; each group follows the seed's rules for its server
    (`choose_devices`): an MCP server sees only the adb server the harness points it at, so the
    one-online rule of an unpinnable server holds per adb server. No entries: the one online
    device of the session's server.

    Args:
        adb: The session's adb client (entries without a HOST:PORT).
        entries: From `selection.parse_device_entries`.
        pinnable: Whether the server profile can be pinned to one serial.
        clients: Clients to use for other servers (tests); default a new `Adb` per server.

    Raises:
        DeviceUnavailable: A server does not answer, or its devices break a rule (the message says which).
    """
    groups: dict[AdbEndpoint, list[str]] = {}
    for entry in entries or (DeviceEntry(""),):
        endpoint = entry.endpoint or adb.endpoint
        groups.setdefault(endpoint, [])
        if entry.serial:
            groups[endpoint].append(entry.serial)
    candidates: list[Candidate] = []
    for endpoint, serials in groups.items():
        client = adb if endpoint == adb.endpoint else (clients or {}).get(endpoint) or Adb(endpoint)
        try:
            listed = client.devices()
        except DeviceError as exc:
            raise DeviceUnavailable(
                f"--device {', '.join(str(DeviceEntry(s, endpoint)) for s in serials)}: no adb server answers at {endpoint} ({exc})"
            ) from None
        candidates += [Candidate(serial, client) for serial in choose_devices(listed, named=tuple(serials), pinnable=pinnable)]
    return candidates


def share_of(count: int, *, workers: int, index: int) -> int:
    """How many of `count` simulated phones pytest-xdist worker `index` of `workers` starts (at least one)."""
    if workers <= 1:
        return count
    return max(1, count // workers + (1 if index < count % workers else 0))


