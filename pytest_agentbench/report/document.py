"""An audited run + its baseline -> the result.json document (secrets scrubbed); a session's runs -> the session document."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.baseline.compare import comparability_flags, metric_rows, sequence_diff
from pytest_agentbench.redact import MASK, is_secret_name, mask_url_credentials

RESULT_SCHEMA_VERSION = 1
FINGERPRINT_KEYS = ("appBuild", "suiteDigest", "deviceFingerprint", "claudeCodeVersion", "serverBuild", "observedModel")
# Secret values shorter than this are not searched for in free text: a 1-3 character "secret"
# would mask ordinary words.
_MIN_SECRET_CHARS = 6


# --------------------------------------------------------------------------- secrets


def scrub(value: Any, environ: Mapping[str, str] | None = None) -> Any:
    """A copy of a JSON-like value with URL credentials and the values of secret variables masked.

    The agent's reply and tool results are copied into the report as evidence; an agent that
    echoes a token or a proxy URL must not leak it into result.json or the terminal.

    Args:
        value: Strings, numbers, lists and dicts.
        environ: The run's environment; values of secret-named variables (redact.is_secret_name)
            and URL credentials found in it are masked wherever they appear.

    Returns:
        The scrubbed copy.
    """
    secrets = sorted(
        {text for name, text in (environ or {}).items() if is_secret_name(name) and len(text) >= _MIN_SECRET_CHARS},
        key=len,
        reverse=True,
    )
    return _scrub(value, secrets)


def _scrub(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        text = mask_url_credentials(value)
        for secret in secrets:
            text = text.replace(secret, MASK)
        return text
    if isinstance(value, Mapping):
        return {key: _scrub(item, secrets) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(item, secrets) for item in value]
    return value


# --------------------------------------------------------------------------- result.json


def _plain(value: Any) -> Any:
    """Dataclasses (Audit, Check, ...) and tuples -> dicts and lists, so JSON and tests see one shape."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def build_result_document(
    *,
    suite_name: str,
    suite_file: str,
    run_dir: str,
    audit: Any,
    fingerprints: Mapping[str, Any],
    scoring_code: str,
    nodeid: str | None = None,
    started_at: str | None = None,
    finished_at: str | None = None,
    device_serial: str | None = None,
    agent_command: Sequence[str] = (),
    requested_model: str | None = None,
    server_build_components: Mapping[str, str] | None = None,
    baseline: Mapping[str, Any] | None = None,
    baseline_tool_sequence: Sequence[str] = (),
    snippet_path: str | None = None,
    snippet_blockers: Sequence[str] = (),
    audit_inputs: Mapping[str, Any] | None = None,
    preflight_round_trips: int | None = None,
    environ: Mapping[str, str] | None = None,
    instance: Mapping[str, Any] | None = None,
    cleanup: Mapping[str, Any] | None = None,
    timing: Mapping[str, Any] | None = None,
    sandbox: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The result.json document of one run: metadata, audit, metrics, comparison and fingerprints.

    Args:
        suite_name: The suite's name.
        suite_file: The suite file's path.
        run_dir: The run directory.
        audit: `audit.Audit` (or the same shape as a dict).
        fingerprints: This run's `appBuild`, `suiteDigest`, `deviceFingerprint`,
            `claudeCodeVersion`, `serverBuild`, `observedModel`.
        scoring_code: `audit.scoring.scoring_code_digest()` of the code that audited the run.
        nodeid: The pytest node id.
        started_at: ISO time the agent started.
        finished_at: ISO time the agent ended.
        device_serial: The device the run used.
        agent_command: The agent argv (already free of secrets: argv carries none).
        requested_model: The `--model` override or the suite's model.
        server_build_components: Non-secret components of `serverBuild`.
        baseline: The suite's `baseline` block, if any.
        baseline_tool_sequence: The suite's `baselineToolSequence`.
        snippet_path: Where baseline.yml was written, or None.
        snippet_blockers: Why it was not written (`baseline.snippet_blockers`).
        audit_inputs: The verdict's inputs that are not files (`run.record.audit_inputs`), so a
            re-audit of the saved run sees exactly what this audit saw.
        preflight_round_trips: adb round trips preflight spent.
        environ: The run's environment, only to mask secrets that leaked into evidence text.
        instance: The seeded task instance (`suite.instance.Instance.to_json()`: id, repeat,
            seed, values), so a later comparison can pair runs of the same instance.
        cleanup: What cleanup did and left (`run.cleanup.run_cleanup`); shown, never judged.
        timing: Where the time went: `agent` (`audit.timing.TimeSplit.as_dict()`, or None for a
            run without a timing sidecar) and `harness` (preflight, setup, post-run, audit seconds).
        sandbox: How the agent was confined (`run.confine.AgentConfinement.record`): mode on/off,
            what was asked, the policy; None for a run recorded before the sandbox existed.

    Returns:
        A JSON-serialisable dict; `render_text_report` renders it without any other input, so
        a saved result.json re-renders to the same report.
    """
    audit_data = _plain(audit)
    metrics = audit_data.get("metrics") or {}
    tool_sequence = list(audit_data.get("tool_sequence") or ())
    current = {key: _plain(fingerprints.get(key)) for key in FINGERPRINT_KEYS}
    flags = comparability_flags(baseline, current)
    has_baseline = bool(baseline)
    document = {
        "schemaVersion": RESULT_SCHEMA_VERSION,
        "suite": suite_name,
        "suiteFile": suite_file,
        "nodeid": nodeid,
        "instance": dict(instance) if instance is not None else None,
        "runDirectory": run_dir,
        "startedAt": started_at,
        "finishedAt": finished_at,
        "device": {"serial": device_serial},
        "agent": {"command": list(agent_command), "requestedModel": requested_model},
        "verdict": audit_data.get("verdict") or {"status": "incomplete", "reasons": ["no audit"]},
        "checks": audit_data.get("checks") or [],
        "stumbles": audit_data.get("stumbles") or [],
        "metrics": metrics,
        "toolSequence": tool_sequence,
        "baseline": _plain(baseline) if has_baseline else None,
        "baselineToolSequence": list(baseline_tool_sequence),
        "comparison": {
            "flags": [{"kind": flag.kind, "message": flag.message} for flag in flags],
            "metricRows": [
                {
                    "metric": row.name,
                    "actual": row.actual,
                    "baseline": row.baseline,
                    "delta": row.delta,
                    "deltaPercent": row.delta_percent,
                }
                for row in metric_rows(metrics, (baseline or {}).get("metrics") if has_baseline else None)
            ],
            "sequenceDiff": (
                [{"op": line.op, "tool": line.tool} for line in sequence_diff(list(baseline_tool_sequence), tool_sequence)]
                if has_baseline
                else []
            ),
        },
        "fingerprints": {**current, "serverBuildComponents": dict(server_build_components or {})},
        "snippet": {"path": snippet_path, "written": snippet_path is not None, "suppressedBecause": list(snippet_blockers)},
        "scoringCode": scoring_code,
        "auditInputs": dict(audit_inputs or {}),
        "preflight": {"roundTrips": preflight_round_trips, "appBuild": current.get("appBuild")},
        "cleanup": _plain(cleanup) if cleanup is not None else None,
        "timing": {"agent": None, "harness": {}, **_plain(timing or {})},
        "sandbox": _plain(sandbox) if sandbox is not None else None,
    }
    return scrub(document, environ)


def build_session_document(
    results: Sequence[Mapping[str, Any]],
    *,
    started_at: str | None = None,
    finished_at: str | None = None,
    seed: int | None = None,
    repeat: int | None = None,
    statistics: Mapping[str, Any] | None = None,
    unrecorded: Sequence[Mapping[str, Any]] = (),
    comparison: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The `--agentbench-json` document: every run's result.json, verdict counts, statistics, the comparison.

    A later `--agentbench-compare` reads it back: each run carries its verdict, metrics, seeded
    instance (`instance`) and fingerprints, and `unrecorded` lists runs that left no result.

    Args:
        results: The runs' result documents.
        started_at: When the session started.
        finished_at: When it finished.
        seed: `--agentbench-seed`.
        repeat: `--agentbench-repeat`.
        statistics: `report.aggregate.statistics_block(...)`.
        unrecorded: Runs without a result document (`Unrecorded.to_json()`), counted as incomplete.
        comparison: `report.ab.comparison_block(...)` with `--agentbench-compare`.
    """
    counts = {"passed": 0, "failed": 0, "incomplete": 0}
    for result in results:
        status = verdict_status(result)
        counts[status] = counts.get(status, 0) + 1
    counts["incomplete"] += len(unrecorded)
    document: dict[str, Any] = {
        "schemaVersion": RESULT_SCHEMA_VERSION,
        "startedAt": started_at,
        "finishedAt": finished_at,
        "seed": seed,
        "repeat": repeat,
        "counts": counts,
        "timing": session_timing(results),
        "runs": [dict(result) for result in results],
        "unrecorded": [dict(run) for run in unrecorded],
    }
    if statistics is not None:
        document["statistics"] = dict(statistics)
    if comparison is not None:
        document["comparison"] = dict(comparison)
    return document


