"""A simulated Phone behind the device layer's interface, in-process: fast preflight and run tests without adb."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_agentbench.device.adb import AdbEndpoint, ShellResult
from pytest_agentbench.device.shellscript import Script, as_script
from pytest_agentbench.errors import DeviceError
from pytest_agentbench.sim.phone import Phone


class PhoneAdb:
    """The `Adb` calls preflight makes, answered by one in-process `Phone` (serial `sim`)."""

    def __init__(self, phone: Phone | None = None, serial: str = "sim") -> None:
        self.phone = phone or Phone()
        self.serial = serial
        self.endpoint = AdbEndpoint("localhost", 5037)
        self.round_trips = 0
        self.commands: list[str] = []

    def _check(self, serial: str) -> None:
        if serial != self.serial:
            raise DeviceError(f"unknown serial {serial}")
        self.round_trips += 1

    def shell(self, serial: str, args: Script | Sequence[str], *, timeout_s: float = 30, check: bool = True) -> ShellResult:
        self._check(serial)
        script = as_script(args)
        self.commands.append(script.text)
        result = self.phone.shell(script.text)
        output = (result.stdout + result.stderr).decode("utf-8", "replace")
        if check and result.exit_code:
            raise DeviceError(f"`{script.text}` exited {result.exit_code}", command=script.text, output=output, exit_code=result.exit_code)
        return ShellResult(output, result.exit_code)

    def exec_out(self, serial: str, args: Script | Sequence[str], *, timeout_s: float = 30) -> bytes:
        self._check(serial)
        script = as_script(args)
        self.commands.append(script.text)
        return self.phone.shell(script.text).stdout

    def push(self, serial: str, data: bytes, remote: str, mode: int = 0o644, *, timeout_s: float = 60) -> None:
        self._check(serial)
        self.commands.append(f"push {remote}")
        self.phone.fs.write(remote, data, mode)

    def pull(self, serial: str, remote: str, *, timeout_s: float = 60) -> bytes:
        self._check(serial)
        return self.phone.fs.read(remote)
