"""Tests for baseline/compare.py and baseline/snippet.py (and the digests in baseline/fingerprints.py): metric rows, the LCS diff, snippet rules, suite edits, flags."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

import pytest_agentbench
from pytest_agentbench.baseline.compare import DiffLine, MetricRow, comparability_flags, metric_rows, sequence_diff
from pytest_agentbench.baseline.snippet import (
    BASELINE_KEYS,
    build_baseline_block,
    insert_baseline,
    render_snippet,
    snippet_blockers,
)
from pytest_agentbench.baseline.fingerprints import app_build, suite_digest

DEVICE = {"sdk": "34", "model": "Pixel 8", "locale": "en-US", "screenSize": "1080x2400", "rotation": "0"}
APP = {"versionName": "1.0", "versionCode": 1, "lastUpdateTime": "2026-11-30 02:00:00"}
METRICS = {
    "toolCalls": 7,
    "mcpCalls": 7,
    "deviceAwareCalls": 6,
    "turns": 8,
    "inputTokens": 100,
    "outputTokens": 50,
    "cacheCreationInputTokens": 0,
    "cacheReadInputTokens": 0,
    "costUsd": 0.1,
    "wallClockSeconds": 4.2,
    "stumbles": 0,
    "recoveries": 0,
    "toolCounts": {"tapOn": 3, "observe": 4},
}


def _block(**overrides):
    values = dict(
        recorded_at="2026-11-30T03:00:00Z",
        metrics=METRICS,
        app_build=APP,
        suite_digest="sha256:0123456789abcdef",
        device_fingerprint=DEVICE,
        claude_code_version="2.1.197",
        server_build="sha256:fedcba9876543210",
        observed_model="claude-sonnet-5-5",
    )
    values.update(overrides)
    return build_baseline_block(**values)


# ----------------------------------------------------------------------------- metric rows


def test_metric_rows_cover_every_metric_in_order_then_tools_sorted():
    rows = metric_rows(METRICS, METRICS)
    names = [row.name for row in rows]
    assert names[:12] == [
        "toolCalls",
        "mcpCalls",
        "deviceAwareCalls",
        "turns",
        "inputTokens",
        "outputTokens",
        "cacheCreationInputTokens",
        "cacheReadInputTokens",
        "costUsd",
        "wallClockSeconds",
        "stumbles",
        "recoveries",
    ]
    assert names[12:] == ["toolCounts.observe", "toolCounts.tapOn"]
    assert all(row.delta == 0 and row.format_delta() == "0" for row in rows)


@pytest.mark.parametrize(
    ("actual", "baseline", "delta", "percent", "shown"),
    [
        (9, 7, 2, 28.6, "+2 (+28.6%)"),
        (5, 10, -5, -50.0, "-5 (-50.0%)"),
        (3, 0, 3, None, "+3"),
        (0.3, 0.1, 0.2, 200.0, "+0.2 (+200.0%)"),
        (4.2, 4.2, 0.0, 0.0, "0"),
        (None, 7, None, None, "n/a"),
        (7, None, None, None, "n/a"),
    ],
)
def test_metric_delta_is_signed_with_percent(actual, baseline, delta, percent, shown):
    rows = metric_rows({"toolCalls": actual}, {"toolCalls": baseline, "turns": 1})
    row = rows[0]
    assert (row.actual, row.baseline, row.delta, row.delta_percent) == (actual, baseline, delta, percent)
    assert row.format_delta() == shown


def test_tool_missing_on_one_side_counts_as_zero():
    rows = {row.name: row for row in metric_rows({"toolCounts": {"swipeOn": 2}}, {"toolCounts": {"tapOn": 1}})}
    assert rows["toolCounts.swipeOn"] == MetricRow("toolCounts.swipeOn", 2, 0, 2, None)
    assert rows["toolCounts.tapOn"] == MetricRow("toolCounts.tapOn", 0, 1, -1, -100.0)


def test_without_baseline_rows_have_no_baseline_and_no_delta():
    rows = metric_rows(METRICS, None)
    assert all(row.baseline is None and row.delta is None for row in rows)
    assert rows[0].actual == 7


# ----------------------------------------------------------------------------- sequence diff


def _ops(lines):
    return [line.render() for line in lines]


@pytest.mark.parametrize(
    ("baseline", "actual", "expected"),
    [
        ([], [], []),
        ([], ["observe"], ["+ observe"]),
        (["observe"], [], ["- observe"]),
        (["observe", "tapOn", "observe"], ["observe", "tapOn", "observe"], ["  observe", "  tapOn", "  observe"]),
        # insertion in the middle
        (["observe", "observe"], ["observe", "tapOn", "observe"], ["  observe", "+ tapOn", "  observe"]),
        # deletion
        (["observe", "tapOn", "observe"], ["observe", "observe"], ["  observe", "- tapOn", "  observe"]),
        # swap: one call kept, the other shows as skipped then extra (skip listed first on ties)
        (["tapOn", "swipeOn"], ["swipeOn", "tapOn"], ["- tapOn", "  swipeOn", "+ tapOn"]),
        # replacement: skipped baseline call before the extra one
        (["observe", "tapOn"], ["observe", "swipeOn"], ["  observe", "- tapOn", "+ swipeOn"]),
        # repeats: extra repeats show as additions at the end of the common run
        (["observe"], ["observe", "observe", "observe"], ["  observe", "+ observe", "+ observe"]),
        (["a", "b", "a", "b"], ["b", "a", "b", "a"], ["- a", "  b", "  a", "  b", "+ a"]),
        (["a", "b", "c"], ["d", "e"], ["- a", "- b", "- c", "+ d", "+ e"]),
    ],
)
def test_sequence_diff_classic_cases(baseline, actual, expected):
    lines = sequence_diff(baseline, actual)
    assert _ops(lines) == expected
    # The diff always reconstructs both sides.
    assert [line.tool for line in lines if line.op != "+"] == baseline
    assert [line.tool for line in lines if line.op != "-"] == actual


def test_sequence_diff_keeps_a_longest_common_subsequence():
    baseline = ["observe", "tapOn", "observe", "inputText", "tapOn", "observe"]
    actual = ["observe", "observe", "tapOn", "inputText", "observe", "tapOn", "observe"]
    lines = sequence_diff(baseline, actual)
    assert sum(line.op == " " for line in lines) == 5
    assert sequence_diff(baseline, actual) == lines  # deterministic


def test_diff_line_render():
    assert DiffLine(" ", "observe").render() == "  observe"


# ----------------------------------------------------------------------------- app build and suite digest


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            dict(version_name="1.0", version_code="12", last_update_time="2026-11-30 02:00:00"),
            {"versionName": "1.0", "versionCode": 12, "lastUpdateTime": "2026-11-30 02:00:00"},
        ),
        (
            dict(version_name="1.0", version_code=12, last_update_time="x", apk_sha256="0123456789abcdef"),
            {"versionName": "1.0", "versionCode": 12, "apkSha256": "0123456789abcdef"},
        ),
        (dict(version_name=None, version_code=None), {"versionName": "unknown", "versionCode": "unknown", "lastUpdateTime": "unknown"}),
    ],
)
def test_app_build(kwargs, expected):
    assert app_build(**kwargs) == expected


SUITE = {
    "name": "bug-repro",
    "platform": "android",
    "prompt": "../prompts/bug-repro.txt",
    "app": {"packageName": "dev.example.playground"},
    "preflight": {"clearAppData": True, "settleSeconds": 2},
    "claude": {"model": "claude-sonnet-5-5", "timeoutSeconds": 600},
    "verify": {"screenIncludes": ["Expected count: 3"]},
}


def _with(path: str, value):
    suite = yaml.safe_load(yaml.safe_dump(SUITE))
    *parents, last = path.split(".")
    node = suite
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return suite


@pytest.mark.parametrize(
    ("suite", "prompt", "override", "changes"),
    [
        (SUITE, "Count the bugs.", None, False),
        (_with("baseline", {"recordedAt": "x"}), "Count the bugs.", None, False),
        (_with("baselineToolSequence", ["observe"]), "Count the bugs.", None, False),
        (_with("prompt", "../prompts/renamed.txt"), "Count the bugs.", None, False),
        (SUITE, "Count the bugs!", None, True),
        (_with("preflight.settleSeconds", 3), "Count the bugs.", None, True),
        (_with("claude.timeoutSeconds", 900), "Count the bugs.", None, True),
        (_with("failurePatterns", ["oops"]), "Count the bugs.", None, True),
        (_with("claude.disallowedTools", ["openLink"]), "Count the bugs.", None, True),
        (SUITE, "Count the bugs.", "claude-opus-5", True),
        # the override equal to the suite's model asks for the same model
        (SUITE, "Count the bugs.", "claude-sonnet-5-5", False),
    ],
)
def test_suite_digest_covers_prompt_settings_and_requested_model(suite, prompt, override, changes):
    reference = suite_digest(SUITE, prompt_text="Count the bugs.")
    digest = suite_digest(suite, prompt_text=prompt, model_override=override)
    assert digest.startswith("sha256:") and len(digest) == len("sha256:") + 16
    assert (digest != reference) is changes


def test_suite_digest_ignores_key_order():
    reordered = dict(reversed(list(SUITE.items())))
    assert suite_digest(reordered, prompt_text="p") == suite_digest(SUITE, prompt_text="p")


# ----------------------------------------------------------------------------- snippet rules

CLEAN = dict(
    verdict_status="passed",
    stumble_count=0,
    clear_app_data=True,
    device_fingerprint=DEVICE,
    app_build=APP,
    claude_code_version="2.1.197",
    observed_model="claude-sonnet-5-5",
)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({}, None),
        ({"verdict_status": "failed"}, "verdict is failed, not passed"),
        ({"verdict_status": "incomplete"}, "verdict is incomplete, not passed"),
        ({"stumble_count": 1}, "the run had 1 stumble; recovery calls would skew later comparisons"),
        ({"clear_app_data": False}, "the suite sets preflight.clearAppData: false, so its starting state is not reproducible"),
        ({"device_fingerprint": None}, "device fingerprint unknown (not read)"),
        ({"device_fingerprint": {**DEVICE, "rotation": "unknown", "locale": "unknown"}}, "device fingerprint unknown (locale, rotation)"),
        ({"app_build": None}, "app build unknown (not read)"),
        ({"app_build": {**APP, "versionCode": "unknown"}}, "app build unknown (versionCode)"),
        ({"claude_code_version": None}, "agent CLI version unknown"),
        ({"claude_code_version": "unknown"}, "agent CLI version unknown"),
        ({"observed_model": None}, "observed model unknown"),
        ({"observed_model": ""}, "observed model unknown"),
    ],
)
def test_each_condition_suppresses_the_snippet_with_a_reason(change, reason):
    blockers = snippet_blockers(**{**CLEAN, **change})
    assert blockers == (() if reason is None else (reason,))


def test_several_blockers_are_all_reported_in_order():
    blockers = snippet_blockers(**{**CLEAN, "verdict_status": "failed", "stumble_count": 2, "observed_model": None})
    assert blockers == (
        "verdict is failed, not passed",
        "the run had 2 stumbles; recovery calls would skew later comparisons",
        "observed model unknown",
    )


# ----------------------------------------------------------------------------- block and snippet


def test_block_has_the_contract_keys_in_order_and_string_device_values():
    block = _block(device_fingerprint={"sdk": 34})
    assert tuple(block) == BASELINE_KEYS
    assert block["deviceFingerprint"] == {"sdk": "34"}
    assert list(block["metrics"])[-1] == "toolCounts"
    assert list(block["metrics"]["toolCounts"]) == ["observe", "tapOn"]


def test_snippet_is_commented_yaml_that_loads_back():
    block = _block()
    text = render_snippet(block, ["observe", "tapOn"], suite_name="bug-repro", run_dir="/runs/x")
    assert text.startswith("# Baseline for suite bug-repro")
    assert "baselineToolSequence: [observe, tapOn]" in text
    loaded = yaml.safe_load(text)
    assert loaded == {"baseline": block, "baselineToolSequence": ["observe", "tapOn"]}
    # versionName "1.0" must stay a string, not become the float 1.0
    assert loaded["baseline"]["appBuild"]["versionName"] == "1.0"


# ----------------------------------------------------------------------------- suite file edit

RICH_SUITE = """\
# Bug repro suite: counts the seeded bugs.
name: bug-repro # must match the file name
platform: android
prompt: ../prompts/bug-repro.txt
app:
  packageName: dev.example.playground
  # apkPath: path/to/app.apk
