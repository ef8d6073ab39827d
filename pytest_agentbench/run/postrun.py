"""A finished agent -> the run's own leftover daemon stopped, the device taken back, and the post-run screen read.

The runner stops the agent's process group, which ends an MCP server that stays in it. A daemon
that detached (AutoMobile's by design, mobile-mcp's `mobilecli daemon` today) outlives the group
and, holding a device claim, would block the take-back and so the screen oracle. It is the run's
own when it carries the run token in its environment, or when the live claim it holds names a
socket in the run's private socket directory; anyone else holding the claim is an interloper,
whose claim is left alone and whose presence means the screen is not read.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_agentbench.checks.base import DeviceReads, Read
from pytest_agentbench.checks.read import read_device, save_reads
from pytest_agentbench.device.claims import read_claim_holder
from pytest_agentbench.device.capture import capture_screen, capture_script, hierarchy_of, split_capture
from pytest_agentbench.device.uiautomator import IDLE_RETRIES, NOT_IDLE, parse_hierarchy
from pytest_agentbench.errors import DeviceError, DeviceLost, DeviceUnavailable
from pytest_agentbench.records.run import DeviceState, ScreenSnapshot
from pytest_agentbench.servers import RUN_TOKEN_ENV, DaemonSpec

if TYPE_CHECKING:
    from pytest_agentbench.device.pool import ClaimedDevice
    from pytest_agentbench.run.artifacts import RunArtifacts
    from pytest_agentbench.suite import Suite

#: Seconds a leftover daemon gets between SIGTERM and SIGKILL, and a stop command to finish.
DAEMON_GRACE_S = 3.0
STOP_COMMAND_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class LeftoverProcess:
    """A process of this run still alive after the agent's group was stopped."""

    pid: int
    pgid: int
    command: str
    why: str


def _proc_stat(pid: int) -> tuple[str, int] | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[2])


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def processes_with_token(token: str, proc: Path = Path("/proc")) -> list[LeftoverProcess]:
    """Live processes whose environment holds `AGENTBENCH_RUN_TOKEN=<token>` (Linux; none where /proc is absent)."""
    needle = f"{RUN_TOKEN_ENV}={token}".encode()
    found = []
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle not in environ.split(b"\0"):
            continue
        stat = _proc_stat(int(entry.name))
        if stat is not None and stat[0] != "Z":
            found.append(LeftoverProcess(int(entry.name), stat[1], _command(int(entry.name)), "carries the run token"))
    return found


def _claim_holder_of_this_run(device: ClaimedDevice, socket_dir: Path | None) -> LeftoverProcess | None:
    holder = read_claim_holder(device.serial, scope=device.scope)
    if holder is None or not holder.alive or socket_dir is None or not holder.socket_path:
        return None
    if not Path(holder.socket_path).is_relative_to(socket_dir):
        return None
    stat = _proc_stat(holder.pid)
    pgid = stat[1] if stat is not None else holder.pid
    return LeftoverProcess(holder.pid, pgid, _command(holder.pid), f"holds the device claim with socket {holder.socket_path}")


def _stop_groups(leftovers: Iterable[LeftoverProcess]) -> None:
    own_group = os.getpgrp()
    groups = {process.pgid for process in leftovers if process.pgid not in (own_group, 0, 1)}
    singles = {process.pid for process in leftovers if process.pgid in (own_group, 0, 1)}
    for pgid in groups:
        _signal(lambda sig, pgid=pgid: os.killpg(pgid, sig), signal.SIGTERM)
    for pid in singles:
        _signal(lambda sig, pid=pid: os.kill(pid, sig), signal.SIGTERM)
    deadline = time.monotonic() + DAEMON_GRACE_S
    pids = {process.pid for process in leftovers}
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.05)
    for pgid in groups:
        _signal(lambda sig, pgid=pgid: os.killpg(pgid, sig), signal.SIGKILL)
    for pid in singles:
        _signal(lambda sig, pid=pid: os.kill(pid, sig), signal.SIGKILL)


def _signal(send, sig: int) -> None:
    try:
        send(sig)
    except (ProcessLookupError, PermissionError):
        pass


def _alive(pid: int) -> bool:
    stat = _proc_stat(pid)
    return stat is not None and stat[0] != "Z"


