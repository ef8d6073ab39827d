"""Test-side parts -> a result.json document, built the way `pipeline.conclude` builds one (RunResult.to_json, then scrub)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.baseline.compare import compare
from pytest_agentbench.records import Audit, AuditInputs, RunResult, Snippet, Stumble, Verdict
from pytest_agentbench.records.audit import check_from_json
from pytest_agentbench.records.result import FINGERPRINT_KEYS, Fingerprints
from pytest_agentbench.report.document import scrub


def _audit(audit: Audit | Mapping[str, Any]) -> Audit:
    if isinstance(audit, Audit):
        return audit
    return Audit(
        verdict=Verdict.from_json(audit.get("verdict")),
        checks=tuple(check_from_json(check) for check in audit.get("checks") or ()),
        stumbles=tuple(Stumble.from_json(stumble) for stumble in audit.get("stumbles") or ()),
        metrics=dict(audit.get("metrics") or {}),
        tool_sequence=tuple(audit.get("tool_sequence") or ()),
    )


def result_document(
    *, suite_name: str, suite_file: str, run_dir: str, audit: Audit | Mapping[str, Any], fingerprints: Mapping[str, Any],
    scoring_code: str, baseline: Mapping[str, Any] | None = None, baseline_tool_sequence: Sequence[str] = (),
    server_build_components: Mapping[str, str] | None = None, snippet_path: str | None = None,
    snippet_blockers: Sequence[str] = (), audit_inputs: Mapping[str, Any] | None = None,
    agent_command: Sequence[str] = (), environ: Mapping[str, str] | None = None, timing: Mapping[str, Any] | None = None,
    **metadata: Any,
) -> dict[str, Any]:
    """A result document from its parts (metadata keys: nodeid, started_at, finished_at, device_serial,
    requested_model, instance, preflight_round_trips, cleanup)."""
    audit = _audit(audit)
    prints = Fingerprints({key: fingerprints.get(key) for key in FINGERPRINT_KEYS}, dict(server_build_components or {}))
    result = RunResult(
        suite=suite_name, suite_file=suite_file, run_directory=run_dir, verdict=audit.verdict, checks=audit.checks,
        stumbles=audit.stumbles, metrics=dict(audit.metrics), tool_sequence=audit.tool_sequence,
        agent_command=tuple(agent_command), baseline=dict(baseline) if baseline else None,
        baseline_tool_sequence=tuple(baseline_tool_sequence),
        comparison=compare(baseline, baseline_tool_sequence, audit.metrics, audit.tool_sequence, prints.comparable()),
        fingerprints=prints, snippet=Snippet(snippet_path, tuple(snippet_blockers)), scoring_code=scoring_code,
        audit_inputs=AuditInputs.from_json(audit_inputs) if audit_inputs else None,
        timing={"agent": None, "harness": {}, **dict(timing or {})}, **metadata,
    )
    return scrub(result.to_json(), environ)
