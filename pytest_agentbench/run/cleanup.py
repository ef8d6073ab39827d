"""A finished run's before- and after-reads -> the undo commands and the suite's `cleanup:` steps run, the sources read again, the leftovers reported.

One adb round trip: every undo command and step (each with its own exit status) and then the
re-read of the watched sources, in one batched script (`checks/read.py`). The undo commands for
what is still changed are handed back, so the next run on the device retries them first. What the sources show
afterwards that they did not show before the run is reported as `cleanup left: ...`; cleanup
never changes a verdict and never raises for the device's sake.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.checks.base import DeviceReads, Read, cut
from pytest_agentbench.checks.cleanup import Action, leftovers, plan_cleanup
from pytest_agentbench.checks.read import read_device, save_reads, utc_now
from pytest_agentbench.errors import DeviceError

if TYPE_CHECKING:
    from pytest_agentbench.checks import SuiteChecks
    from pytest_agentbench.device.adb import Adb

CLEANUP_LOG = "cleanup.log"


def run_cleanup(
    adb: Adb,
    serial: str,
    checks: SuiteChecks,
    *,
    before: DeviceReads | None,
    after: DeviceReads | None,
    run_dir: Path,
    skip_because: str | None = None,
    now: Callable[[], datetime] = utc_now,
    unfinished: list[Action] | None = None,
) -> dict[str, Any] | None:
    """Undo what the run added, run the suite's cleanup steps, read the sources again.

    Args:
        adb: The device layer.
        serial: The device (its claim is held again).
        checks: The suite's checks, watched sources and steps.
        before: The reads at the end of preflight.
        after: The reads after the run.
        run_dir: Where `device-cleanup.json` and `cleanup.log` go.
        skip_because: Why cleanup must not touch the device (someone else holds it, it went away).
        now: The clock that stamps the re-read.
        unfinished: Gets the undo commands for what the re-read still shows changed, which the
            next run on this device retries before its baseline read.

    Returns:
        The cleanup report for result.json (`actions`, `failed`, `left`), or None when the suite
        has nothing to clean up.
    """
    if not checks.trackers and not checks.steps:
        return None
    if skip_because:
        return _report(run_dir, [], [], [f"cleanup did not run: {skip_because}"])
    plan = plan_cleanup(checks.trackers, checks.steps, before, after)
    action_reads = [Read(f"cleanup:{index}", action.script) for index, action in enumerate(plan.actions)]
    tracker_reads = [tracker.read for tracker in checks.trackers]
    try:
        batch = read_device(adb, serial, [*action_reads, *tracker_reads], now=now)
    except DeviceError as exc:
        return _report(run_dir, [], [], [f"cleanup could not reach the device: {exc}"])
    actions, failed = [], []
    for read, action in zip(action_reads, plan.actions):
        raw = batch.reads.get(read.key)
        status = raw.status if raw is not None else None
        output = cut(raw.text, 300) if raw is not None else ""
        actions.append({"action": action.description, "command": action.script.text, "status": status, "output": output})
        if action.must_succeed and (status != 0 or "Error" in output or "Exception" in output):
            failed.append(f"{action.description} (`{action.script.text}`) exited {status}: {output or 'no output'}")
    reread = DeviceReads({read.key: batch.reads.reads[read.key] for read in tracker_reads if read.key in batch.reads.reads},
                         batch.reads.read_at)
    if tracker_reads:
        save_reads(reread, run_dir, "cleanup")
    left = [*plan.unknown, *leftovers(checks.trackers, before, reread)]
    if left and unfinished is not None:
        # Never a kill: by the next run the pid may be another process's.
        retry = [tracker for tracker in checks.trackers if tracker.source != "processes"]
        unfinished += plan_cleanup(retry, (), before, reread).actions
    return _report(run_dir, actions, failed, left)


def _report(run_dir: Path, actions: list[dict[str, Any]], failed: list[str], left: list[str]) -> dict[str, Any]:
    lines = [f"{'ok  ' if entry['status'] == 0 else 'FAIL'} {entry['action']}: $ {entry['command']}"
             + (f" -> {entry['output']}" if entry["output"] else "") for entry in actions]
    lines += [f"cleanup left: {item}" for item in left]
    if lines:
        with open(run_dir / CLEANUP_LOG, "a", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
    return {"actions": actions, "failed": failed, "left": left}
