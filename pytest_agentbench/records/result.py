"""An audited, compared run <-> result.json (`RunResult`, the only writer and reader of that file); a session's runs <-> the session document (`SessionResult`).

Every consumer of a saved run (re-render, the session summary and aggregation, A/B, the HTML
page) reads it through `RunResult.from_json`, and `to_json` writes the document key for key as
`schemaVersion` 1 has always had it, so `to_json(from_json(doc)) == doc`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_agentbench.errors import SavedRunError
from pytest_agentbench.records.audit import Stumble, Verdict, check_from_json, check_to_json
from pytest_agentbench.records.comparison import BaselineComparison, Snippet
from pytest_agentbench.records.parts import CleanupReport, Confinement, InstanceRef, RunMetrics, Times
from pytest_agentbench.records.run import AuditInputs

from pytest_agentbench.checks.base import Check

RESULT_SCHEMA_VERSION = 1
FINGERPRINT_KEYS = ("appBuild", "suiteDigest", "deviceFingerprint", "claudeCodeVersion", "serverBuild", "observedModel")


def _plain(value: Any) -> Any:
    """A deep copy of a JSON value, so a frozen record never shares a mutable dict with its caller."""
    return copy.deepcopy(value)


@dataclass(frozen=True)
class Fingerprints:
    """What a baseline is compared on: the app build, suite, device, agent CLI, server build and model.

    Attributes:
        values: `FINGERPRINT_KEYS` -> the value this run measured (`unknown` where it could not).
        server_build_components: The non-secret parts of `serverBuild`, to say which part moved.
    """

    values: Mapping[str, Any]
    server_build_components: Mapping[str, str] = field(default_factory=dict)

    def get(self, key: str) -> Any:
        return self.values.get(key)

    @property
    def observed_model(self) -> Any:
        return self.values.get("observedModel")

    @property
    def claude_code_version(self) -> Any:
        return self.values.get("claudeCodeVersion")

    def comparable(self) -> dict[str, Any]:
        """The six compared fingerprints, as a baseline block records them."""
        return {key: _plain(self.values.get(key)) for key in FINGERPRINT_KEYS}

    def to_json(self) -> dict[str, Any]:
        return {**self.comparable(), "serverBuildComponents": dict(self.server_build_components)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Fingerprints:
        data = data or {}
        return cls({key: _plain(data.get(key)) for key in FINGERPRINT_KEYS}, dict(data.get("serverBuildComponents") or {}))


@dataclass(frozen=True)
class Rerendered:
    """A re-render's note: the scoring code that re-audited the run and the verdict recorded live."""

    scoring_code: str
    verdict_when_recorded: Mapping[str, Any] | None

    @property
    def recorded_status(self) -> str | None:
        """The verdict status recorded live, if the note has one."""
        return (self.verdict_when_recorded or {}).get("status")

    def to_json(self) -> dict[str, Any]:
        return {"scoringCode": self.scoring_code, "verdictWhenRecorded": _plain(self.verdict_when_recorded)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Rerendered:
        return cls(data.get("scoringCode", ""), _plain(data.get("verdictWhenRecorded")))


@dataclass(frozen=True)
class RunResult:
    """One run's result.json, typed.

    Attributes:
        suite, suite_file, nodeid, run_directory, started_at, finished_at: Where and when.
        instance: The seeded task instance (`suite.instance.Instance.to_json()`), or None.
        device_serial, agent_command, requested_model: What ran it.
        episode_ending: How the agent said its episode ended (`task_complete`, `no_tool_call`,
            `empty_reply`, `self_undo`, `max_turns`, `max_budget`, `api_error`, `server_gone`), for
            an agent that reports it (agentbench-agent); None otherwise, and then not written.
        verdict, checks, stumbles, metrics, tool_sequence: The audit's conclusions.
        baseline, baseline_tool_sequence: The suite's recorded baseline (None: none recorded).
        comparison: This run against that baseline.
        fingerprints: What this run measured to compare on.
        snippet: Whether baseline.yml was written.
        scoring_code: The digest of the code that audited the run.
        audit_inputs: The verdict's saved inputs (None only in documents saved before them).
        seals: Each audit input file of the run directory -> its SHA-256 (`run.seal`), so a
            re-render judges only the files the run judged.
        preflight_round_trips: adb round trips preflight spent.
        cleanup: What cleanup did and left (shown, never judged).
        timing: Where the time went: `agent` (the time split, or None) and `harness`.
        rerendered: Set on a re-render's document.
        sandbox: How the agent was confined (`run.confine.AgentConfinement.record`); None for
            a run recorded before the sandbox existed.
        demo: The suite is a harness demo (`demo: true`): shown, never pooled into the session line.
        transcript_tail: The last tool calls, for a failure report; not part of result.json.
    """

    suite: str
    suite_file: str
    run_directory: str
    verdict: Verdict
    checks: tuple[Check, ...] = ()
    stumbles: tuple[Stumble, ...] = ()
    metrics: Mapping[str, Any] = field(default_factory=dict)
    tool_sequence: tuple[str, ...] = ()
    nodeid: str | None = None
    instance: Mapping[str, Any] | None = None
    started_at: str | None = None
    finished_at: str | None = None
    device_serial: str | None = None
    agent_command: tuple[str, ...] = ()
    requested_model: str | None = None
    episode_ending: str | None = None
    baseline: Mapping[str, Any] | None = None
    baseline_tool_sequence: tuple[str, ...] = ()
    comparison: BaselineComparison = field(default_factory=BaselineComparison)
    fingerprints: Fingerprints = field(default_factory=lambda: Fingerprints({}))
    snippet: Snippet = field(default_factory=lambda: Snippet(None))
    scoring_code: str = "unknown"
    audit_inputs: AuditInputs | None = None
    seals: Mapping[str, str] = field(default_factory=dict)
    preflight_round_trips: int | None = None
    cleanup: Mapping[str, Any] | None = None
    timing: Mapping[str, Any] = field(default_factory=lambda: {"agent": None, "harness": {}})
    rerendered: Rerendered | None = None
    sandbox: Mapping[str, Any] | None = None
    demo: bool = False
    transcript_tail: str | None = field(default=None, compare=False)

    @property
    def status(self) -> str:
        return self.verdict.status

    @property
    def run_dir(self) -> Path:
        return Path(self.run_directory)

    @property
    def run_id(self) -> str:
        """The run directory's name (`20261201T214935Z-799d023a`): what names this run on disk."""
        return Path(self.run_directory).name

    @property
    def repeat_index(self) -> int | None:
        """Which repeat of its suite this run was (1 for r1), None when not recorded."""
        ref = self.instance_ref
        value = ref.repeat if ref is not None else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def name(self) -> str:
        """The node id as pytest names the run (`suite.yml::bug-repro[r3]`), else the suite name."""
        return self.nodeid or self.suite or "?"

    @property
    def instance_ref(self) -> InstanceRef | None:
        return InstanceRef.from_json(self.instance)

    @property
    def instance_key(self) -> str | None:
        """The seeded instance id when the run had param values, else None (its repeats are not distinct instances)."""
        ref = self.instance_ref
        return ref.id if ref is not None and ref.seeded else None

    @property
    def instance_id(self) -> str | None:
        """The instance id as the item names it (`r3`, `r3-42-Bob`), None for a run without one."""
        ref = self.instance_ref
        return ref.id or None if ref is not None else None

    @property
    def run_metrics(self) -> RunMetrics:
        return RunMetrics.from_json(self.metrics)

    @property
    def times(self) -> Times:
        return Times.from_json(self.timing)

    @property
    def cleanup_report(self) -> CleanupReport | None:
        return CleanupReport.from_json(self.cleanup)

    @property
    def confinement(self) -> Confinement | None:
        return Confinement.from_json(self.sandbox)

    @property
    def baseline_recorded_at(self) -> str | None:
        """When the suite's baseline was recorded; None without a baseline."""
        if not self.baseline:
            return None
        return str(self.baseline.get("recordedAt") or "unknown")

    def with_tail(self, tail: str | None) -> RunResult:
        return replace(self, transcript_tail=tail)

    # ------------------------------------------------------------------ JSON

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "schemaVersion": RESULT_SCHEMA_VERSION,
            "suite": self.suite,
            "suiteFile": self.suite_file,
            "nodeid": self.nodeid,
            "instance": _plain(self.instance),
            "runDirectory": self.run_directory,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "device": {"serial": self.device_serial},
            "agent": {"command": list(self.agent_command), "requestedModel": self.requested_model,
                      **({"episodeEnding": self.episode_ending} if self.episode_ending is not None else {})},
            "verdict": self.verdict.to_json(),
            "checks": [check_to_json(check) for check in self.checks],
            "stumbles": [stumble.to_json() for stumble in self.stumbles],
            "metrics": _plain(dict(self.metrics)),
            "toolSequence": list(self.tool_sequence),
            "baseline": _plain(self.baseline),
            "baselineToolSequence": list(self.baseline_tool_sequence),
            "comparison": self.comparison.to_json(),
            "fingerprints": self.fingerprints.to_json(),
            "snippet": self.snippet.to_json(),
            "scoringCode": self.scoring_code,
            "auditInputs": self.audit_inputs.to_json() if self.audit_inputs is not None else {},
            "seals": {"sha256": dict(self.seals)},
            "preflight": {"roundTrips": self.preflight_round_trips, "appBuild": _plain(self.fingerprints.get("appBuild"))},
            "cleanup": _plain(self.cleanup),
            "timing": _plain(dict(self.timing)),
            "sandbox": _plain(self.sandbox),
        }
        if self.rerendered is not None:
            document["rerendered"] = self.rerendered.to_json()
        if self.demo:  # written only for a demo suite's run, so every other document keeps its keys
            document["demo"] = True
        return document

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunResult:
        """A result.json document -> the record (documents of older harnesses: missing parts empty)."""
        device = data.get("device") or {}
        agent = data.get("agent") or {}
        inputs = data.get("auditInputs")
        rerendered = data.get("rerendered")
        return cls(
            suite=str(data.get("suite") or ""),
            suite_file=str(data.get("suiteFile") or ""),
            run_directory=str(data.get("runDirectory") or ""),
            verdict=Verdict.from_json(data.get("verdict")),
            checks=tuple(check_from_json(check) for check in data.get("checks") or ()),
            stumbles=tuple(Stumble.from_json(stumble) for stumble in data.get("stumbles") or ()),
            metrics=_plain(dict(data.get("metrics") or {})),
            tool_sequence=tuple(data.get("toolSequence") or ()),
            nodeid=data.get("nodeid"),
            instance=_plain(data.get("instance")),
            started_at=data.get("startedAt"),
            finished_at=data.get("finishedAt"),
            device_serial=device.get("serial"),
            agent_command=tuple(agent.get("command") or ()),
            requested_model=agent.get("requestedModel"),
            episode_ending=agent.get("episodeEnding"),
            baseline=_plain(data.get("baseline")),
            baseline_tool_sequence=tuple(data.get("baselineToolSequence") or ()),
            comparison=BaselineComparison.from_json(data.get("comparison")),
            fingerprints=Fingerprints.from_json(data.get("fingerprints")),
            snippet=Snippet.from_json(data.get("snippet")),
            scoring_code=str(data.get("scoringCode") or "unknown"),
            audit_inputs=AuditInputs.from_json(inputs) if isinstance(inputs, Mapping) and inputs else None,
            seals=dict((data.get("seals") or {}).get("sha256") or {}),
            preflight_round_trips=(data.get("preflight") or {}).get("roundTrips"),
            cleanup=_plain(data.get("cleanup")),
            timing={"agent": None, "harness": {}, **_plain(dict(data.get("timing") or {}))},
            rerendered=Rerendered.from_json(rerendered) if isinstance(rerendered, Mapping) else None,
            sandbox=_plain(data.get("sandbox")),
            demo=data.get("demo") is True,
        )

    def write(self, path: Path) -> None:
        """Write result.json (the only place it is written)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> RunResult:
        """Read result.json (the only place it is read).

        Raises:
            SavedRunError: It cannot be read or is not a JSON object.
        """
        return cls.from_json(read_document(path))


def read_document(path: Path) -> dict[str, Any]:
    """A saved result.json as the JSON object it holds.

    Raises:
        SavedRunError: It cannot be read or is not a JSON object.
    """
    try:
        saved = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SavedRunError(f"{path}: cannot read result.json: {exc}") from None
    if not isinstance(saved, dict):
        raise SavedRunError(f"{path}: expected a JSON object, got {type(saved).__name__}")
    return saved


@dataclass(frozen=True)
class SessionResult:
    """The `--agentbench-json` session document: every run's result, counts, timing, statistics, the comparison.

    Attributes:
        runs: The runs that left a result.json, in run order.
        unrecorded: Runs that left none (`Unrecorded.to_json()`), counted as incomplete.
        statistics: `report.aggregate.statistics_block(...)`, when computed.
        comparison: `report.ab.comparison_block(...)` with `--agentbench-compare`.
        interrupted: A session that ended early: `{"by", "runsCollected", "notRun"}` (what stopped
            it, how many runs it collected, the node ids of those that got no verdict).
        invalid_suites: Suite files that did not load, `{"nodeid", "problems"}` each (`invalidSuites`,
            written only when there is one): not runs, so in no count or statistic.
    """

    runs: tuple[RunResult, ...]
    started_at: str | None = None
    finished_at: str | None = None
    seed: int | None = None
    #: Where the seed came from: `given` (--agentbench-seed), `drawn` (fresh and secret), `last`
    #: (the last session's, for a rerun such as --lf), `baseline` (the --agentbench-compare
    #: document's); None in documents written before it was kept.
    seed_source: str | None = None
    repeat: int | None = None
    unrecorded: tuple[Mapping[str, Any], ...] = ()
    statistics: Mapping[str, Any] | None = None
    comparison: Mapping[str, Any] | None = None
    timing: Mapping[str, Any] | None = None
    interrupted: Mapping[str, Any] | None = None
    invalid_suites: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def of(cls, runs: Sequence[RunResult], **fields: Any) -> SessionResult:
        """A session of these runs, its `timing` summed from theirs (`session_timing`)."""
        return cls(runs=tuple(runs), timing=session_timing(runs), **fields)

    def counts(self) -> dict[str, int]:
        counts = {"passed": 0, "failed": 0, "incomplete": 0}
        for run in self.runs:
            counts[run.status] = counts.get(run.status, 0) + 1
        counts["incomplete"] += len(self.unrecorded)
        return counts

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "schemaVersion": RESULT_SCHEMA_VERSION,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "seed": self.seed,
            "seedSource": self.seed_source,
            "repeat": self.repeat,
            "counts": self.counts(),
            "timing": _plain(dict(self.timing or {})),
            "runs": [run.to_json() for run in self.runs],
            "unrecorded": [_plain(dict(run)) for run in self.unrecorded],
        }
        if self.statistics is not None:
            document["statistics"] = _plain(dict(self.statistics))
        if self.comparison is not None:
            document["comparison"] = _plain(dict(self.comparison))
        if self.interrupted is not None:
            document["interrupted"] = _plain(dict(self.interrupted))
        if self.invalid_suites:
            document["invalidSuites"] = [_plain(dict(suite)) for suite in self.invalid_suites]
        return document

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionResult:
        runs: Sequence[Any] = data.get("runs") or ()
        return cls(
            runs=tuple(RunResult.from_json(run) for run in runs if isinstance(run, Mapping)),
            started_at=data.get("startedAt"),
            finished_at=data.get("finishedAt"),
            seed=data.get("seed"),
            seed_source=data.get("seedSource"),
            repeat=data.get("repeat"),
            unrecorded=tuple(_plain(dict(run)) for run in data.get("unrecorded") or () if isinstance(run, Mapping)),
            statistics=_plain(data.get("statistics")),
            comparison=_plain(data.get("comparison")),
            timing=_plain(data.get("timing")),
            interrupted=_plain(data.get("interrupted")) if isinstance(data.get("interrupted"), Mapping) else None,
            invalid_suites=tuple(_plain(dict(suite)) for suite in data.get("invalidSuites") or () if isinstance(suite, Mapping)),
        )


_AGENT_PARTS = (("wallClockSeconds", "wall_clock_seconds"), ("startupSeconds", "startup_seconds"),
                ("modelSeconds", "model_seconds"), ("toolSeconds", "tool_seconds"), ("afterResultSeconds", "after_result_seconds"))


def session_timing(runs: Sequence[RunResult]) -> dict[str, Any]:
    """Where the session's time went: the runs' time splits and harness times, summed.

    Runs without a split (saved before the timing sidecar existed) are counted in
    `runsWithoutSplit` and left out of the agent sums, not guessed.
    """
    agent = {key: 0.0 for key, _ in _AGENT_PARTS}
    harness: dict[str, float] = {}
    split = unsplit = 0
    for run in runs:
        times = run.times
        if times.agent is not None:
            split += 1
            for key, attribute in _AGENT_PARTS:
                agent[key] += getattr(times.agent, attribute) or 0.0
        else:
            unsplit += 1
        for key, value in times.harness.items():
            harness[key] = harness.get(key, 0.0) + value
    return {
        "runsWithSplit": split,
        "runsWithoutSplit": unsplit,
        "agent": {key: round(value, 3) for key, value in agent.items()},
        "harness": {key: round(value, 3) for key, value in harness.items()},
    }
