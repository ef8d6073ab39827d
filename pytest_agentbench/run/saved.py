"""A saved run directory -> the same Run record the live run audited (result.json's inputs, screen.xml), nothing run."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_agentbench.checks.read import load_reads
from pytest_agentbench.device.uiautomator import parse_hierarchy
from pytest_agentbench.errors import AgentbenchError, SavedRunError
from pytest_agentbench.records.result import RunResult, read_document
from pytest_agentbench.records.run import AuditInputs, DeviceState, Run, ScreenSnapshot
from pytest_agentbench.run.seal import broken_seals
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


def _audit_inputs(saved: RunResult, document: Mapping[str, Any]) -> AuditInputs:
    """The saved audit inputs; runs saved before `auditInputs` existed kept a few of them elsewhere."""
    if saved.audit_inputs is not None:
        return saved.audit_inputs
    legacy = document.get("process") or {}
    return AuditInputs.from_json({
        "process": {"exitCode": legacy.get("exit_code"), "timedOut": legacy.get("timed_out"),
                    "signal": legacy.get("signal"), "wallClockSeconds": float(legacy.get("wall_clock_seconds") or 0.0)},
        "deviceAwareTools": document.get("deviceAwareTools") or (),
        "screenUnavailableReason": (document.get("screen") or {}).get("unavailableReason"),
    })


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


def _device_state(run_dir: Path, inputs: AuditInputs, has_device_checks: bool) -> DeviceState | None:
    """The device checks' reads as the run saved them (device-before.json, device-after.json, device-state/)."""
    if not has_device_checks:
        return None
    after = load_reads(run_dir, "after")
    unavailable = inputs.device_state.unavailable_reason if inputs.device_state is not None else None
    if after is None and not unavailable:
        unavailable = "the run directory has no device-after.json"
    return DeviceState(load_reads(run_dir, "before"), after, unavailable)


def load_run(result_path: Path, rootdir: Path) -> tuple[Run, RunResult]:
    """Rebuild a saved run's Run record; the suite is loaded again from its file.

    Args:
        result_path: The run's result.json.
        rootdir: The pytest rootdir (suites are loaded relative to it).

    Returns:
        The Run record and the saved result.

    Raises:
        SavedRunError: result.json is unreadable, names no suite, or the suite no longer loads.
    """
    document = read_document(result_path)
    saved = RunResult.from_json(document)
    run_dir = result_path.parent
    if not saved.suite_file:
        raise SavedRunError(f"{result_path} names no suiteFile")
    try:
        suite = load_suite(Path(saved.suite_file), rootdir)
    except AgentbenchError as exc:
        raise SavedRunError(f"the suite of {run_dir} no longer loads: {exc}") from None
    instance = saved.instance or {}
    if instance.get("repeat"):
        # The same seeded instance the run was: its values fill the verify strings again.
        try:
            values = instance.get("values") if isinstance(instance.get("values"), dict) else None
            suite = instantiate(suite, seed=int(instance.get("seed") or 0), repeat=int(instance["repeat"]), values=values)
        except (TypeError, ValueError) as exc:
            raise SavedRunError(f"{result_path}: its instance {instance!r} cannot be made again: {exc}") from None
    inputs = _audit_inputs(saved, document)
    fingerprints = saved.fingerprints
    run = Run(
        suite=suite,
        run_dir=run_dir,
        process=inputs.process,
        screen=_screen(run_dir, inputs.screen_unavailable_reason, bool(suite.verify.screen_includes)),
        device_aware_tools=frozenset(inputs.device_aware_tools),
        probe_error=inputs.probe_error,
        device_lost=inputs.device_lost,
        nodeid=saved.nodeid,
        device_serial=saved.device_serial,
        agent_command=saved.agent_command,
        requested_model=saved.requested_model,
        started_at=saved.started_at,
        finished_at=saved.finished_at,
        device_fingerprint=fingerprints.get("deviceFingerprint") or {},
        app_build=fingerprints.get("appBuild") or {},
        preflight_round_trips=saved.preflight_round_trips,
        server_build=fingerprints.get("serverBuild"),
        server_build_components=fingerprints.server_build_components,
        device_state=_device_state(run_dir, inputs, bool(suite.verify.device)),
        shell_tools=frozenset(inputs.shell_tools),
        cleanup=saved.cleanup,
        harness_seconds=_harness_seconds(saved),
        suite_digest=fingerprints.get("suiteDigest"),
        cli_version=fingerprints.get("claudeCodeVersion"),
        # Runs saved before seals existed have none to check.
        seal_problems=tuple(broken_seals(saved.seals, run_dir)) if saved.seals else (),
        relay_log=inputs.relay_log,
        bridge_log=inputs.bridge_log,
        sandbox=saved.sandbox,
    )
    return run, saved


def _harness_seconds(saved: RunResult) -> dict[str, float]:
    # Measured when the run was live (its audit included): a re-render measures nothing again.
    harness = saved.timing.get("harness") or {}
    return {key: float(value) for key, value in harness.items() if isinstance(value, (int, float)) and not isinstance(value, bool)}