_AGENT_PARTS = ("wallClockSeconds", "startupSeconds", "modelSeconds", "toolSeconds", "afterResultSeconds")


def session_timing(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Where the session's time went: the runs' time splits and harness times, summed.

    Runs without a split (saved before the timing sidecar existed) are counted in
    `runsWithoutSplit` and left out of the agent sums, not guessed.
    """
    agent = dict.fromkeys(_AGENT_PARTS, 0.0)
    harness: dict[str, float] = {}
    split = unsplit = 0
    for result in results:
        timing = result.get("timing") or {}
        parts = timing.get("agent")
        if parts:
            split += 1
            for key in _AGENT_PARTS:
                agent[key] += float(parts.get(key) or 0.0)
        else:
            unsplit += 1
        for key, value in (timing.get("harness") or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                harness[key] = harness.get(key, 0.0) + float(value)
    return {
        "runsWithSplit": split,
        "runsWithoutSplit": unsplit,
        "agent": {key: round(value, 3) for key, value in agent.items()},
        "harness": {key: round(value, 3) for key, value in harness.items()},
    }


def verdict_status(result: Mapping[str, Any]) -> str:
    """A result document's verdict status; a document without one counts as incomplete."""
    return str((result.get("verdict") or {}).get("status", "incomplete"))
