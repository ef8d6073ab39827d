"""A phone count -> simulated phones served on loopback ports and attached to the real adb server as `device`s."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from pytest_agentbench.device.adb import Adb
from pytest_agentbench.errors import DeviceError, DeviceUnavailable

LOOPBACK = "127.0.0.1"
# The adb server auto-registers anything listening here as `emulator-N` when it starts.
EMULATOR_PORTS = range(5554, 5586)
# A connected serial that stays offline this long is reattached (adb keeps a restarted device
# offline for 8-10 s, while disconnect + connect is instant).
REATTACH_AFTER_S = 2.0
ATTACH_TIMEOUT_S = 30.0


def _default_phone_factory(index: int) -> Any:
    from pytest_agentbench.sim.phone import Phone

    return Phone(serial_hint=f"sim{index}")


def _check_port(port: int) -> int:
    if port in EMULATOR_PORTS:
        raise ValueError(
            f"port {port} is in adb's emulator range 5554-5585, where the adb server would register "
            "the phone a second time as emulator-N; pick another port"
        )
    if not 0 < port < 65536:
        raise ValueError(f"port {port} is not a TCP port")
    return port


class SimFleet:
    """Simulated phones behind the real adb server, started on construction.

    Each phone gets a PhoneServer on a loopback port and is attached with
    `adb connect 127.0.0.1:PORT`; the fleet waits until adb lists every one as `device`.
    `stop()` (also on leaving a `with` block) disconnects them and stops their servers.

    Attributes:
        adb: The device-layer client the fleet attached the phones through.
        phones: The simulated phones, in serial order.
        servers: Their PhoneServers.
        serials: Their adb serials (`127.0.0.1:PORT`).
    """

    def __init__(
        self,
        count: int = 1,
        latency_ms: float = 0,
        adb: Adb | None = None,
        *,
        first_port: int | None = None,
        attach_timeout_s: float = ATTACH_TIMEOUT_S,
        phone_factory: Callable[[int], Any] | None = None,
    ) -> None:
        """Start `count` phones and attach them.

        Args:
            count: How many phones.
            latency_ms: Extra delay per served command, like a USB round trip.
            adb: The adb client; by default the server named by the environment.
            first_port: Serve on first_port, first_port+1, ...; free ports when None.
            attach_timeout_s: How long to wait for every phone to become `device`.
            phone_factory: Builds phone number i (tests pass customised phones).

        Raises:
            ValueError: count below 1 or a port in adb's emulator range.
            DeviceUnavailable: No adb server could be started, or a phone never became `device`.
            OSError: A port could not be bound.
        """
        if count < 1:
            raise ValueError(f"a fleet needs at least one phone, not {count}")
        if first_port is not None:
            for offset in range(count):
                _check_port(first_port + offset)
        self.adb = adb if adb is not None else Adb()
        self.phones: list[Any] = []
        self.servers: list[Any] = []
        self.serials: list[str] = []
        self._latency_ms = latency_ms
        self._stopped = False
        make_phone = phone_factory or _default_phone_factory
        try:
            self.adb.ensure_server()
            for index in range(count):
                port = 0 if first_port is None else first_port + index
                self._serve(make_phone(index), port)
            self._attach_all(attach_timeout_s)
        except BaseException:
            self.stop()
            raise

    def _serve(self, phone: Any, port: int) -> None:
        from pytest_agentbench.sim.transport import PhoneServer

        server = PhoneServer(phone, host=LOOPBACK, port=port, latency_ms=self._latency_ms).start()
        if server.port in EMULATOR_PORTS:
            # Only possible with an OS that hands out low ephemeral ports; never attach it there.
            server.stop()
            server = PhoneServer(phone, host=LOOPBACK, port=0, latency_ms=self._latency_ms).start()
        self.phones.append(phone)
        self.servers.append(server)
        self.serials.append(f"{LOOPBACK}:{server.port}")

    def wait_online(self, timeout_s: float = ATTACH_TIMEOUT_S) -> None:
        """Wait until adb lists every phone as `device`, reattaching ones that stay offline.

        Raises:
            DeviceUnavailable: A phone is still not `device` after timeout_s.
        """
        deadline = time.monotonic() + timeout_s
        offline_since: dict[str, float] = {}
        while True:
            states = {info.serial: info.state for info in self.adb.devices()}
            waiting = [serial for serial in self.serials if states.get(serial) != "device"]
            if not waiting:
                return
            now = time.monotonic()
            if now > deadline:
                shown = ", ".join(f"{serial} is {states.get(serial, 'missing')}" for serial in waiting)
                raise DeviceUnavailable(
                    f"simulated phones did not come online within {timeout_s:g}s ({shown}); "
                    f"see `adb -P {self.adb.endpoint.port} devices`"
                )
            for serial in waiting:
                port = int(serial.rsplit(":", 1)[1])
                if serial not in states:
                    self.adb.connect(LOOPBACK, port)
                elif now - offline_since.setdefault(serial, now) > REATTACH_AFTER_S:
                    self.adb.disconnect(LOOPBACK, port)
                    self.adb.connect(LOOPBACK, port)
                    offline_since[serial] = now
            time.sleep(0.05)

    def _attach_all(self, timeout_s: float) -> None:
        for server in self.servers:
            self.adb.connect(LOOPBACK, server.port)
        self.wait_online(timeout_s)

    def command_counts(self) -> dict[str, Counter]:
        """Services served per serial (`shell`, `exec`, `sync`), for measuring round trips."""
        return {serial: Counter(phone.counters) for serial, phone in zip(self.serials, self.phones)}

    def stop(self) -> None:
        """Disconnect every phone from adb and stop its server; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        for server in self.servers:
            # The adb server may already be gone (Ctrl+C took it down too): stopping goes on.
            with contextlib.suppress(DeviceError, OSError):
                self.adb.disconnect(LOOPBACK, server.port)
        for server in self.servers:
            server.stop()
        for phone in self.phones:
            phone.processes.stop_all()  # the phones' background jobs end with them

    def __enter__(self) -> SimFleet:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
