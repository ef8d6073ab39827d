"""A `device` argument -> a pinned, claimed PhoneDriver; device-layer failures -> sentences for the agent."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from mcp.server.mcpserver.exceptions import ToolError

from pytest_agentbench.device import claims
from pytest_agentbench.device.adb import Adb
from pytest_agentbench.errors import (
    DeviceBusy,
    DeviceError,
    DeviceLost,
    DeviceUnavailable,
)
from pytest_agentbench.mcp_server.config import ServerConfig
from pytest_agentbench.mcp_server.driver import PhoneDriver

logger = logging.getLogger("agentbench.mcp")
T = TypeVar("T")


class DeviceHub:
    """Resolves serials (honouring the pin), claims each device at first use, and serialises adb work.

    One lock for all devices: tool calls of one agent arrive one at a time anyway, and a lock
    keeps two concurrent calls from interleaving taps and dumps on the same phone.
    """

    def __init__(self, config: ServerConfig, adb: Adb) -> None:
        self.config = config
        self.adb = adb
        self._drivers: dict[str, PhoneDriver] = {}
        self._claims: dict[str, claims.Claim] = {}
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- serials

    def _online(self) -> list[str]:
        return [info.serial for info in self.adb.devices() if info.state == "device"]

    def list_devices(self) -> str:
        """The `listDevices` text: only the pinned phone when pinned, else every device the adb server knows."""
        infos = self.adb.devices()
        pinned = self.config.pinned_serial
        if pinned is not None:
            state = next((info.state for info in infos if info.serial == pinned), "not connected")
            return f"{pinned} {state} (this server serves only this device)"
        if not infos:
            return "no devices are connected to the adb server"
        return "\n".join(f"{info.serial} {info.state}" + (f" model:{info.model}" if info.model else "") for info in infos)

    def resolve(self, device: str) -> str:
        """The serial a tool call acts on.

        Raises:
            ToolError: The serial is not the pinned one, not online, or ambiguous.
        """
        device = device.strip()
        pinned = self.config.pinned_serial
        if pinned is not None:
            if device and device != pinned:
                raise ToolError(f"device '{device}' is not available; this server is pinned to {pinned}")
            return pinned
        online = self._online()
        if device:
            if device not in online:
                available = ", ".join(online) or "none"
                raise ToolError(f"device '{device}' is not online; online devices: {available}; call listDevices")
            return device
        if len(online) == 1:
            return online[0]
        if not online:
            raise ToolError("no device is online; connect one and call listDevices")
        raise ToolError(f"several devices are online ({', '.join(online)}); pass one of them as device")

    # ---------------------------------------------------------------- claims

    def _claim(self, serial: str) -> None:
        if serial in self._claims:
            return
        claim = claims.acquire_claim(
            serial,
            scope=self.config.endpoint.scope,
            root=self.config.claim_root,
            socket_path=self.config.socket_path(),
        )
        self._claims[serial] = claim
        logger.info("claimed %s at %s", serial, claim.path)

    def release_all(self) -> None:
        """Release every claim this server took (called when the server exits)."""
        with self._lock:
            for serial, claim in list(self._claims.items()):
                try:
                    released = claim.release()
                except OSError as exc:
                    logger.warning("could not release the claim on %s: %s", serial, exc)
                    continue
                logger.info("released claim on %s (%s)", serial, "removed" if released else "no longer ours")
            self._claims.clear()

    # ---------------------------------------------------------------- calls

    def call(self, device: str, action: Callable[[PhoneDriver], T]) -> T:
        """Run one device action on the resolved, claimed phone; turn device failures into sentences.

        Raises:
            ToolError: Whatever went wrong, said so the agent can act on it.
        """
        with self._lock:
            try:
                serial = self.resolve(device)
                self._claim(serial)
                driver = self._drivers.setdefault(serial, PhoneDriver(self.adb, serial))
                return action(driver)
            except DeviceBusy as exc:
                raise ToolError(f"{exc} This server cannot use the device until that session ends.") from exc
            except DeviceLost as exc:
                raise ToolError(f"the device stopped answering ({exc}); call listDevices to check it") from exc
            except DeviceUnavailable as exc:
                raise ToolError(f"the device is not usable: {exc}") from exc
            except DeviceError as exc:
                raise ToolError(_device_error_sentence(exc)) from exc

    def claimed_serial(self, device: str) -> str | None:
        """The serial a call's `device` names, if this server holds its claim (else None; never raises)."""
        with self._lock:
            try:
                serial = self.resolve(device)
            except (ToolError, DeviceError):
                return None
            return serial if serial in self._claims else None

    def locked(self, work: Callable[[], T]) -> T:
        """Run device work under the hub's lock, so it cannot interleave with a tool call's adb work."""
        with self._lock:
            return work()

    def inventory(self) -> str:
        """Run `listDevices` with the same error translation (no claim: it touches no phone)."""
        with self._lock:
            try:
                return self.list_devices()
            except DeviceError as exc:
                raise ToolError(f"the adb server at {self.config.endpoint} did not answer: {exc}") from exc


def _device_error_sentence(exc: DeviceError) -> str:
    if exc.command and exc.exit_code is not None:
        output = " ".join(exc.output.split())[-300:] or "no output"
        return f"the device refused `{exc.command}` (exit {exc.exit_code}): {output}"
    return str(exc)
