"""Evidence text -> the same with secrets masked; a session's result documents -> the session document."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.records.result import FINGERPRINT_KEYS, RESULT_SCHEMA_VERSION  # noqa: F401 (re-exported)
from pytest_agentbench.redact import MASK, is_secret_name, mask_url_credentials

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
    interrupted: Mapping[str, Any] | None = None,
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
        interrupted: For a session that ended early (Ctrl+C, a signal, `-x`): what stopped it, the
            runs collected and the runs that got no verdict (`interruption.RunLedger.record`).
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
    if interrupted is not None:
        document["interrupted"] = dict(interrupted)
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
