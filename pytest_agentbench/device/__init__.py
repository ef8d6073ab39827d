"""The plugin's way to a device: adb host-protocol calls and safely quoted shell scripts."""

from __future__ import annotations

from pytest_agentbench.device.adb import Adb, AdbEndpoint, DeviceInfo, RemoteStat, ShellResult
from pytest_agentbench.device.shellscript import Script, quote, sh

__all__ = ["Adb", "AdbEndpoint", "DeviceInfo", "RemoteStat", "Script", "ShellResult", "quote", "sh"]