def stop_run_daemons(
    device: ClaimedDevice,
    *,
    daemon: DaemonSpec,
    run_token: str,
    server_env: Mapping[str, str],
    private_dirs: Mapping[str, Path],
    log: Path,
) -> list[LeftoverProcess]:
    """Stop whatever this run's MCP server left running, before the claim is taken back.

    Args:
        device: The claimed device (its current claim holder is read).
        daemon: The server profile's daemon description.
        run_token: The run's token, set in the server's environment.
        server_env: The server's full environment (for the profile's stop command).
        private_dirs: The run's private directories (the socket directory among them).
        log: `postrun.log` in the run directory; what was stopped is appended there.

    Returns:
        The leftover processes found (and stopped).
    """
    lines = []
    if daemon.stop_command:
        try:
            done = subprocess.run(list(daemon.stop_command), env=dict(server_env), capture_output=True, text=True,
                                  timeout=STOP_COMMAND_TIMEOUT_S, stdin=subprocess.DEVNULL, start_new_session=True)
            lines.append(f"$ {' '.join(daemon.stop_command)} -> exit {done.returncode}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            lines.append(f"$ {' '.join(daemon.stop_command)} -> {exc}")
    socket_dir = private_dirs.get(daemon.socket_dir_env) if daemon.socket_dir_env else None
    leftovers = {process.pid: process for process in processes_with_token(run_token)}
    holder = _claim_holder_of_this_run(device, Path(socket_dir).absolute() if socket_dir else None)
    if holder is not None:
        leftovers.setdefault(holder.pid, holder)
    if leftovers:
        _stop_groups(leftovers.values())
        lines += [f"stopped the run's leftover pid {p.pid} (group {p.pgid}, {p.why}): {p.command}" for p in leftovers.values()]
    if lines:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
    return list(leftovers.values())


@dataclass(frozen=True)
class PostRunState:
    """What post-run read: the screen, the device checks' after-reads, and whether the device went away."""

    screen: ScreenSnapshot | None
    device_after: DeviceReads | None = None
    device_unavailable: str | None = None
    device_lost: str | None = None

    def device_state(self, before: DeviceReads | None) -> DeviceState:
        return DeviceState(before, self.device_after, self.device_unavailable)


def read_post_run_state(device: ClaimedDevice, suite: Suite, artifacts: RunArtifacts,
                        reads: Sequence[Read] = ()) -> PostRunState:
    """Take the claim back, then make the device checks' after-reads and capture the screen in one round trip.

    Every run saves the post-run screen (`screen.xml`, `screen.png`) for people to look at; only
    a suite with screen checks gets a snapshot for the audit. A phone someone else holds is not
    read at all.

    Args:
        device: The claimed device (the agent's server held its claim).
        suite: The suite (its screen checks decide whether the screen is judged).
        artifacts: The run's files (screen.xml, screen.png; device-after.json goes beside them).
        reads: The after-reads (`checks.SuiteChecks.after_reads`).

    Returns:
        The screen (None when the suite has no screen checks), the after-reads (None when there
        are none or the device could not be read, with the reason), and what adb said when the
        device went away (the audit then calls the run incomplete).
    """
    reclaim = device.take_back()
    judged = bool(suite.verify.screen_includes)
    if not reclaim.screen_readable:
        # Someone else holds the phone: neither its screen nor its state is this run's to read.
        return PostRunState(ScreenSnapshot(None, reclaim.reason) if judged else None, None,
                            reclaim.reason if reads else None)
    after: DeviceReads | None = None
    try:
        if reads:
            # The after-reads and the capture share one round trip; the PNG comes last, untouched.
            batch = read_device(device.adb, device.serial, reads, then=capture_script())
            after = batch.reads
            save_reads(after, artifacts.run_dir, "after")
            capture = split_capture(batch.then_output)
        else:
            capture = capture_screen(device.adb, device.serial)
        for _ in range(IDLE_RETRIES):
            # An animating screen ("could not get idle state") usually settles by the next dump; the reads stand.
            if capture.xml is not None or not any(NOT_IDLE in problem for problem in capture.problems):
                break
            _log(artifacts.postrun_log, [f"screen: {problem}; dumping again" for problem in capture.problems])
            capture = capture_screen(device.adb, device.serial)
        if capture.png is not None:
            artifacts.screen_png.write_bytes(capture.png)
        if capture.problems:
            _log(artifacts.postrun_log, [f"screen: {problem}" for problem in capture.problems])
        xml = hierarchy_of(capture, device.serial)
    except (DeviceLost, DeviceUnavailable) as lost:
        # The device was online through preflight; if the adb server can no longer reach it now
        # (gone, offline), it went away during the run: that is not the agent's failed check.
        if not judged and not reads:
            _log(artifacts.postrun_log, [f"screen: not captured, the device went away: {lost}"])
            return PostRunState(None)
        why = f"the device went away: {lost}"
        return PostRunState(ScreenSnapshot(None, why) if judged else None, None, why if reads else None, str(lost))
    except DeviceError as error:
        unread = f"the device state could not be read after the run: {error}" if reads and after is None else None
        return PostRunState(ScreenSnapshot(None, f"the screen could not be dumped: {error}") if judged else None, after, unread)
    artifacts.screen.write_text(xml, encoding="utf-8")
    return PostRunState(ScreenSnapshot(parse_hierarchy(xml)) if judged else None, after)


def _log(path: Path, lines: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