verify:
  answerIncludes: ["EXPECTED_COUNT: 3"]   # final line
  screenIncludes: ["Expected count: 3"]
"""

OLD_BASELINE = """\
baseline:
  recordedAt: "2025-01-01T00:00:00Z"
  # an indented comment inside the block
  metrics: {toolCalls: 1,
    turns: 2}
"""

OLD_SEQUENCE = """\
baselineToolSequence:
- observe
- tapOn
"""


@pytest.mark.parametrize(
    "original",
    [
        RICH_SUITE,
        RICH_SUITE.rstrip("\n"),  # no final newline
        RICH_SUITE + OLD_BASELINE + OLD_SEQUENCE,
        RICH_SUITE + OLD_SEQUENCE + "# trailing comment kept\n",
        RICH_SUITE.replace("verify:", OLD_BASELINE + "# comment about verify\nverify:"),
        RICH_SUITE.replace("verify:", "baseline: {}\nbaselineToolSequence: []\nverify:"),
        OLD_SEQUENCE + "\n" + RICH_SUITE + OLD_BASELINE,
    ],
    ids=["append", "no-final-newline", "replace-both", "only-sequence", "baseline-mid-file", "empty-flow", "split"],
)
def test_insert_baseline_replaces_or_appends_and_keeps_comments(original):
    block = _block()
    edited = insert_baseline(original, block, ["observe", "swipeOn"])
    loaded = yaml.safe_load(edited)
    before = yaml.safe_load(original)
    assert loaded["baseline"] == block
    assert loaded["baselineToolSequence"] == ["observe", "swipeOn"]
    for key in set(before) - {"baseline", "baselineToolSequence"}:
        assert loaded[key] == before[key]
    for line in original.splitlines():
        if line.lstrip().startswith("#") and "inside the block" not in line:
            assert line in edited.splitlines()
    assert "# apkPath: path/to/app.apk" in edited
    assert edited.count("baseline:") == 1 and edited.count("baselineToolSequence:") == 1
    # Inserting twice gives the same text: the edit is idempotent.
    assert insert_baseline(edited, block, ["observe", "swipeOn"]) == edited


def test_insert_keeps_a_comment_that_introduces_the_next_key():
    original = RICH_SUITE.replace("verify:", OLD_BASELINE + "\n# verify checks the screen\nverify:")
    edited = insert_baseline(original, _block(), ["observe"])
    lines = edited.splitlines()
    assert lines[lines.index("# verify checks the screen") + 1] == "verify:"


# ----------------------------------------------------------------------------- comparability flags

CURRENT = {
    "appBuild": APP,
    "suiteDigest": "sha256:0123456789abcdef",
    "deviceFingerprint": DEVICE,
    "claudeCodeVersion": "2.1.197",
    "serverBuild": "sha256:fedcba9876543210",
    "observedModel": "claude-sonnet-5-5",
}


@pytest.mark.parametrize(
    ("change", "kind", "message"),
    [
        ({"appBuild": {**APP, "versionCode": 2}}, "app-build", "app build differs: versionCode 1 -> 2"),
        (
            {"appBuild": {"versionName": "1.0", "versionCode": 1, "apkSha256": "ab"}},
            "app-build",
            "app build differs: apkSha256 not recorded -> ab; lastUpdateTime 2026-11-30 02:00:00 -> not recorded",
        ),
        (
            {"suiteDigest": "sha256:1111111111111111"},
            "suite-digest",
            "suite differs (prompt, settings or requested model): sha256:0123456789abcdef -> sha256:1111111111111111",
        ),
        ({"deviceFingerprint": {**DEVICE, "sdk": "35", "rotation": "90"}}, "device", "device differs: rotation 0 -> 90; sdk 34 -> 35"),
        ({"deviceFingerprint": {**DEVICE, "locale": "unknown"}}, "device", "device differs: locale en-US -> unknown"),
        ({"claudeCodeVersion": "2.1.332"}, "cli-version", "agent CLI version differs: 2.1.197 -> 2.1.332"),
        ({"claudeCodeVersion": None}, "cli-version", "agent CLI version differs: 2.1.197 -> not recorded"),
        ({"observedModel": "claude-opus-5"}, "model", "observed model differs: claude-sonnet-5-5 -> claude-opus-5"),
        (
            {"serverBuild": "sha256:9999999999999999"},
            "server-build",
            "server build differs: sha256:fedcba9876543210 -> sha256:9999999999999999",
        ),
    ],
)
def test_each_difference_is_flagged_saying_what_changed(change, kind, message):
    baseline = _block()
    flags = comparability_flags(baseline, {**CURRENT, **change})
    assert [(flag.kind, flag.message) for flag in flags] == [(kind, message)]


def test_identical_run_has_no_flags_and_no_baseline_means_no_flags():
    assert comparability_flags(_block(), CURRENT) == ()
    assert comparability_flags(None, CURRENT) == ()
    assert comparability_flags({}, CURRENT) == ()


OTHER_UNREAD = {"com.android.contacts": {"versionName": "unknown", "versionCode": "unknown"}}


def test_another_app_whose_build_reads_unknown_on_both_runs_is_flagged_and_blocks_a_snippet():
    # app.alsoUses: each other app's build is a nested fingerprint; unknown never matches there either.
    app = {**APP, "otherApps": OTHER_UNREAD}
    flags = comparability_flags(_block(app_build=app), {**CURRENT, "appBuild": app})
    assert [(flag.kind, flag.message) for flag in flags] == [
        ("app-build", "app build differs: otherApps.com.android.contacts.versionCode unknown -> unknown; "
                      "otherApps.com.android.contacts.versionName unknown -> unknown")]
    known = {**APP, "otherApps": {"com.android.contacts": {"versionName": "14", "versionCode": 34}}}
    assert comparability_flags(_block(app_build=known), {**CURRENT, "appBuild": known}) == ()
    blockers = snippet_blockers(verdict_status="passed", stumble_count=0, clear_app_data=True, device_fingerprint=DEVICE,
                                app_build=app, claude_code_version="2.1.197", observed_model="claude-sonnet-5-5")
    assert blockers == ("app build unknown (otherApps.com.android.contacts.versionCode, otherApps.com.android.contacts.versionName)",)


def test_unknown_never_matches_even_unknown():
    baseline = _block(device_fingerprint={**DEVICE, "theme": "unknown"}, observed_model="unknown")
    current = {**CURRENT, "deviceFingerprint": {**DEVICE, "theme": "unknown"}, "observedModel": "unknown"}
    kinds = {flag.kind: flag.message for flag in comparability_flags(baseline, current)}
    assert kinds == {
        "device": "device differs: theme unknown -> unknown",
        "model": "observed model differs: unknown -> unknown",
    }


def test_snippet_validates_against_the_suite_schema():
    schema = json.loads((Path(pytest_agentbench.__file__).parent / "suite" / "suite.schema.json").read_text())
    snippet = yaml.safe_load(render_snippet(_block(), ["observe", "tapOn"], suite_name="bug-repro", run_dir="/runs/x"))
    jsonschema.validate(snippet["baseline"], schema["properties"]["baseline"])
    jsonschema.validate(snippet["baselineToolSequence"], schema["properties"]["baselineToolSequence"])
