"""Tests for records/: result.json <-> RunResult key for key, and a re-render that reproduces the live run's verdict, metrics and flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentbench.records import RunResult, SessionResult
from pytest_agentbench.records.result import read_document
from resultdoc import result_document

AUDIT = {
    "verdict": {"status": "failed", "reasons": ["answer check failed"]},
    "checks": [{"kind": "answer", "expected": "X: 1", "passed": False, "seen": "X: 2", "name": None}],
    "stumbles": [{"kind": "tool-error", "tool": "tapOn", "detail": "no element"}],
    "metrics": {"toolCalls": 2, "costUsd": 0.25, "wallClockSeconds": 3.5, "toolCounts": {"tapOn": 2}},
    "tool_sequence": ["tapOn", "tapOn"],
}


def test_a_document_with_every_part_reads_back_to_itself(tmp_path: Path) -> None:
    document = result_document(
        suite_name="s", suite_file="s.yml", run_dir=str(tmp_path), audit=AUDIT,
        fingerprints={"appBuild": {"versionCode": "1"}, "observedModel": "m", "serverBuild": "sha256:1"},
        scoring_code="sha256:c0de", baseline={"metrics": {"toolCalls": 1}, "observedModel": "old"},
        baseline_tool_sequence=["tapOn"], server_build_components={"adb": "1.0.41"}, snippet_blockers=["failed"],
        audit_inputs={"process": {"exitCode": 0, "timedOut": False, "signal": None, "wallClockSeconds": 3.5,
                                  "stoppedBecause": None, "endedAfterResult": False},
                      "deviceAwareTools": ["mcp__a__tapOn"], "probeError": None, "deviceLost": None,
                      "screenUnavailableReason": None, "shellTools": [], "deviceState": None},
        agent_command=["claude", "-p"], nodeid="s.yml::s", instance={"id": "r1", "repeat": 1, "seed": 7, "values": {"n": 3}},
        cleanup={"restored": [], "left": ["x"]}, preflight_round_trips=2, started_at="2026-12-01T00:00:00Z",
    )
    assert json.loads(json.dumps(document)) == document
    assert RunResult.from_json(document).to_json() == document
    result = RunResult.from_json(document)
    assert result.status == "failed" and result.checks[0].seen == "X: 2" and result.stumbles[0].tool == "tapOn"
    assert [flag.kind for flag in result.comparison.flags][-1] == "model"
    assert result.audit_inputs is not None and result.audit_inputs.process.wall_clock_seconds == 3.5


def test_write_then_read_is_the_same_record(tmp_path: Path) -> None:
    result = RunResult.from_json(result_document(suite_name="s", suite_file="s.yml", run_dir=str(tmp_path), audit=AUDIT,
                                                 fingerprints={}, scoring_code="x"))
    result.write(tmp_path / "result.json")
    assert RunResult.read(tmp_path / "result.json") == result


@pytest.mark.parametrize(("text", "message"), [("{", "cannot read result.json"), ("[1]", "expected a JSON object, got list")])
def test_an_unreadable_document_is_a_sentence_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "result.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(Exception, match=message) as raised:
        read_document(path)
    assert str(path) in str(raised.value)


def test_a_session_document_reads_back_to_itself(tmp_path: Path) -> None:
    run = RunResult.from_json(result_document(suite_name="s", suite_file="s.yml", run_dir=str(tmp_path), audit=AUDIT,
                                              fingerprints={}, scoring_code="x"))
    session = SessionResult(runs=(run, run), seed=3, repeat=2, unrecorded=({"nodeid": "t", "reason": "setup"},),
                            statistics={"suites": []}, timing={"runsWithSplit": 0})
    document = session.to_json()
    assert document["counts"] == {"passed": 0, "failed": 2, "incomplete": 1}
    assert SessionResult.from_json(document).to_json() == document


@pytest.mark.parametrize("ending", [None, "task_complete", "no_tool_call", "api_error"])
def test_the_episode_ending_round_trips_and_is_written_only_when_known(ending: str | None) -> None:
    document = result_document(suite_name="s", suite_file="s.yml", run_dir="/r", audit=AUDIT,
                               fingerprints={"observedModel": "m"}, scoring_code="sha256:c0de",
                               agent_command=["agentbench-agent", "-p"])
    if ending is not None:
        document["agent"]["episodeEnding"] = ending
    record = RunResult.from_json(document)
    assert record.episode_ending == ending
    assert record.to_json() == document
    assert ("episodeEnding" in record.to_json()["agent"]) == (ending is not None)
