"""Tests for suite.py: every rule of the suite format, with a valid and an invalid example each."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

import pytest
from suitefiles import BASE, write_suite  # noqa: F401

from pytest_agentbench.baseline.fingerprints import suite_digest as raw_suite_digest
from pytest_agentbench.errors import SuiteError
from pytest_agentbench.suite import MAX_SAFE_INTEGER, fill_placeholders, load_suite

REPO_ROOT = Path(__file__).resolve().parents[2]

FULL_BASELINE = {
    "recordedAt": "2026-11-30T03:00:00Z",
    "metrics": {
        "toolCalls": 7, "mcpCalls": 7, "deviceAwareCalls": 6, "turns": 8, "inputTokens": 0, "outputTokens": 0,
        "cacheCreationInputTokens": 0, "cacheReadInputTokens": 0, "costUsd": 0.0, "wallClockSeconds": 4.2,
        "stumbles": 0, "toolCounts": {"observe": 3},
    },
    "appBuild": {"versionName": "1.0", "versionCode": 1, "lastUpdateTime": "2026-11-30 03:00:00"},
    "suiteDigest": "sha256:0123456789abcdef",
    "deviceFingerprint": {"sdk": "34", "model": "sim"},
    "claudeCodeVersion": "2.1.197",
    "serverBuild": "sha256:0123456789abcdef",
    "observedModel": "claude-sonnet-5-5",
}


def setting(dotted: str, value: Any) -> Callable[[dict], None]:
    def mutate(data: dict) -> None:
        *parents, last = dotted.split(".")
        target = data
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = value

    return mutate


def removing(dotted: str) -> Callable[[dict], None]:
    def mutate(data: dict) -> None:
        *parents, last = dotted.split(".")
        target = data
        for part in parents:
            target = target[part]
        del target[last]

    return mutate


def load_mutated(tmp_path: Path, mutation: Callable[[dict], None] | str, prompt: bytes | None = None):
    if isinstance(mutation, str):
        path = write_suite(tmp_path, text=mutation)
    else:
        data = copy.deepcopy(BASE)
        mutation(data)
        path = write_suite(tmp_path, data) if prompt is None else write_suite(tmp_path, data, prompt=prompt)
    return load_suite(path, tmp_path)


MALFORMED = [
    ("unknown-top-key", setting("nmae", "x"), "nmae: unknown key"),
    ("unknown-claude-key", setting("claude.timeoutSecond", 5), "claude.timeoutSecond: unknown key (did you mean 'timeoutSeconds'?)"),
    ("unknown-app-key", setting("app.apk", "a.apk"), "app.apk: unknown key"),
    ("unknown-preflight-key", setting("preflight.launchUrl", "x://y"), "preflight.launchUrl: unknown key"),
    ("unknown-verify-key", setting("verify.screenInclude", ["x"]), "verify.screenInclude: unknown key"),
    ("unknown-baseline-key", setting("baseline", {"recorded": "x"}), "baseline.recorded: unknown key"),
    ("unknown-metrics-key", setting("baseline", {"metrics": {"calls": 1}}), "baseline.metrics.calls: unknown key"),
    ("missing-name", removing("name"), "name: required key is missing"),
    ("missing-verify", removing("verify"), "verify: required key is missing"),
    ("missing-screen-includes", removing("verify.screenIncludes"), "verify.screenIncludes: required key is missing"),
    ("missing-package", removing("app.packageName"), "app.packageName: required key is missing"),
    ("name-not-file-name", setting("name", "other"), "name: expected 'demo' (the file name without .yml), got 'other'"),
    ("platform-ios", setting("platform", "ios"), "platform: expected 'android', got 'ios'"),
    ("prompt-markdown", setting("prompt", "../prompts/demo.md"), "prompt: expected a .txt file"),
    ("prompt-missing", setting("prompt", "../prompts/absent.txt"), "prompt: expected an existing file"),
    ("prompt-absolute", setting("prompt", "/etc/demo.txt"), "prompt: expected a path relative to the suite file"),
    ("prompt-unknown-placeholder", setting("prompt", "../prompts/demo.txt"), "prompt: unknown placeholder {device}"),
    ("system-prompt-placeholder", setting("claude.appendSystemPrompt", "On {serial}"), "claude.appendSystemPrompt: unknown placeholder {serial}"),
    ("apk-absolute", setting("app.apkPath", "/tmp/app.apk"), "app.apkPath: expected a path relative to the rootdir"),
    ("screen-includes-empty", setting("verify.screenIncludes", []), "verify.screenIncludes: expected a list with at least 1 entry"),
    ("screen-includes-blank", setting("verify.screenIncludes", [""]), "verify.screenIncludes[0]: expected a non-empty string"),
    ("answer-includes-string", setting("verify.answerIncludes", "RESULT: ok"), "verify.answerIncludes: expected a list, got 'RESULT: ok'"),
    ("settle-negative", setting("preflight.settleSeconds", -1), "preflight.settleSeconds: expected a number >= 0, got -1"),
    ("settle-sleep-string", setting("preflight.settleSleep", "yes"), "preflight.settleSleep: expected true or false, got 'yes' (a string)"),
    ("timeout-zero", setting("claude.timeoutSeconds", 0), "claude.timeoutSeconds: expected a number > 0, got 0"),
    ("timeout-string", setting("claude.timeoutSeconds", "600"), "claude.timeoutSeconds: expected a number, got '600' (a string)"),
    ("timeout-bool", setting("claude.timeoutSeconds", True), "claude.timeoutSeconds: expected a number, got true (a boolean)"),
    ("idle-timeout-zero", setting("claude.idleTimeoutSeconds", 0), "claude.idleTimeoutSeconds: expected a number > 0, got 0"),
    ("idle-timeout-string", setting("claude.idleTimeoutSeconds", "60"), "claude.idleTimeoutSeconds: expected a number, got '60' (a string)"),
    ("idle-timeout-typo", setting("claude.idleTimeout", 60), "claude.idleTimeout: unknown key (did you mean 'idleTimeoutSeconds'?)"),
    ("budget-zero", setting("claude.maxBudgetUsd", 0), "claude.maxBudgetUsd: expected a number > 0, got 0"),
    ("budget-negative", setting("claude.maxBudgetUsd", -2), "claude.maxBudgetUsd: expected a number > 0, got -2"),
    ("pref-unsafe-int", setting("preflight.sharedPreferences.prefs.big", MAX_SAFE_INTEGER + 1), "preflight.sharedPreferences.prefs.big: expected a safe integer"),
    ("pref-unsafe-negative-int", setting("preflight.sharedPreferences.prefs.big", -(2**60)), "preflight.sharedPreferences.prefs.big: expected a safe integer"),
    ("pref-float-underflow", setting("preflight.sharedPreferences.prefs.tiny", 1e-50), "preflight.sharedPreferences.prefs.tiny: expected a fraction a 32-bit float can hold"),
    ("pref-float-overflow", setting("preflight.sharedPreferences.prefs.huge", 1e39), "preflight.sharedPreferences.prefs.huge: expected a fraction within the 32-bit float range"),
    ("pref-float-nan", setting("preflight.sharedPreferences.prefs.nan", float("nan")), "preflight.sharedPreferences.prefs.nan: expected a finite fraction"),
    ("pref-mapping-value", setting("preflight.sharedPreferences.prefs.nested", {"a": 1}), "preflight.sharedPreferences.prefs.nested: expected a boolean, integer, fraction, string or list of strings"),
    ("pref-set-of-ints", setting("preflight.sharedPreferences.prefs.set", [1, 2]), "preflight.sharedPreferences.prefs.set: expected a boolean, integer, fraction, string or list of strings"),
    ("pref-set-duplicate", setting("preflight.sharedPreferences.prefs.set", ["a", "a"]), "preflight.sharedPreferences.prefs.set: string sets hold each value once"),
    ("pref-null-value", setting("preflight.sharedPreferences.prefs.none", None), "preflight.sharedPreferences.prefs.none: expected a boolean"),
    ("pref-file-with-slash", setting("preflight.sharedPreferences", {"../evil": {"a": True}}), "preflight.sharedPreferences: expected a preferences file name"),
    ("clear-app-data-yes", setting("preflight.clearAppData", "yes"), "preflight.clearAppData: expected true or false, got 'yes'"),
    ("package-name-spaces", setting("app.packageName", "not a package"), "app.packageName: expected an Android package name"),
    ("launch-uri-no-scheme", setting("preflight.launchUri", "/demos/bugs"), "preflight.launchUri: expected a URI with a scheme"),
    ("allowed-tools-empty", setting("claude.allowedTools", []), "claude.allowedTools: expected a list with at least 1 entry"),
    ("disallowed-tool-spaces", setting("claude.disallowedTools", ["two words"]), "claude.disallowedTools[0]: expected a tool name without spaces or commas"),
    ("model-empty", setting("claude.model", ""), "claude.model: expected a non-empty string"),
    ("failure-pattern-blank", setting("failurePatterns", [""]), "failurePatterns[0]: expected a non-empty string"),
    ("baseline-digest", setting("baseline", {"suiteDigest": "abc"}), "baseline.suiteDigest: expected 'sha256:' followed by lowercase hex digits"),
    ("baseline-negative-metric", setting("baseline", {"metrics": {"toolCalls": -1}}), "baseline.metrics.toolCalls: expected a number >= 0"),
    ("baseline-fingerprint-int", setting("baseline", {"deviceFingerprint": {"sdk": 34}}), "baseline.deviceFingerprint.sdk: expected a string, got 34"),
    ("tool-sequence-full-name", setting("baselineToolSequence", ["mcp__agentbench__tapOn"]), "baselineToolSequence[0]: expected a short tool name"),
    ("non-string-pref-key", "name: demo\nplatform: android\nprompt: ../prompts/demo.txt\napp: {packageName: com.example.app}\n"
     "preflight: {sharedPreferences: {prefs: {1: true}}}\nverify: {screenIncludes: [Done]}\n",
     "preflight.sharedPreferences.prefs.1: expected a string key, got 1"),
    ("duplicate-key", "name: demo\nplatform: android\nname: demo\n", "line 3, column 1: while constructing a mapping found duplicate key 'name' (first defined on line 1)"),
    # The unclosed `{` is on line 2; pyyaml notices it on line 3, and both are named.
    ("yaml-syntax", "name: demo\nverify: {screenIncludes: [Done]\nplatform: android\n",
     "(yaml) line 2, column 9: while parsing a flow mapping expected ',' or '}', but got '<scalar>' (on line 3, column 1)"),
    # A key without its colon is line 2's fault; pyyaml gives up at the start of line 3.
    ("yaml-missing-colon", "name: demo\nprompt ../prompts/demo.txt\nplatform: android\n",
     "(yaml) line 2, column 1: while scanning a simple key could not find expected ':'"),
    ("yaml-unclosed-quote", "name: demo\nprompt: \"../prompts/demo.txt\nplatform: android\n",
     "(yaml) line 2, column 9: while scanning a quoted scalar found unexpected end of stream"),
    ("yaml-bad-indent", "name: demo\napp:\n    packageName: a\n  apkPath: b\n", "(yaml) line 4, column 3: while parsing a block mapping"),
    ("top-level-list", "- name: demo\n", "(top level): expected a mapping of suite keys"),
    ("empty-file", "", "(top level): expected a mapping of suite keys, got null"),
]


@pytest.mark.parametrize(("mutation", "expected"), [pytest.param(m, e, id=i) for i, m, e in MALFORMED])
def test_malformed_suite_names_key_path_value_and_expectation(tmp_path: Path, mutation, expected: str) -> None:
    prompt = b"Use {device}.\n" if expected.startswith("prompt: unknown placeholder") else None
    with pytest.raises(SuiteError) as excinfo:
        load_mutated(tmp_path, mutation, prompt)
    assert expected in str(excinfo.value)
    assert "Traceback" not in str(excinfo.value)


def test_there_are_at_least_thirty_malformed_examples() -> None:
    assert len(MALFORMED) >= 30


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        (b"\xff\xfe not utf-8", "prompt: expected UTF-8 text"),
        (b"   \n", "prompt: expected a non-empty prompt"),
    ],
)
def test_prompt_must_be_non_empty_utf8(tmp_path: Path, prompt: bytes, expected: str) -> None:
    with pytest.raises(SuiteError, match=expected):
        load_suite(write_suite(tmp_path, BASE, prompt=prompt), tmp_path)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    data = copy.deepcopy(BASE)
    data["claude"]["timeoutSeconds"] = -1
    data["verify"]["screenIncludes"] = []
    data["typo"] = 1
    data["name"] = "wrong"
    with pytest.raises(SuiteError) as excinfo:
        load_suite(write_suite(tmp_path, data), tmp_path)
    problems = excinfo.value.problems
    assert len(problems) == 4
    assert str(excinfo.value).startswith("suites/demo.yml: 4 problems")
    for fragment in ("claude.timeoutSeconds", "verify.screenIncludes", "typo: unknown key", "name: expected 'demo'"):
        assert any(fragment in problem for problem in problems), fragment


VALID = [
    ("minimal-defaults", lambda d: [d.pop(k) for k in ("preflight", "claude", "failurePatterns", "ignoredFailurePatterns")]),
    ("no-launch-uri", removing("preflight.launchUri")),
    ("apk-relative-to-rootdir", setting("app.apkPath", "build/app.apk")),
    ("system-prompt-placeholders", setting("claude.appendSystemPrompt", "{deviceSerial} {packageName} {runDirectory}")),
    ("json-braces-are-not-placeholders", setting("claude.appendSystemPrompt", 'Reply {"ok": true} or {}')),
    ("pref-types", setting("preflight.sharedPreferences.prefs", {
        "flag": False, "count": MAX_SAFE_INTEGER, "low": -MAX_SAFE_INTEGER, "zero": 0.0, "ratio": 1.5,
        "subnormal": 1e-40, "max_float": 3.4e38, "name": "Ada", "tags": ["a", "b"], "empty_set": [],
    })),
    ("settle-zero", setting("preflight.settleSeconds", 0)),
    ("settle-sleep", setting("preflight.settleSleep", True)),
    ("timeout-fraction", setting("claude.timeoutSeconds", 0.5)),
    ("idle-timeout", setting("claude.idleTimeoutSeconds", 120)),
    ("budget-cents", setting("claude.maxBudgetUsd", 0.01)),
    ("one-screen-check", setting("verify.screenIncludes", ["Only this"])),
    ("tools-bare-and-full", setting("claude", {"allowedTools": ["mcp__agentbench", "observe"], "disallowedTools": ["openLink", "Write"]})),
    ("full-baseline", setting("baseline", FULL_BASELINE)),
    ("apk-baseline", setting("baseline", {"appBuild": {"versionName": "1.0", "versionCode": 1, "apkSha256": "0123abcd"}})),
    ("empty-baseline", setting("baseline", {})),
    ("tool-sequence", setting("baselineToolSequence", ["observe", "tapOn", "observe"])),
]


@pytest.mark.parametrize("mutation", [pytest.param(m, id=i) for i, m in VALID])
def test_valid_suite_loads(tmp_path: Path, mutation) -> None:
    suite = load_mutated(tmp_path, mutation)
    assert suite.name == "demo"
    assert suite.verify.screen_includes


def test_defaults_are_the_seeds(tmp_path: Path) -> None:
    data = {k: v for k, v in BASE.items() if k not in ("preflight", "claude", "failurePatterns", "ignoredFailurePatterns")}
    suite = load_suite(write_suite(tmp_path, data), tmp_path)
    assert suite.preflight.clear_app_data is True
    assert suite.preflight.settle_seconds == 2.0
    assert suite.preflight.settle_sleep is False
    assert suite.preflight.launch_uri is None
    assert suite.preflight.shared_preferences == {}
    assert suite.claude.timeout_seconds == 900.0
    assert suite.claude.idle_timeout_seconds is None
    assert suite.claude.allowed_tools is None
    assert suite.claude.disallowed_tools == ()
    assert suite.claude.max_budget_usd is None
    assert suite.claude.model is None
    assert suite.baseline is None


def test_values_become_typed_fields(tmp_path: Path) -> None:
    data = copy.deepcopy(BASE)
    data["app"]["apkPath"] = "build/app.apk"
    data["preflight"]["sharedPreferences"]["prefs"].update({"tags": ["a", "b"], "ratio": 0.25, "n": 3})
    data["baseline"] = FULL_BASELINE
    data["claude"]["idleTimeoutSeconds"] = 90
    suite = load_suite(write_suite(tmp_path, data), tmp_path)
    assert suite.app.apk_path == (tmp_path / "build" / "app.apk").resolve()
    assert suite.claude.idle_timeout_seconds == 90.0 and isinstance(suite.claude.idle_timeout_seconds, float)
    prefs = suite.preflight.shared_preferences["prefs"]
    assert prefs == {"done": True, "tags": ("a", "b"), "ratio": 0.25, "n": 3}
    assert [type(v) for v in prefs.values()] == [bool, tuple, float, int]
    assert suite.prompt_path == (tmp_path / "prompts" / "demo.txt").resolve()
    assert suite.prompt_text.startswith("Use {deviceSerial}.")
    assert suite.baseline == FULL_BASELINE
    assert suite.line == 0


def test_yaml_12_meanings_are_kept(tmp_path: Path) -> None:
    text = (
        "# a comment first\nname: demo\nplatform: android\nprompt: ../prompts/demo.txt\n"
        "app: {packageName: com.example.app}\n"
        "preflight: {sharedPreferences: {prefs: {mode: on, answer: yes, day: 2026-11-30}}}\n"
        "verify: {screenIncludes: [Done]}\n"
        "baseline: {recordedAt: 2026-11-30T03:00:00Z}\n"
    )
    suite = load_suite(write_suite(tmp_path, text=text), tmp_path)
    assert suite.preflight.shared_preferences["prefs"] == {"mode": "on", "answer": "yes", "day": "2026-11-30"}
    assert suite.baseline == {"recordedAt": "2026-11-30T03:00:00Z"}
    assert suite.line == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Serial {deviceSerial}, app {packageName}, dir {runDirectory}.", "Serial emulator-5554, app com.x, dir /r."),
        ('JSON {"a": 1} and {other} stay', 'JSON {"a": 1} and {other} stay'),
        ("{deviceSerial}{deviceSerial}", "emulator-5554emulator-5554"),
    ],
)
def test_fill_placeholders(text: str, expected: str) -> None:
    assert fill_placeholders(text, device_serial="emulator-5554", package_name="com.x", run_directory="/r") == expected


def suite_digest(suite, *, model):
    return raw_suite_digest(suite.raw, prompt_text=suite.prompt_text, model_override=model)


def test_suite_digest_covers_the_task_but_not_the_baseline(tmp_path: Path) -> None:
    plain = load_suite(write_suite(tmp_path, BASE), tmp_path)
    with_baseline = load_suite(write_suite(tmp_path, {**BASE, "baseline": FULL_BASELINE}), tmp_path)
    assert suite_digest(plain, model=None) == suite_digest(with_baseline, model=None)
    assert suite_digest(plain, model=None) != suite_digest(plain, model="claude-opus-5")
    reworded = load_suite(write_suite(tmp_path, BASE, prompt=b"Something else\n"), tmp_path)
    assert suite_digest(reworded, model=None) != suite_digest(plain, model=None)
    assert suite_digest(plain, model=None).startswith("sha256:") and len(suite_digest(plain, model=None)) == 23


@pytest.mark.parametrize(
    ("name", "package", "launch_uri", "start", "answers", "screen", "disallowed", "clear"),
    [
        ("bug-repro", "dev.jasonpearson.automobile.playground", "automobile://playground/demos/bugs/repro",
         ("Bug Reproduction Demo",), ("EXPECTED_COUNT: {taps}", "DISPLAYED_COUNT: 0"),
         ("Expected count: {taps}\nDisplayed count: 0\nStatus: Bug triggered: UI did not update",), (), True),
        ("ux-flow", "dev.jasonpearson.automobile.playground", "automobile://playground/demos/ux/start",
         ("Step 1 of 3: Start",), ("SELECTED_PLAN: {plan}", "FLOW_STATUS: complete"), ("Selected plan: {plan}", "Flow complete"),
         ("openLink", "navigateTo", "executePlan"), True),
        ("wifi-on", "com.android.settings", None, ("Network & internet", "Wi-Fi off"), ("WIFI: on",), ("AndroidWifi",), (), False),
    ],
)
def test_committed_suites_match_the_agreed_screens(name, package, launch_uri, start, answers, screen, disallowed, clear) -> None:
    suite = load_suite(REPO_ROOT / "benchmark" / "agent" / "suites" / f"{name}.yml", REPO_ROOT)
    assert suite.app.package_name == package
    assert suite.preflight.launch_uri == launch_uri
    assert suite.preflight.start_screen_includes == start
    assert suite.verify.answer_includes == answers
    assert suite.verify.screen_includes == screen
    assert suite.claude.disallowed_tools == disallowed
    assert suite.preflight.clear_app_data is clear
    for line in answers:
        assert line.split(":")[0] + ":" in suite.prompt_text, "the prompt must ask for every KEY: line"


def test_playground_suites_seed_onboarding_and_guest_mode() -> None:
    for name in ("bug-repro", "ux-flow"):
        suite = load_suite(REPO_ROOT / "benchmark" / "agent" / "suites" / f"{name}.yml", REPO_ROOT)
        assert suite.preflight.shared_preferences == {
            "onboarding_prefs": {"onboarding_completed": True},
            "auth_prefs": {"is_guest_mode": True},
        }
