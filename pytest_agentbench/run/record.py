"""A measured run -> one frozen Run record: everything the audit and result.json need, saved so a re-audit sees the same inputs.

The live run builds it (`run/execute.py`), a re-render rebuilds it from a run directory
(`run/saved.py`), and `audit.verdict.audit_run` judges it: the verdict has one set of inputs
and one place that decides it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_agentbench.checks.base import DeviceReads
    from pytest_agentbench.device.uiautomator import UiNode
    from pytest_agentbench.suite import Suite


@dataclass(frozen=True)
class ProcessOutcome:
    """How the agent process ended: exit code (None if unknown), timeout, terminating signal."""

    exit_code: int | None
    timed_out: bool
    signal: int | None
    wall_clock_seconds: float
    #: Why the harness ended the run early, when it did (no output for N seconds), else None.
    stopped_because: str | None = None
    #: The harness ended the group after the stream's `result` event because the agent lingered:
    #: the run had finished, and `signal`/`exit_code` are the harness's doing, not a crash.
    ended_after_result: bool = False


@dataclass(frozen=True)
class ScreenSnapshot:
    """The post-run dump's nodes, or None with the reason the screen could not be read."""

    nodes: tuple[UiNode, ...] | None
    unavailable_reason: str | None = None


@dataclass(frozen=True)
class DeviceState:
    """The device checks' reads: at the end of preflight and at the start of post-run (saved as device-before/after.json).

    Attributes:
        before: The before-snapshot's reads (None when the suite needs none).
        after: The after-snapshot's reads (None when the device could not be read after the run).
        unavailable: Why `after` is missing.
    """

    before: DeviceReads | None
    after: DeviceReads | None
    unavailable: str | None = None


@dataclass(frozen=True)
class Run:
    """One measured run of a suite, as the audit sees it.

    Attributes:
        suite: The suite that ran.
        run_dir: Its run directory (the transcript is `claude.jsonl` in it).
        process: How the agent process ended.
        screen: The post-run screen (None when the suite has no screen checks).
        device_aware_tools: Full names of the server's tools that act on a device.
        probe_error: Why the server's `tools/list` could not be read, if it could not.
        device_lost: Why the device could not be reached after the agent, if it could not.
        nodeid, device_serial, agent_command, requested_model, started_at, finished_at: Metadata.
        device_fingerprint, app_build: Read by this run's preflight.
        preflight_round_trips: adb round trips preflight spent.
        server_build, server_build_components: The `serverBuild` fingerprint and its parts.
        device_state: The device checks' before- and after-reads (None: the suite has no device checks).
        shell_tools: Full names of the server's tools that run commands (profile + schemas).
        cleanup: What cleanup did and left (`run.cleanup` report), shown but never judged.
        harness_seconds: The harness's own time around the agent (`preflightSeconds`,
            `setupSeconds`, `postRunSeconds`), measured by `run/execute.py`.
        relay_log: The relay log's file name in the run directory (`relay.jsonl`): the calls the
            harness's MCP relay carried, the audit's evidence of tool use. None only for runs
            saved before the relay existed (audited from the transcript alone).
    """

    suite: Suite
    run_dir: Path
    process: ProcessOutcome
    screen: ScreenSnapshot | None
    device_aware_tools: frozenset[str]
    probe_error: str | None = None
    device_lost: str | None = None
    nodeid: str | None = None
    device_serial: str | None = None
    agent_command: tuple[str, ...] = ()
    requested_model: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    device_fingerprint: Mapping[str, str] = field(default_factory=dict)
    app_build: Mapping[str, Any] = field(default_factory=dict)
    preflight_round_trips: int | None = None
    server_build: str | None = None
    server_build_components: Mapping[str, str] = field(default_factory=dict)
    device_state: DeviceState | None = None
    shell_tools: frozenset[str] = frozenset()
    cleanup: Mapping[str, Any] | None = None
    harness_seconds: Mapping[str, float] = field(default_factory=dict)
    relay_log: str | None = None
    #: How the agent was confined (`run.confine.AgentConfinement.record`): result.json's `sandbox`.
    sandbox: Mapping[str, Any] | None = None

    @property
    def relay_log_path(self) -> Path | None:
        return self.run_dir / self.relay_log if self.relay_log else None

    @property
    def transcript_path(self) -> Path:
        return self.run_dir / "claude.jsonl"

    @property
    def timing_path(self) -> Path:
        return self.run_dir / "claude.timing.jsonl"


def audit_inputs(run: Run) -> dict[str, Any]:
    """The verdict's inputs that are not files of the run directory, for result.json (`auditInputs`)."""
    process = run.process
    return {
        "process": {
            "exitCode": process.exit_code,
            "timedOut": process.timed_out,
            "signal": process.signal,
            "wallClockSeconds": process.wall_clock_seconds,
            "stoppedBecause": process.stopped_because,
            "endedAfterResult": process.ended_after_result,
        },
        "deviceAwareTools": sorted(run.device_aware_tools),
        "probeError": run.probe_error,
        "deviceLost": run.device_lost,
        "screenUnavailableReason": run.screen.unavailable_reason if run.screen is not None else None,
        "shellTools": sorted(run.shell_tools),
        "deviceState": _device_state_inputs(run.device_state),
        "relayLog": run.relay_log,
    }


#: Where a run directory keeps its device reads (checks/read.py writes them).
DEVICE_BEFORE_FILE = "device-before.json"
DEVICE_AFTER_FILE = "device-after.json"


def _device_state_inputs(state: DeviceState | None) -> dict[str, Any] | None:
    if state is None:
        return None
    return {
        "before": DEVICE_BEFORE_FILE if state.before is not None else None,
        "after": DEVICE_AFTER_FILE if state.after is not None else None,
        "unavailableReason": state.unavailable,
    }
