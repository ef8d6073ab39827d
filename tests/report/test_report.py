"""Tests for report.py: the result.json document, the text report, the summary table, and that no secret leaks out."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from pytest_agentbench.audit.verdict import Audit, Check, Stumble, Verdict
from pytest_agentbench.baseline.server_build import server_build_fingerprint
from pytest_agentbench.baseline.snippet import build_baseline_block, render_snippet, snippet_blockers
from pytest_agentbench.baseline.server_build import server_build_fingerprint
from pytest_agentbench.records import RunResult, SessionResult
from pytest_agentbench.report.document import scrub
from resultdoc import result_document as build_result_document
from pytest_agentbench.report.summary import render_summary_table, render_verbose_details, run_label, verdict_line
from pytest_agentbench.report.text import render_text_report

R = RunResult.from_json


def _runs(documents):
    return [R(document) for document in documents]

METRICS = {
    "toolCalls": 3,
    "mcpCalls": 3,
    "deviceAwareCalls": 2,
    "turns": 4,
    "inputTokens": 1200,
    "outputTokens": 300,
    "cacheCreationInputTokens": 0,
    "cacheReadInputTokens": 9000,
    "costUsd": 0.0123,
    "wallClockSeconds": 4.2,
    "stumbles": 0,
    "toolCounts": {"observe": 2, "tapOn": 1},
}
FINGERPRINTS = {
    "appBuild": {"versionName": "1.0", "versionCode": 1, "lastUpdateTime": "2026-11-30 02:00:00"},
    "suiteDigest": "sha256:0123456789abcdef",
    "deviceFingerprint": {"sdk": "34", "model": "sim"},
    "claudeCodeVersion": "2.1.197",
    "serverBuild": "sha256:fedcba9876543210",
    "observedModel": "claude-sonnet-5-5",
}


def _audit(status="passed", reasons=(), stumbles=(), metrics=METRICS, sequence=("observe", "tapOn", "observe"), seen="EXPECTED_COUNT: 3"):
    return Audit(
        verdict=Verdict(status, tuple(reasons)),
        checks=(
            Check("device-use", "a successful device-aware tool call", True, "2 device-aware calls"),
            Check("answer", "EXPECTED_COUNT: 3", status == "passed", seen),
        ),
        stumbles=tuple(stumbles),
        metrics=dict(metrics),
        tool_sequence=tuple(sequence),
    )


def _baseline(**changes):
    values = dict(
        recorded_at="2026-11-30T03:00:00Z",
        metrics=METRICS,
        app_build=FINGERPRINTS["appBuild"],
        suite_digest=FINGERPRINTS["suiteDigest"],
        device_fingerprint=FINGERPRINTS["deviceFingerprint"],
        claude_code_version="2.1.197",
        server_build=FINGERPRINTS["serverBuild"],
        observed_model="claude-sonnet-5-5",
    )
    values.update(changes)
    return build_baseline_block(**values)


def _document(audit=None, *, baseline=None, sequence=("observe", "tapOn", "observe"), fingerprints=FINGERPRINTS, **kwargs):
    values = dict(
        suite_name="bug-repro",
        suite_file="benchmark/agent/suites/bug-repro.yml",
        run_dir="/runs/bug-repro/20261130T030000Z-1a2b3c4d",
        audit=audit or _audit(),
        fingerprints=fingerprints,
        scoring_code="sha256:5c0de5c0de5c0de5",
        nodeid="benchmark/agent/suites/bug-repro.yml::bug-repro",
        device_serial="127.0.0.1:40001",
        agent_command=["agentbench-replay", "-p"],
        baseline=baseline,
        baseline_tool_sequence=sequence,
    )
    values.update(kwargs)
    return build_result_document(**values)


# ----------------------------------------------------------------------------- result.json


def test_document_holds_run_audit_metrics_comparison_and_fingerprints():
    document = _document(baseline=_baseline(metrics={**METRICS, "toolCalls": 2}), sequence=["observe", "observe"])
    assert json.loads(json.dumps(document)) == document
    assert document["verdict"] == {"status": "passed", "reasons": []}
    assert document["checks"][1] == {"kind": "answer", "expected": "EXPECTED_COUNT: 3", "passed": True, "seen": "EXPECTED_COUNT: 3", "name": None}
    assert document["metrics"] == METRICS
    assert document["toolSequence"] == ["observe", "tapOn", "observe"]
    rows = {row["metric"]: row for row in document["comparison"]["metricRows"]}
    assert rows["toolCalls"] == {"metric": "toolCalls", "actual": 3, "baseline": 2, "delta": 1, "deltaPercent": 50.0}
    assert document["comparison"]["sequenceDiff"] == [
        {"op": " ", "tool": "observe"},
        {"op": "+", "tool": "tapOn"},
        {"op": " ", "tool": "observe"},
    ]
    assert document["comparison"]["flags"] == []
    assert document["fingerprints"]["serverBuild"] == "sha256:fedcba9876543210"
    assert document["scoringCode"] == "sha256:5c0de5c0de5c0de5"
    assert document["runDirectory"].endswith("1a2b3c4d")


def test_document_without_baseline_has_no_deltas_flags_or_diff():
    document = _document()
    assert document["baseline"] is None
    assert document["comparison"]["flags"] == [] and document["comparison"]["sequenceDiff"] == []
    assert all(row["delta"] is None for row in document["comparison"]["metricRows"])


def test_document_flags_a_changed_app_build_above_its_deltas():
    fingerprints = {**FINGERPRINTS, "appBuild": {**FINGERPRINTS["appBuild"], "versionName": "1.1", "versionCode": 2}}
    document = _document(baseline=_baseline(), fingerprints=fingerprints)
    assert document["comparison"]["flags"] == [
        {"kind": "app-build", "message": "app build differs: versionCode 1 -> 2; versionName 1.0 -> 1.1"}
    ]
    report = render_text_report(R(document))
    assert report.index("! app build differs") < report.index("Metrics:")


def test_session_document_counts_verdicts():
    results = [_document(), _document(_audit("failed", ["answer check failed"])), _document(_audit("incomplete", ["timeout"]))]
    session = SessionResult.of(_runs(results), started_at="a", finished_at="b").to_json()
    assert session["counts"] == {"passed": 1, "failed": 1, "incomplete": 1}
    assert [run["verdict"]["status"] for run in session["runs"]] == ["passed", "failed", "incomplete"]


TIMING = {
    "agent": {"wallClockSeconds": 12.34, "startupSeconds": 1.2, "modelSeconds": 6.04, "toolSeconds": 4.9,
              "afterResultSeconds": 0.2, "tools": [
                  {"tool": "tapOn", "count": 4, "totalSeconds": 3.1, "medianSeconds": 0.7, "unanswered": 0},
                  {"tool": "observe", "count": 3, "totalSeconds": 1.8, "medianSeconds": 0.6, "unanswered": 1}]},
    "harness": {"preflightSeconds": 1.14, "setupSeconds": 0.6, "postRunSeconds": 0.4, "auditSeconds": 0.01},
}


def test_session_document_sums_where_the_time_went():
    without = _document()
    results = [_document(timing=TIMING), _document(timing=TIMING), without]
    timing = SessionResult.of(_runs(results)).to_json()["timing"]
    assert (timing["runsWithSplit"], timing["runsWithoutSplit"]) == (2, 1)
    assert timing["agent"] == {"wallClockSeconds": 24.68, "startupSeconds": 2.4, "modelSeconds": 12.08,
                               "toolSeconds": 9.8, "afterResultSeconds": 0.4}
    assert timing["harness"] == {"preflightSeconds": 2.28, "setupSeconds": 1.2, "postRunSeconds": 0.8, "auditSeconds": 0.02}


def test_text_report_shows_where_the_time_went():
    report = render_text_report(R(_document(timing=TIMING)))
    assert "Time: agent 12.3 s = startup 1.2 + model 6.0 + tools 4.9 + after result 0.2\n" in report
    assert "\nHarness time: preflight 1.1 s, setup 0.6 s, post-run 0.4 s, audit 0.0 s\n" in report
    rows = [line.split() for line in report.splitlines() if line.startswith(("  tapOn", "  observe"))]
    assert rows == [["tapOn", "4", "3.100", "0.700"], ["observe", "3", "(1", "unanswered)", "1.800", "0.600"]]
    assert report.index("Metrics:") < report.index("Time: agent") < report.index("Harness time") < report.index("Tool sequence")


def test_text_report_of_a_run_without_a_timing_sidecar():
    document = _document(timing={"agent": None, "harness": {"preflightSeconds": 2.0}})
    assert "Time: agent 4.2 s (no timing sidecar, so no split)\nHarness time: preflight 2.0 s\n" in render_text_report(R(document))
    legacy = _document()
    del legacy["timing"]  # a result.json written before timing existed
    assert "Time: agent 4.2 s (no timing sidecar, so no split)\n" in render_text_report(R(legacy))


# ----------------------------------------------------------------------------- text report


def test_text_report_shows_every_section():
    audit = _audit(
        "failed",
        ["answer check failed: expected 'EXPECTED_COUNT: 3'; the reply ended with: EXPECTED_COUNT: 4"],
        stumbles=[Stumble("tool-error", "tapOn", "No element with text 'Submit'")],
        seen="EXPECTED_COUNT: 4",
    )
    document = _document(
        audit,
        baseline=_baseline(metrics={**METRICS, "toolCalls": 2, "costUsd": 0.01}),
        sequence=["observe", "swipeOn", "observe"],
        snippet_blockers=["verdict is failed, not passed"],
    )
    report = render_text_report(R(document))
    lines = report.splitlines()
    assert lines[0] == "bug-repro: FAILED"
    assert lines[1].startswith("  - answer check failed: expected 'EXPECTED_COUNT: 3'")
    assert "  FAIL answer: expected 'EXPECTED_COUNT: 3'" in lines
    assert "       seen: EXPECTED_COUNT: 4" in lines
    assert "  tool-error tapOn: No element with text 'Submit'" in lines
    assert "Baseline: recorded 2026-11-30T03:00:00Z; comparable (same app build, suite, device, CLI, server build and model)" in lines
    assert any(line.split()[:4] == ["toolCalls", "3", "2", "+1"] and line.endswith("(+50.0%)") for line in lines)
    assert any(line.split()[:4] == ["costUsd", "0.0123", "0.01", "+0.0023"] for line in lines)
    diff = lines[lines.index("Tool sequence vs baseline (- baseline call skipped, + extra call):") + 1 :][:4]
    assert diff == ["    observe", "  - swipeOn", "  + tapOn", "    observe"]
    assert "  - verdict is failed, not passed" in lines
    assert lines[-1] == "Run directory: /runs/bug-repro/20261130T030000Z-1a2b3c4d"


def test_saved_result_renders_the_same_report():
    document = _document(baseline=_baseline(), snippet_path="/runs/x/baseline.yml")
    saved = json.loads(json.dumps(document))
    assert render_text_report(R(saved)) == render_text_report(R(document))
    assert "Baseline snippet: /runs/x/baseline.yml" in render_text_report(R(saved))


@pytest.mark.parametrize(
    ("current", "expected"),
    [
        (None, "Scoring code: sha256:5c0de5c0de5c0de5"),
        ("sha256:5c0de5c0de5c0de5", "Scoring code: sha256:5c0de5c0de5c0de5"),
        ("sha256:0000000000000000", "Scoring code: ! differs: the run was scored by sha256:5c0de5c0de5c0de5, the current code is sha256:0000000000000000"),
    ],
)
def test_report_flags_changed_scoring_code_on_rerender(current, expected):
    assert expected in render_text_report(R(_document()), current_scoring_code=current).splitlines()


def test_report_without_baseline_lists_the_sequence_and_blank_deltas():
    report = render_text_report(R(_document()))
    assert "Baseline: none (deltas not shown)" in report
    assert "Tool sequence: observe, tapOn, observe" in report
    assert "n/a" not in report


@pytest.mark.parametrize(
    ("status", "reasons", "line"),
    [
        ("passed", [], "PASSED benchmark/agent/suites/bug-repro.yml::bug-repro"),
        ("failed", ["screen check failed", "answer"], "FAILED benchmark/agent/suites/bug-repro.yml::bug-repro - screen check failed"),
        ("incomplete", ["timed out after 600 s"], "INCOMPLETE benchmark/agent/suites/bug-repro.yml::bug-repro - timed out after 600 s"),
    ],
)
def test_verdict_line(status, reasons, line):
    assert verdict_line(R(_document(_audit(status, reasons)))) == line


# ----------------------------------------------------------------------------- summary table


def _summary_result(index: int, *, flags=(), status="passed", baseline=True, wall=4.2):
    metrics = {**METRICS, "wallClockSeconds": wall, "costUsd": 12.5 if index % 2 else 0.0123}
    return {
        "suite": f"suite-with-a-rather-long-descriptive-name-{index:03d}",
        "verdict": {"status": status, "reasons": []},
        "metrics": metrics,
        "baseline": {"recordedAt": "x"} if baseline else None,
        "comparison": {
            "flags": [{"kind": kind, "message": kind} for kind in flags],
            "metricRows": [{"metric": "toolCalls", "delta": index - 1}],
        },
    }


@pytest.mark.parametrize("width", [80, 100, 120])
def test_summary_stays_within_the_width_for_many_suites(width):
    all_flags = ("app-build", "suite-digest", "device", "cli-version", "server-build", "model")
    results = [
        _summary_result(index, flags=all_flags[: index % 7], status=("passed", "failed", "incomplete")[index % 3], wall=index * 97.0)
        for index in range(60)
    ]
    table = render_summary_table(_runs(results), width=width)
    assert max(len(line) for line in table.splitlines()) <= width
    header = table.splitlines()[0].split()
    assert header == ["run", "verdict", "wall", "calls", "turns", "tokens", "cost", "Δcalls", "flags"]
    # Every name is printed whole (a long one on a line of its own), never cut.
    for index in range(60):
        assert f"suite-with-a-rather-long-descriptive-name-{index:03d}" in table.split()
    assert "…" not in table
    # every flag kind shows up by its abbreviation
    for word in ("app", "suite", "dev", "cli", "srv", "model"):
        assert word in table.split()


@pytest.mark.parametrize(
    ("result", "cells"),
    [
        (_summary_result(3, wall=4.2), ["pass", "4.2s", "3", "4", "10.5k", "$12.50", "+2"]),
        (_summary_result(0, wall=65.0, status="failed"), ["FAIL", "1m05s", "3", "4", "10.5k", "$0.012", "-1"]),
        (_summary_result(1, wall=7300, status="incomplete"), ["INCOMP", "2h01m", "3", "4", "10.5k", "$12.50", "0"]),
        (_summary_result(2, baseline=False), ["pass", "4.2s", "3", "4", "10.5k", "$0.012", "-"]),
    ],
)
def test_summary_row_cells(result, cells):
    # The long name takes a line of its own at 80 columns; its cells follow on the next.
    row = " ".join(render_summary_table(_runs([result]), legend=False).splitlines()[2:]).split()
    assert row[0] == result["suite"] and row[1:8] == cells


def test_names_are_never_cut_a_long_one_takes_its_own_line():
    short = {**_summary_result(1), "suite": "bug-repro"}
    long = _summary_result(2, flags=("app-build", "device", "server-build", "model"))
    lines = render_summary_table(_runs([short, long]), width=80, legend=False).splitlines()
    assert lines[2].startswith("bug-repro ")
    assert lines[3] == "suite-with-a-rather-long-descriptive-name-002"
    assert lines[4].split()[0] == "pass" and lines[4].startswith(" ")
    assert max(len(line) for line in lines) <= 80


def test_two_names_that_share_both_ends_stay_distinguishable():
    # The names the issue found cut to `testbed…up-code` and `testbed…-code-p`.
    runs = [{**_summary_result(1), "suite": "testbed-pickup-code"}, {**_summary_result(2), "suite": "testbed-pickup-code-p"}]
    for width in (60, 80, 120):
        words = render_summary_table(_runs(runs), width=width, legend=False).split()
        assert "testbed-pickup-code" in words and "testbed-pickup-code-p" in words and "…" not in " ".join(words)


@pytest.mark.parametrize(("nodeid", "instance", "label"), [
    ("s.yml::bug-repro[r3]", {"id": "r3", "repeat": 3, "seed": 0, "values": {}}, "bug-repro[r3]"),
    (None, {"id": "r2-42-Bob", "repeat": 2, "seed": 0, "values": {"n": 42}}, "bug-repro[r2-42-Bob]"),
    (None, None, "bug-repro"),
])
def test_a_run_row_carries_its_instance_and_repeat_id(nodeid, instance, label):
    result = R({**_summary_result(1), "suite": "bug-repro", "nodeid": nodeid, "instance": instance})
    assert run_label(result) == label
    assert render_summary_table([result], legend=False).splitlines()[2].split()[0] == label


def test_verbose_details_show_metric_rows_diff_and_run_dir():
    document = _document(baseline=_baseline(), sequence=["observe", "observe"])
    details = render_verbose_details(_runs([document]))
    assert "benchmark/agent/suites/bug-repro.yml::bug-repro: passed" in details.splitlines()[0]
    assert "  + tapOn" in details.splitlines()
    assert any(line.split()[:2] == ["toolCounts.tapOn", "1"] for line in details.splitlines())
    assert details.splitlines()[-1] == "Run directory: /runs/bug-repro/20261130T030000Z-1a2b3c4d"


# ----------------------------------------------------------------------------- secrets

PLANTED = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-PLANTEDAPIKEY",
    "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-PLANTEDOAUTH",
    "ANTHROPIC_BASE_URL": "https://gwuser:gwPLANTEDPASS@gateway.example.com/anthropic",
    "HTTPS_PROXY": "http://pxuser:pxPLANTEDPASS@proxy.example:3128",
    "AWS_ACCESS_KEY_ID": "AKIAPLANTEDKEYID",
    "AWS_SECRET_ACCESS_KEY": "PLANTEDAWSSECRET/abc",
    "PATH": "/usr/bin:/bin",
}
PLANTED_VALUES = ("PLANTEDAPIKEY", "PLANTEDOAUTH", "gwPLANTEDPASS", "pxPLANTEDPASS", "AKIAPLANTEDKEYID", "PLANTEDAWSSECRET")


def test_scrub_masks_secret_values_and_url_credentials_anywhere():
    value = {"a": ["token sk-ant-api03-PLANTEDAPIKEY", {"b": "via http://pxuser:pxPLANTEDPASS@proxy.example:3128"}], "n": 3}
    scrubbed = scrub(value, PLANTED)
    assert scrubbed == {"a": ["token ***", {"b": "via http://pxuser:***@proxy.example:3128"}], "n": 3}


def test_no_planted_secret_reaches_snippet_result_or_terminal(tmp_path):
    build = server_build_fingerprint(
        profile_build_files=[],
        agent_command="sh",
        environ=PLANTED,
        adb_endpoint="tcp:localhost:5037",
        adb_versions={"/usr/bin/adb": "Android Debug Bridge version 1.0.41"},
        project_root=tmp_path,
        managed_settings_dirs=(),
    )
    fingerprints = {**FINGERPRINTS, "serverBuild": build.digest}
    # The agent echoed secrets into its reply and a tool result: evidence must be masked.
    audit = _audit(
        stumbles=[Stumble("tool-error", "observe", f"proxy {PLANTED['HTTPS_PROXY']} refused")],
        seen=f"EXPECTED_COUNT: 3 (key {PLANTED['ANTHROPIC_API_KEY']}, aws {PLANTED['AWS_SECRET_ACCESS_KEY']})",
    )
    assert snippet_blockers(
        verdict_status="passed",
        stumble_count=0,
        clear_app_data=True,
        device_fingerprint=fingerprints["deviceFingerprint"],
        app_build=fingerprints["appBuild"],
        claude_code_version="2.1.197",
        observed_model="claude-sonnet-5-5",
    ) == ()
    block = _baseline(server_build=build.digest)
    snippet = render_snippet(block, ["observe"], suite_name="bug-repro", run_dir="/runs/x")
    document = _document(audit, baseline=block, fingerprints=fingerprints, server_build_components=build.components, environ=PLANTED)
    outputs = {
        "baseline.yml": snippet,
        "result.json": json.dumps(document),
        "report": render_text_report(R(document)),
        "summary": render_summary_table(_runs([document])) + render_verbose_details(_runs([document])),
    }
    for name, text in outputs.items():
        for secret in PLANTED_VALUES:
            assert secret not in text, f"{secret} leaked into {name}"
    assert yaml.safe_load(snippet)["baseline"]["serverBuild"] == build.digest
    assert document["fingerprints"]["serverBuildComponents"]["provider.credential"] == "ANTHROPIC_API_KEY,CLAUDE_CODE_OAUTH_TOKEN"


@pytest.mark.parametrize(("recorded", "now", "shown"), [
    ("failed", "passed", "Re-render: ! the verdict differs from the one recorded live (FAILED -> PASSED)"),
    ("passed", "incomplete", "Re-render: ! the verdict differs from the one recorded live (PASSED -> INCOMPLETE)"),
    ("passed", "passed", None),
])
def test_a_rerender_says_when_its_verdict_differs_from_the_recorded_one(recorded, now, shown):
    document = _document()
    document["verdict"] = {"status": now, "reasons": [] if now == "passed" else ["why"]}
    document["rerendered"] = {"scoringCode": "x", "verdictWhenRecorded": {"status": recorded, "reasons": []}}
    text = render_text_report(R(document))
    if shown is None:
        assert "Re-render:" not in text
    else:
        assert shown in text.splitlines()


@pytest.mark.parametrize(("recorded", "now", "shown"), [
    ("harness", "agent", "Re-render: ! the cause differs from the one recorded live (harness -> agent): today's rules decide "
                         "whose doing an incomplete run was (docs/verdicts.md#who-decides-a-cause)"),
    ("agent", "agent", None),
    (None, "agent", None),  # recorded before causes were
])
def test_a_rerender_says_when_an_incomplete_run_s_cause_differs(recorded, now, shown):
    # A changed cause moves the run in or out of the pass rate (issue 28: saved runs re-audited under the new rules).
    document = _document()
    document["verdict"] = {"status": "incomplete", "reasons": ["why"], "incompleteCause": now}
    was = {"status": "incomplete", "reasons": ["why"], **({"incompleteCause": recorded} if recorded else {})}
    document["rerendered"] = {"scoringCode": "x", "verdictWhenRecorded": was}
    lines = render_text_report(R(document)).splitlines()
    assert [line for line in lines if line.startswith("Re-render:")] == ([shown] if shown else [])


@pytest.mark.parametrize(
    ("cause", "line", "word"),
    [
        ("agent", "INCOMPLETE benchmark/agent/suites/bug-repro.yml::bug-repro (agent's doing) - timed out", "INCOMP*"),
        ("harness", "INCOMPLETE benchmark/agent/suites/bug-repro.yml::bug-repro (harness's doing) - timed out", "INCOMP"),
        (None, "INCOMPLETE benchmark/agent/suites/bug-repro.yml::bug-repro - timed out", "INCOMP"),
    ],
    ids=["agent", "harness", "not recorded"],
)
def test_an_incomplete_runs_cause_is_in_its_verdict_line_and_table_row(cause, line, word):
    from pytest_agentbench.report.summary import verdict_word

    audit = _audit("incomplete", ["timed out"])
    document = _document(dataclasses.replace(audit, verdict=Verdict("incomplete", ("timed out",), cause)))
    assert verdict_line(R(document)) == line
    assert verdict_word(R(document)) == word
    assert f" {word} " in render_summary_table(_runs([document]), width=100).splitlines()[2] + " "


def test_the_default_failure_report_is_short_and_says_where_the_rest_is():
    from pytest_agentbench.report.text import FULL_REPORT_HINT, render_failure_report

    document = _document(_audit("failed", ["answer check failed"], seen="EXPECTED_COUNT: 4"), cleanup={"actions": [], "failed": [], "left": ["x"]})
    assert render_failure_report(R(document)).splitlines() == [
        "bug-repro: FAILED",
        "  - answer check failed",
        "Failed checks:",
        "  FAIL answer: expected 'EXPECTED_COUNT: 3'",
        "       seen: EXPECTED_COUNT: 4",
        "Cleanup left: x",
        "Run directory: /runs/bug-repro/20261130T030000Z-1a2b3c4d",
        FULL_REPORT_HINT,
    ]
    # The checks that held, the metrics and the sequence are in the full report only.
    assert "ok   device-use" in render_text_report(R(document)) and "device-use" not in render_failure_report(R(document))
