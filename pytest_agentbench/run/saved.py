"""A saved run directory -> the same Run record the live run audited (result.json's inputs, screen.xml), nothing run."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_agentbench.checks.read import load_reads
from pytest_agentbench.device.uiautomator import parse_hierarchy
from pytest_agentbench.errors import AgentbenchError, SavedRunError
from pytest_agentbench.run.record import DeviceState, ProcessOutcome, Run, ScreenSnapshot
from pytest_agentbench.suite import load_suite
from pytest_agentbench.suite.instance import instantiate


def resolve_result_paths(path: Path) -> list[Path]:
    """A run directory, a result.json, or a directory of runs (a session's output) -> result.json paths.

    A directory without its own result.json stands for every run below it, in path order (the
    output layout `<suite>/<timestamp>-<id>/` sorts by suite, then by start time). Documents an
    earlier re-render wrote (under `rerendered/`) are left out: they point at the runs they
    re-audited and hold no transcript of their own.

    Raises:
        SavedRunError: No result.json there or below.
    """
    if path.is_dir():
        if (path / "result.json").is_file():
            return [path / "result.json"]
        below = sorted(found for found in path.rglob("result.json")
                       if found.is_file() and "rerendered" not in found.relative_to(path).parts)
        if below:
            return below
    elif path.is_file():
        return [path]
    raise SavedRunError(f"{path}: no result.json here or below; pass a run directory, its result.json, "
                        "or a session's output directory")


def read_saved_result(result_path: Path) -> dict[str, Any]:
    """Parse a saved result.json.

    Raises:
        SavedRunError: It cannot be read or is not a JSON object.
    """
    try:
        saved = json.loads(result_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SavedRunError(f"{result_path}: cannot read result.json: {exc}") from None
    if not isinstance(saved, dict):
        raise SavedRunError(f"{result_path}: expected a JSON object, got {type(saved).__name__}")
    return saved


def _process(inputs: Mapping[str, Any], saved: Mapping[str, Any]) -> ProcessOutcome:
    data = inputs.get("process")
    if data is None:
        # Runs saved before `auditInputs` existed kept the process outcome in snake case.
        legacy = saved.get("process") or {}
        data = {"exitCode": legacy.get("exit_code"), "timedOut": legacy.get("timed_out"),
                "signal": legacy.get("signal"), "wallClockSeconds": legacy.get("wall_clock_seconds")}
    return ProcessOutcome(
        exit_code=data.get("exitCode"),
        timed_out=bool(data.get("timedOut")),
        signal=data.get("signal"),
        wall_clock_seconds=float(data.get("wallClockSeconds") or 0.0),
        stopped_because=data.get("stoppedBecause"),
        ended_after_result=bool(data.get("endedAfterResult")),
    )


def _screen(run_dir: Path, unavailable_reason: str | None, has_screen_checks: bool) -> ScreenSnapshot | None:
    if not has_screen_checks:
        return None
    dump = run_dir / "screen.xml"
    if dump.is_file():
        try:
            return ScreenSnapshot(parse_hierarchy(dump.read_text(encoding="utf-8")))
        except ValueError as exc:
            return ScreenSnapshot(None, f"the saved screen.xml does not parse: {exc}")
    return ScreenSnapshot(None, unavailable_reason or "the run directory has no screen.xml")


def _device_state(run_dir: Path, inputs: Mapping[str, Any], has_device_checks: bool) -> DeviceState | None:
    """The device checks' reads as the run saved them (device-before.json, device-after.json, device-state/)."""
    if not has_device_checks:
        return None
    saved = inputs.get("deviceState") or {}
    after = load_reads(run_dir, "after")
    unavailable = saved.get("unavailableReason")
    if after is None and not unavailable:
        unavailable = "the run directory has no device-after.json"
    return DeviceState(load_reads(run_dir, "before"), after, unavailable)


def load_run(result_path: Path, rootdir: Path) -> tuple[Run, dict[str, Any]]:
    """Rebuild a saved run's Run record; the suite is loaded again from its file.

    Args:
        result_path: The run's result.json.
        rootdir: The pytest rootdir (suites are loaded relative to it).

    Returns:
        The Run record and the saved result document.

    Raises:
        SavedRunError: result.json is unreadable, names no suite, or the suite no longer loads.
    """
    saved = read_saved_result(result_path)
    run_dir = result_path.parent
    if not saved.get("suiteFile"):
        raise SavedRunError(f"{result_path} names no suiteFile")
    try:
        suite = load_suite(Path(saved["suiteFile"]), rootdir)
    except AgentbenchError as exc:
        raise SavedRunError(f"the suite of {run_dir} no longer loads: {exc}") from None
    instance = saved.get("instance") or {}
    if instance.get("repeat"):
        # The same seeded instance the run was: its values fill the verify strings again.
        try:
            values = instance.get("values") if isinstance(instance.get("values"), dict) else None
            suite = instantiate(suite, seed=int(instance.get("seed") or 0), repeat=int(instance["repeat"]), values=values)
        except (TypeError, ValueError) as exc:
            raise SavedRunError(f"{result_path}: its instance {instance!r} cannot be made again: {exc}") from None
    inputs = saved.get("auditInputs") or {}
    legacy_screen = (saved.get("screen") or {}).get("unavailableReason")
    fingerprints = saved.get("fingerprints") or {}
    agent = saved.get("agent") or {}
    run = Run(
        suite=suite,
        run_dir=run_dir,
        process=_process(inputs, saved),
        screen=_screen(run_dir, inputs.get("screenUnavailableReason", legacy_screen), bool(suite.verify.screen_includes)),
        device_aware_tools=frozenset(inputs.get("deviceAwareTools", saved.get("deviceAwareTools")) or ()),
        probe_error=inputs.get("probeError"),
        device_lost=inputs.get("deviceLost"),
        nodeid=saved.get("nodeid"),
        device_serial=(saved.get("device") or {}).get("serial"),
        agent_command=tuple(agent.get("command") or ()),
        requested_model=agent.get("requestedModel"),
        started_at=saved.get("startedAt"),
        finished_at=saved.get("finishedAt"),
        device_fingerprint=fingerprints.get("deviceFingerprint") or {},
        app_build=fingerprints.get("appBuild") or {},
        preflight_round_trips=(saved.get("preflight") or {}).get("roundTrips"),
        server_build=fingerprints.get("serverBuild"),
        server_build_components=fingerprints.get("serverBuildComponents") or {},
        device_state=_device_state(run_dir, inputs, bool(suite.verify.device)),
        shell_tools=frozenset(inputs.get("shellTools") or ()),
        cleanup=saved.get("cleanup"),
        harness_seconds=_harness_seconds(saved),
        sandbox=saved.get("sandbox"),
        relay_log=inputs.get("relayLog"),
    )
    return run, saved


def _harness_seconds(saved: Mapping[str, Any]) -> dict[str, float]:
    # Measured when the run was live (its audit included): a re-render measures nothing again.
    harness = (saved.get("timing") or {}).get("harness") or {}
    return {key: float(value) for key, value in harness.items() if isinstance(value, (int, float)) and not isinstance(value, bool)}
