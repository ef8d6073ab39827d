"""A finished agent -> the device taken back and the post-run screen read (suites with screen checks only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_agentbench.device.uiautomator import dump_screen, parse_hierarchy
from pytest_agentbench.errors import DeviceError, DeviceLost, DeviceUnavailable
from pytest_agentbench.run.record import ScreenSnapshot

if TYPE_CHECKING:
    from pytest_agentbench.device.pool import ClaimedDevice
    from pytest_agentbench.run.artifacts import RunArtifacts
    from pytest_agentbench.suite import Suite


def read_post_run_screen(device: ClaimedDevice, suite: Suite, artifacts: RunArtifacts) -> tuple[ScreenSnapshot | None, str | None]:
    """Take the claim back and dump the screen (suites with screen checks only).

    Returns:
        The snapshot (None when the suite has no screen checks) and, when the device went
        away, what adb said (the audit then calls the run incomplete).
    """
    reclaim = device.take_back()
    if not suite.verify.screen_includes:
        return None, None
    if not reclaim.screen_readable:
        return ScreenSnapshot(None, reclaim.reason), None
    try:
        xml = dump_screen(device.adb, device.serial)
    except (DeviceLost, DeviceUnavailable) as lost:
        # The device was online through preflight; if the adb server can no longer reach it now
        # (gone, offline), it went away during the run: that is not the agent's failed check.
        return ScreenSnapshot(None, f"the device went away: {lost}"), str(lost)
    except DeviceError as error:
        return ScreenSnapshot(None, f"the screen could not be dumped: {error}"), None
    artifacts.screen.write_text(xml, encoding="utf-8")
    return ScreenSnapshot(parse_hierarchy(xml)), None
