"""The checks stage: a suite's validated `verify.device` entries -> typed specs, the reads they need, and Checks from the reads.

One module per kind, each with a typed `Spec` (`parse(entry)`), a pure reader half (`reads(spec)`:
the device commands; `snapshot(spec, device_reads)`: their output -> a JSON-serialisable
snapshot) and a pure validator (`validate(before, after, spec, context) -> Check`). `read.py` is
the only module here that talks to a device: every check's reads in one batched round trip.
`cleanup.py` computes what to undo from the same reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from pytest_agentbench.checks import appops, content, eventlog, jsonfile, media, prefs, report, sqlite
from pytest_agentbench.checks.base import Check, CheckContext, DeviceReads, RawRead, Read, failed
from pytest_agentbench.checks.cleanup import Tracker, device_wide_trackers, trackers_for
from pytest_agentbench.checks.seed import SeedStep

#: Kind name (as a suite writes it) -> its module.
KINDS: Mapping[str, ModuleType] = {
    module.KIND: module for module in (prefs, jsonfile, sqlite, content, appops, media, eventlog, report)
}
#: Kinds whose subject is the device (every kind but `report`, which judges the final answer; its `shows`
#: reads an event log only to tie the answer to this run).
DEVICE_KINDS = tuple(kind for kind, module in KINDS.items() if kind != report.KIND)


@dataclass(frozen=True)
class DeviceCheck:
    """One typed `verify.device` entry: its kind and Spec."""

    kind: str
    spec: Any

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def module(self) -> ModuleType:
        return KINDS[self.kind]

    def reads(self) -> tuple[Read, ...]:
        return self.module.reads(self.spec)

    def snapshot(self, device: DeviceReads) -> dict[str, Any]:
        return self.module.snapshot(self.spec, device)


def parse_device_checks(entries: Iterable[Mapping[str, Any]],
                        spaces: Sequence[Mapping[str, str]] = ()) -> tuple[DeviceCheck, ...]:
    """Validated `verify.device` entries (the suite stage checked them) -> DeviceChecks.

    Args:
        entries: The entries, their drawn values filled in.
        spaces: Per entry, the key path of each string that held a drawn `{param}` -> the values it
            could have been (`suite.spaces.device_spaces`): those operands are random, and the kinds
            that look through records count their other candidates (`checks.records`).

    Raises:
        ValueError: An entry of an unknown kind (the suite schema refuses it first).
    """
    checks = []
    for index, entry in enumerate(entries):
        kind = entry.get("kind")
        if kind not in KINDS:
            raise ValueError(f"unknown device check kind {kind!r}; expected one of {', '.join(KINDS)}")
        drawn = spaces[index] if index < len(spaces) else {}
        module = KINDS[kind]
        spec = module.parse(entry, drawn) if getattr(module, "SEARCHES_RECORDS", False) else module.parse(entry)
        checks.append(DeviceCheck(kind, spec))
    return tuple(checks)


def unique_reads(reads: Iterable[Read]) -> tuple[Read, ...]:
    """Reads in first-seen order, one per key."""
    seen: dict[str, Read] = {}
    for read in reads:
        seen.setdefault(read.key, read)
    return tuple(seen.values())


def check_reads(checks: Sequence[DeviceCheck], *, before: bool) -> tuple[Read, ...]:
    """The reads the checks need after the run (or before it: only kinds that compare with the before-snapshot)."""
    return unique_reads(read for check in checks if not before or check.module.USES_BEFORE for read in check.reads())


def evaluate(
    checks: Sequence[DeviceCheck],
    before: DeviceReads | None,
    after: DeviceReads | None,
    context: CheckContext,
    *,
    unavailable: str | None = None,
) -> list[Check]:
    """Snapshots from the reads, then every check's validator, in suite order.

    Args:
        checks: The suite's device checks.
        before: The reads at the end of preflight (None when there were none).
        after: The reads after the run (None when the device could not be read).
        context: The final answer.
        unavailable: Why `after` is missing, for the failed checks' sentence.

    Returns:
        One Check per device check.
    """
    results = []
    for check in checks:
        if after is None and check.reads():
            why = unavailable or "the device state was not read after the run"
            results.append(failed(check.kind, check.name, check.spec.describe(), why))
            continue
        try:
            before_snapshot = check.snapshot(before) if before is not None and check.module.USES_BEFORE else None
            after_snapshot = check.snapshot(after or DeviceReads())
            results.append(check.module.validate(before_snapshot, after_snapshot, check.spec, context))
        except Exception as exc:  # noqa: BLE001 - a checker bug must fail its check with a sentence, not the audit
            why = (f"the {check.kind} check could not judge what the device answered ({type(exc).__name__}: {exc}); "
                   "this is a bug in the checker, please report it with the run directory")
            results.append(failed(check.kind, check.name, check.spec.describe(), why))
    return results


@dataclass(frozen=True)
class SuiteChecks:
    """A suite's device checks, the sources cleanup watches, and its `cleanup:` steps: everything that reads the device."""

    checks: tuple[DeviceCheck, ...]
    trackers: tuple[Tracker, ...]
    steps: tuple[Mapping[str, Any], ...]

    def before_reads(self) -> tuple[Read, ...]:
        """What the end of preflight reads: the checks that compare with it, and every watched source but the device-wide ones.

        Cleanup compares the phone-wide sources (processes, every app-op, shared storage) with the
        baseline only, so the before-snapshot (an audit input) does not carry them.
        """
        wide = {tracker.read.key for tracker in device_wide_trackers()}
        return unique_reads([*check_reads(self.checks, before=True),
                             *(tracker.read for tracker in self.trackers if tracker.read.key not in wide)])

    def after_reads(self) -> tuple[Read, ...]:
        """What the start of post-run reads: every check's source, and every watched source."""
        return unique_reads([*check_reads(self.checks, before=False), *(tracker.read for tracker in self.trackers)])

    def baseline_reads(self) -> tuple[Read, ...]:
        """What preflight reads before it resets and seeds anything: every watched source (cleanup's baseline)."""
        return unique_reads(tracker.read for tracker in self.trackers)

    @property
    def reads_device(self) -> bool:
        return bool(self.after_reads() or self.steps)


def suite_checks(device_entries: Iterable[Mapping[str, Any]], cleanup_steps: Iterable[Mapping[str, Any]] = (),
                 seeds: Iterable[SeedStep] = (), *, device_wide: bool = False,
                 parsed: tuple[DeviceCheck, ...] | None = None) -> SuiteChecks:
    """A suite's `verify.device` entries, `cleanup:` steps and `preflight.seed` steps -> SuiteChecks.

    With `device_wide`, cleanup also watches the whole phone (processes first, so a daemon is
    gone before anything is put back; then every app-op and shared storage), as every run does.
    `parsed` are the entries' typed checks when the caller has them (a Suite parses its own at
    load: `suite.checks_of_suite`).
    """
    entries, steps = tuple(device_entries), tuple(cleanup_steps)
    trackers = trackers_for(entries, steps, seeds)
    if device_wide:
        processes, *rest = device_wide_trackers()
        trackers = (processes, *trackers, *rest)
    return SuiteChecks(parse_device_checks(entries) if parsed is None else parsed, trackers, steps)


__all__ = [
    "DEVICE_KINDS", "KINDS", "Check", "CheckContext", "DeviceCheck", "DeviceReads", "RawRead", "Read", "SuiteChecks",
    "check_reads", "evaluate", "parse_device_checks", "suite_checks", "unique_reads",
]
