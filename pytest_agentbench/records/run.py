"""A measured run -> one frozen Run record, and its saved inputs (`AuditInputs`) <-> result.json's `auditInputs`.

The live run builds the record (`run/execute.py`), a re-render rebuilds it from a run directory
(`run/saved.py`), and `audit.verdict.audit_run` judges it: the verdict has one set of inputs
and one place that decides it. What the audit reads that is not a file of the run directory
travels in `AuditInputs`, whose JSON form is the only one in the package.
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


#: How the harness begins `ProcessOutcome.stopped_because` when the agent program could not be
#: started at all (`run/execute.py`), and when its stream could not be written after it started.
NEVER_STARTED = "the agent never started"
STREAM_UNWRITTEN = "the harness could not save the agent's stream"


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
    #: The agent's last non-empty stderr line (its own words for why it stopped), shown beside a
    #: non-zero exit; the agent's claim, never evidence.
    last_stderr_line: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "exitCode": self.exit_code,
            "timedOut": self.timed_out,
            "signal": self.signal,
            "wallClockSeconds": self.wall_clock_seconds,
            "stoppedBecause": self.stopped_because,
            "endedAfterResult": self.ended_after_result,
            "lastStderrLine": self.last_stderr_line,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProcessOutcome:
        wall = data.get("wallClockSeconds")
        return cls(
            exit_code=data.get("exitCode"),
            timed_out=bool(data.get("timedOut")),
            signal=data.get("signal"),
            # Kept as written (an int stays an int) so a document reads back to itself.
            wall_clock_seconds=wall if isinstance(wall, (int, float)) and not isinstance(wall, bool) else 0.0,
            stopped_because=data.get("stoppedBecause"),
            ended_after_result=bool(data.get("endedAfterResult")),
            last_stderr_line=data.get("lastStderrLine"),
        )


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
        suite_digest: The suite declaration's digest (with the `--model` override), measured
            by `run/execute.py`; None in a record rebuilt from a run saved without it.
        cli_version: The agent CLI's own `--version` (once per session and command); the
            audit prefers the version the stream's init event names.
        sealed_before_agent: The audit inputs that existed before the agent started (the
            before-snapshot), name -> SHA-256 as sealed then (`run.seal`).
        seal_problems: Audit inputs that no longer match their seals (changed during the run, or
            since it was saved); any makes the run incomplete.
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
    suite_digest: str | None = None
    cli_version: str | None = None
    sealed_before_agent: Mapping[str, str] = field(default_factory=dict)
    seal_problems: tuple[str, ...] = ()
    relay_log: str | None = None
    #: How the agent was confined (`run.confine.AgentConfinement.record`): on or off, what was
    #: asked, the policy; None for a run recorded before the sandbox existed.
    sandbox: Mapping[str, Any] | None = None
    #: The model bridge log's file name (`model-bridge.jsonl`) when the run was confined with a
    #: model endpoint: the harness's record of the connections to the model host. None: no record.
    bridge_log: str | None = None

    @property
    def relay_log_path(self) -> Path | None:
        return self.run_dir / self.relay_log if self.relay_log else None

    @property
    def bridge_log_path(self) -> Path | None:
        return self.run_dir / self.bridge_log if self.bridge_log else None

    @property
    def confined(self) -> bool:
        """Whether the agent ran in the sandbox (so it could not reach the run directory or the device but through the relay)."""
        return isinstance(self.sandbox, Mapping) and self.sandbox.get("mode") == "on"

    @property
    def transcript_path(self) -> Path:
        return self.run_dir / "claude.jsonl"

    @property
    def timing_path(self) -> Path:
        return self.run_dir / "claude.timing.jsonl"


#: Where a run directory keeps its device reads (checks/read.py writes them).
DEVICE_BEFORE_FILE = "device-before.json"
DEVICE_AFTER_FILE = "device-after.json"


@dataclass(frozen=True)
class DeviceStateFiles:
    """Which device-read files a run saved, and why the after-read is missing if it is."""

    before: str | None
    after: str | None
    unavailable_reason: str | None

    def to_json(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "unavailableReason": self.unavailable_reason}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DeviceStateFiles:
        return cls(data.get("before"), data.get("after"), data.get("unavailableReason"))


@dataclass(frozen=True)
class AuditInputs:
    """The verdict's inputs that are not files of the run directory (result.json `auditInputs`).

    Saved with every result so a re-audit of the saved run sees exactly what the live audit saw.
    """

    process: ProcessOutcome
    device_aware_tools: tuple[str, ...]
    probe_error: str | None
    device_lost: str | None
    screen_unavailable_reason: str | None
    shell_tools: tuple[str, ...]
    device_state: DeviceStateFiles | None
    relay_log: str | None = None
    bridge_log: str | None = None

    @classmethod
    def of(cls, run: Run) -> AuditInputs:
        state = run.device_state
        return cls(
            process=run.process,
            device_aware_tools=tuple(sorted(run.device_aware_tools)),
            probe_error=run.probe_error,
            device_lost=run.device_lost,
            screen_unavailable_reason=run.screen.unavailable_reason if run.screen is not None else None,
            shell_tools=tuple(sorted(run.shell_tools)),
            device_state=None if state is None else DeviceStateFiles(
                DEVICE_BEFORE_FILE if state.before is not None else None,
                DEVICE_AFTER_FILE if state.after is not None else None,
                state.unavailable,
            ),
            relay_log=run.relay_log,
            bridge_log=run.bridge_log,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "process": self.process.to_json(),
            "deviceAwareTools": list(self.device_aware_tools),
            "probeError": self.probe_error,
            "deviceLost": self.device_lost,
            "screenUnavailableReason": self.screen_unavailable_reason,
            "shellTools": list(self.shell_tools),
            "deviceState": self.device_state.to_json() if self.device_state is not None else None,
            "relayLog": self.relay_log,
            # Only written when there is one, so documents of runs without a bridge read back unchanged.
            **({"bridgeLog": self.bridge_log} if self.bridge_log else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AuditInputs:
        state = data.get("deviceState")
        return cls(
            process=ProcessOutcome.from_json(data.get("process") or {}),
            device_aware_tools=tuple(data.get("deviceAwareTools") or ()),
            probe_error=data.get("probeError"),
            device_lost=data.get("deviceLost"),
            screen_unavailable_reason=data.get("screenUnavailableReason"),
            shell_tools=tuple(data.get("shellTools") or ()),
            device_state=DeviceStateFiles.from_json(state) if isinstance(state, Mapping) else None,
            relay_log=data.get("relayLog"),
            bridge_log=data.get("bridgeLog") if isinstance(data.get("bridgeLog"), str) else None,
        )
