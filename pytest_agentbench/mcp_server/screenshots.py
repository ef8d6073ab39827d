"""A finished tool call -> a screenshot of the phone it used and a line in the index (`AGENTBENCH_SCREENSHOTS=1` only).

The file names and the index format are the contract in `servers/screenshots.py`. A screenshot
is taken after the call's answer is ready and before it is returned, so it shows what the
phone looked like when the agent read the answer; it costs one `screencap -p` round trip per
device call, which is why it is off unless the HTML report asks for it. It never changes the
call's answer: a failed screenshot is written to the index as a problem.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_agentbench.device.capture import capture_screen
from pytest_agentbench.errors import DeviceError
from pytest_agentbench.mcp_server.hub import DeviceHub
from pytest_agentbench.servers.screenshots import INDEX_NAME, SCREENSHOTS_DIR, CallShot, screenshot_name

logger = logging.getLogger("agentbench.mcp")

#: Tools that touch no phone: nothing to photograph after them.
NO_DEVICE_TOOLS = frozenset({"listDevices"})


class ScreenshotRecorder:
    """Numbers the calls the server receives and saves a screenshot after each device call."""

    def __init__(self, data_dir: Path, hub: DeviceHub) -> None:
        self.directory = data_dir / SCREENSHOTS_DIR
        self.hub = hub
        self.order = 0
        self._lock = threading.Lock()

    def after_call(self, tool: str, arguments: Mapping[str, Any], ok: bool) -> CallShot:
        """Record one finished call (`ok`: it answered without a ToolError); returns its index entry."""
        with self._lock:
            self.order += 1
            order = self.order
        file, problem = None, None
        if tool not in NO_DEVICE_TOOLS:
            try:
                png = self._screenshot(str(arguments.get("device") or ""))
                if png is None:
                    problem = "no claimed device to photograph"
                else:
                    self.directory.mkdir(parents=True, exist_ok=True)
                    file = screenshot_name(order, tool)
                    (self.directory / file).write_bytes(png)
            except (DeviceError, OSError) as exc:
                problem = f"screenshot failed: {exc}"
        shot = CallShot(order, tool, dict(arguments), ok, file, problem)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with open(self.directory / INDEX_NAME, "a", encoding="utf-8") as index:
                index.write(shot.to_json() + "\n")
        except OSError as exc:
            logger.warning("could not write the screenshot index: %s", exc)
        return shot

    def _screenshot(self, device: str) -> bytes | None:
        serial = self.hub.claimed_serial(device)
        if serial is None:
            return None
        capture = self.hub.locked(lambda: capture_screen(self.hub.adb, serial, hierarchy=False))
        if capture.png is None:
            raise DeviceError("; ".join(capture.problems) or "no PNG")
        return capture.png
