"""Tests for report/baseline_check.py: which session documents may be an A/B baseline, and the sentence when not (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentbench.records.result import SessionResult
from pytest_agentbench.records.result import SessionResult
from pytest_agentbench.report.baseline_check import baseline_refusal, judged_runs


def run(status: str, cause: str | None = None, reason: str = "a reason") -> dict[str, Any]:
    verdict: dict[str, Any] = {"status": status, "reasons": [] if status == "passed" else [reason]}
    if cause is not None:
        verdict["incompleteCause"] = cause
    return {"suite": "wifi-on", "nodeid": "suites/wifi-on.yml::wifi-on", "verdict": verdict, "metrics": {}}


UNRECORDED = {"nodeid": "suites/wifi-on.yml::wifi-on[r2]", "suite": "wifi-on", "instance": None,
              "reason": "setup: no online Android device: the adb server lists nothing"}


@pytest.mark.parametrize(
    ("document", "judged"),
    [
        ({"runs": [run("passed")]}, 1),
        ({"runs": [run("failed")]}, 1),
        ({"runs": [run("incomplete", "agent")]}, 1),
        ({"runs": [run("incomplete", "harness"), run("incomplete")]}, 0),
        ({"runs": [run("passed"), run("incomplete", "harness")], "unrecorded": [UNRECORDED]}, 1),
    ],
    ids=["a-pass", "a-failure", "the-agent's-timeout", "the-harness's-only", "mixed"],
)
def test_a_document_with_a_judged_run_is_accepted(document: dict[str, Any], judged: int) -> None:
    session = SessionResult.from_json(document)
    assert judged_runs(session) == judged
    assert (baseline_refusal(session, "a.json") is None) == (judged > 0)


@pytest.mark.parametrize(
    ("document", "sentence"),
    [
        ({"runs": [], "unrecorded": [UNRECORDED] * 130},
         "--agentbench-compare a.json: no judged run to compare with: all 130 runs are incomplete by the harness's doing or left "
         "no result (for example: setup: no online Android device: the adb server lists nothing); record the baseline again "
         "where the runs can finish"),
        ({"runs": [run("incomplete", "harness", "the MCP server 'agentbench' was failed, not connected")]},
         "--agentbench-compare a.json: no judged run to compare with: the one run is incomplete by the harness's doing or left "
         "no result (for example: the MCP server 'agentbench' was failed, not connected); record the baseline again where the "
         "runs can finish"),
        ({"runs": [run("passed")], "interrupted": {"by": "SIGINT", "runsCollected": 10, "notRun": ["a", "b", "c"]}},
         "--agentbench-compare a.json: the session was interrupted (SIGINT) before its end, and 3 of 10 runs never got a "
         "verdict; a baseline must be a whole session: run it again to its end"),
        ({"runs": []}, "--agentbench-compare a.json: the session holds no run to compare with; pass a document of a session that ran suites"),
    ],
    ids=["no-phone-130-unrecorded", "harness-incomplete-only", "interrupted", "empty"],
)
def test_a_document_without_judged_runs_or_interrupted_is_refused_saying_why(document: dict[str, Any], sentence: str) -> None:
    assert baseline_refusal(SessionResult.from_json(document), "a.json") == sentence


def test_the_interruption_reads_back_through_session_result() -> None:
    interrupted = {"by": "SIGTERM", "runsCollected": 3, "notRun": ["suites/a.yml::a[r3]"]}
    document = SessionResult(runs=(), interrupted=interrupted).to_json()
    assert document["interrupted"] == interrupted
    assert SessionResult.from_json(document).to_json() == document
    assert "interrupted" not in SessionResult(runs=()).to_json()
