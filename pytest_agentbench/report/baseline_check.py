"""An earlier session document -> whether it may be an A/B comparison's baseline, or the sentence saying why not.

A baseline is a whole session with something to compare: one interrupted before its end holds
only the runs that happened to finish, and one with no judged run (every run incomplete by the
harness's doing, or without a result: no phone, a server that never connected) has no rate at
all. Either would make a comparison that reads as a measurement and is none.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pytest_agentbench.records.result import SessionResult
from pytest_agentbench.report.aggregate import outcome_of


def judged_runs(session: SessionResult) -> int:
    """How many runs count in a pass rate: passed, failed, or incomplete by the agent's doing (docs/statistics.md)."""
    count = 0
    for run in session.runs:
        outcome = outcome_of(run)
        count += outcome.status in ("passed", "failed") or outcome.cause == "agent"
    return count


def baseline_refusal(session: SessionResult, path: Path | str) -> str | None:
    """Why the session document at `path` cannot be a baseline, as one sentence naming the file; None when it can."""
    interrupted = session.interrupted
    if isinstance(interrupted, Mapping):
        not_run = interrupted.get("notRun") or ()
        collected = interrupted.get("runsCollected")
        of = f" of {collected}" if isinstance(collected, int) else ""
        return (f"--agentbench-compare {path}: the session was interrupted ({interrupted.get('by') or 'unknown'}) before its end, "
                f"and {len(not_run)}{of} runs never got a verdict; a baseline must be a whole session: run it again to its end")
    unrecorded = [run for run in session.unrecorded if isinstance(run, Mapping)]
    if judged_runs(session) == 0:
        total = len(session.runs) + len(unrecorded)
        if not total:
            return f"--agentbench-compare {path}: the session holds no run to compare with; pass a document of a session that ran suites"
        example = next((str(run.get("reason")) for run in unrecorded if run.get("reason")), None)
        if example is None:
            example = next((str(reason) for run in session.runs for reason in run.verdict.reasons[:1]), None)
        why = f" (for example: {example})" if example else ""
        runs_are = "the one run is" if total == 1 else f"all {total} runs are"
        return (f"--agentbench-compare {path}: no judged run to compare with: {runs_are} incomplete by the harness's "
                f"doing or left no result{why}; record the baseline again where the runs can finish")
    return None
