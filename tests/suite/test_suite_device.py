"""The suite stage's `verify.device`, `verify.noShell`, `cleanup` and `prove` rules: a valid example each, and every error naming file, key path, value, expected."""

from __future__ import annotations

from pathlib import Path

import pytest
from suitefiles import BASE, load, problems, suite_with, write_suite  # noqa: F401
from checklab import FIVE_CHECKS

from pytest_agentbench.checks import KINDS, parse_device_checks

CONTACT = FIVE_CHECKS[0]
REPORT = {"kind": "report", "name": "bugs", "bugs": [{"name": "total", "patterns": ["total"]}]}
PREFS = {"kind": "sharedPreferences", "name": "clock", "package": "com.android.deskclock", "file": "clocks",
         "key": "world_clocks", "contains": "Asia/Tokyo"}
EVENTS = {"kind": "eventLog", "name": "order", "package": "com.example.testbed",
          "sequence": [{"event": "submit", "valid": False}, {"event": {"matches": "^ok"}}]}


def test_every_kind_of_the_lab_loads_and_parses_into_typed_specs(tmp_path: Path) -> None:
    entries = [*FIVE_CHECKS, PREFS, EVENTS, REPORT]
    suite = load(tmp_path, {**suite_with(device=entries, noShell=True),
                            "cleanup": [{"restoreSetting": {"namespace": "global", "key": "wifi_on"}}, {"adb": ["am", "kill", "x"]}]})
    assert suite.verify.no_shell and suite.verify.screen_includes == ()
    assert [entry["name"] for entry in suite.verify.device] == [entry["name"] for entry in entries]
    assert {check.kind for check in parse_device_checks(suite.verify.device)} == set(KINDS)
    assert suite.cleanup[0] == {"restoreSetting": {"namespace": "global", "key": "wifi_on"}}


def test_a_device_check_is_an_oracle_but_a_report_alone_is_not(tmp_path: Path) -> None:
    assert load(tmp_path, suite_with(device=[CONTACT])).verify.screen_includes == ()
    text = problems(tmp_path, suite_with(device=[REPORT]))
    assert "verify.screenIncludes: required key is missing" in text
    assert "verify.screenIncludes: required key is missing" in problems(tmp_path, suite_with())


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({**CONTACT, "kind": "contacts"}, "verify.device[0].kind: expected a check kind: sharedPreferences, jsonFile, sqlite"),
        ({**CONTACT, "kind": "contacts"}, "got 'contacts'"),
        ({k: v for k, v in CONTACT.items() if k != "name"}, "verify.device[0].name: required key is missing"),
        ({**CONTACT, "projektion": ["a"]}, "verify.device[0].projektion: unknown key (did you mean 'projection'?)"),
        ({**CONTACT, "uri": "http://x"}, "verify.device[0].uri: expected a content:// URI without spaces, got 'http://x'"),
        ({**CONTACT, "match": {"data2": "x"}}, "verify.device[0].match.data2: expected a column of the projection (display_name, data1)"),
        ({**CONTACT, "match": {"data1": {"equal": 1}}}, "verify.device[0].match.data1: expected a value, or one matcher"),
        ({**CONTACT, "match": {"data1": {"digits": "12"}}}, "verify.device[0].match.data1.digits: expected a phone number with at least 4 digits, got '12'"),
        ({**CONTACT, "match": {"display_name": {"matches": "(unclosed"}}}, "verify.device[0].match.display_name.matches: expected a regular expression, got '(unclosed'"),
        ({**CONTACT, "count": -1}, "verify.device[0].count: expected a number >= 0, got -1"),
        ({**PREFS, "file": "a/b"}, "verify.device[0].file: expected a preferences file name (shared_prefs/NAME.xml) without '/', got 'a/b'"),
        ({**PREFS, "type": "bool"}, "verify.device[0].type: expected one of boolean, int, long, float, string, set, got 'bool'"),
        ({k: v for k, v in PREFS.items() if k != "contains"}, "verify.device[0]: expected exactly one matcher (equals, contains, matches, digits, exists, inAnswer, token) for its key, got none"),
        ({**PREFS, "equals": "x"}, "got equals, contains"),
        ({**{k: v for k, v in PREFS.items() if k != "key"}, "list": {"count": "n", "item": "c_"}, "type": "string"},
         "verify.device[0]: type applies to a key, not to a list (its items are compared as read)"),
        ({**{k: v for k, v in PREFS.items() if k not in ("key", "contains")},
          "anyOf": [{"list": {"count": "n", "item": "c_"}, "type": "int", "contains": "x"}]},
         "verify.device[0].anyOf[0]: type applies to a key, not to a list"),
        ({**PREFS, "anyOf": [{"key": "a", "equals": 1}]}, "expected either anyOf or key with a matcher, got both"),
        ({**{k: v for k, v in PREFS.items() if k not in ("key", "contains")}, "anyOf": [{"key": "a"}]},
         "verify.device[0].anyOf[0]: expected exactly one matcher"),
        ({k: v for k, v in PREFS.items() if k not in ("key",)}, "verify.device[0].key: required key is missing (or give anyOf"),
        ({**FIVE_CHECKS[1], "file": "/data/data/x/Preferences"}, "verify.device[0].file: expected a path inside the app's storage, without a leading '/' or '..'"),
        ({**FIVE_CHECKS[1], "file": "../other/Preferences"}, "without a leading '/' or '..'"),
        ({**FIVE_CHECKS[2], "query": "DELETE FROM pinned"}, "verify.device[0].query: expected one SELECT (or WITH ... SELECT) statement, got 'DELETE FROM pinned'"),
        ({**FIVE_CHECKS[2], "count": 1}, "verify.device[0]: expected exactly one of rows, includes or count, got rows, count"),
        ({**FIVE_CHECKS[2], "package": "chrome"}, "verify.device[0].package: expected an Android package name such as com.example.app, or one {param} that draws one, got 'chrome'"),
        ({**FIVE_CHECKS[3], "mode": "restricted"}, "verify.device[0].mode: expected one of allow, ignore, deny, default, foreground, got 'restricted'"),
        ({**FIVE_CHECKS[4], "added": {"maxSide": 0}}, "verify.device[0].added.maxSide: expected a whole number of pixels above 0, or one {param} that draws one, got 0"),
        ({**FIVE_CHECKS[4], "original": {"width": 1200}}, "verify.device[0].original.displayName: required key is missing"),
        ({**EVENTS, "sequence": []}, "verify.device[0].sequence: expected a list with at least 1 entry"),
        ({**EVENTS, "sequence": [{"event": {"matches": "["}}]}, "verify.device[0].sequence[0].event.matches: expected a regular expression"),
        ({**REPORT, "bugs": [{"name": "a", "patterns": ["("]}]}, "verify.device[0].bugs[0].patterns[0]: expected a regular expression, got '('"),
        ({**REPORT, "minFound": 2}, "verify.device[0].minFound: expected at most the number of bugs (1), got 2"),
        ({**REPORT, "bugs": [{"name": "a", "patterns": ["x"]}, {"name": "a", "patterns": ["y"]}]},
         "verify.device[0].bugs[1].name: expected a name no other bug has, got 'a' (also bugs[0])"),
        ({**PREFS, "contains": {"fromPrefs": {"package": "com.x.y", "file": "f", "key": "k"}}},
         "verify.device[0]: fromPrefs (an operand read from the device) works in a content check's match only, not in sharedPreferences"),
        ({**CONTACT, "match": {"data1": {"contains": {"fromPrefs": {"package": "com.x.y", "file": "a/b", "key": "k"}}}}},
         "verify.device[0].match.data1: expected a value, or one matcher"),
    ],
    ids=["unknown-kind", "unknown-kind-value", "no-name", "unknown-key", "bad-uri", "match-outside-projection", "bad-matcher",
         "short-phone", "bad-regex", "negative-count", "prefs-file-path", "prefs-type", "no-matcher", "two-matchers", "typed-list", "typed-list-in-any-of",
         "any-of-and-key", "any-of-without-matcher", "no-key", "absolute-file", "climbing-file", "not-a-select",
         "two-expectations", "bad-package", "bad-mode", "zero-size", "original-without-name", "empty-sequence",
         "event-regex", "report-regex", "min-found", "duplicate-bug", "from-prefs-outside-content", "from-prefs-bad-file"],
)
def test_bad_device_checks_name_the_key_path_value_and_expectation(tmp_path: Path, entry: dict, message: str) -> None:
    device = [entry] if entry.get("kind") != "report" else [CONTACT, entry]
    text = problems(tmp_path, suite_with(device=device))
    assert message.replace("verify.device[0]", f"verify.device[{len(device) - 1}]") in text, text


def test_check_names_are_unique_and_not_the_other_checks_names(tmp_path: Path) -> None:
    text = problems(tmp_path, suite_with(device=[CONTACT, {**FIVE_CHECKS[1], "name": CONTACT["name"]}]))
    assert "verify.device[1].name: expected a name no other check has, got 'saved-contact' (also verify.device[0])" in text
    text = problems(tmp_path, suite_with(device=[{**CONTACT, "name": "screen"}]))
    assert "verify.device[0].name: expected a name other than answer, screen, got 'screen'" in text


@pytest.mark.parametrize(
    ("cleanup", "message"),
    [
        ([{"restoreSetting": {"namespace": "globl", "key": "wifi_on"}}], "cleanup[0].restoreSetting.namespace: expected global, system or secure, got 'globl'"),
        ([{"restoreSeting": {}}], "cleanup[0].restoreSeting: unknown key (did you mean 'restoreSetting'?)"),
        ([{"pmClear": "x", "adb": ["a"]}], "cleanup[0]: expected one step: restoreSetting, restoreAppop, restoreProp, contentDelete, pmClear or adb"),
        ([{"adb": []}], "cleanup[0].adb: expected a list with at least 1 entry"),
        ([{"adb": "am force-stop x"}], "cleanup[0].adb: expected a list, got 'am force-stop x' (a string)"),
        ([{"contentDelete": {"uri": "content://x", "wher": "a"}}], "cleanup[0].contentDelete.wher: unknown key (did you mean 'where'?)"),
    ],
    ids=["namespace", "unknown-step", "two-steps", "empty-adb", "adb-as-string", "delete-key"],
)
def test_bad_cleanup_steps(tmp_path: Path, cleanup: list, message: str) -> None:
    assert message in problems(tmp_path, {**suite_with(device=[CONTACT]), "cleanup": cleanup})


TAP = {"tool": "tapOn", "args": {"text": "Save"}}


@pytest.mark.parametrize(
    ("prove", "message"),
    [
        ({"fail": []}, "prove.pass: required key is missing"),
        ({"pass": {"steps": [TAP], "answr": "x"}}, "prove.pass.answr: unknown key (did you mean 'answer'?)"),
        ({"pass": {"steps": [{"tool": "tapOn", "adb": ["x"]}]}}, "prove.pass.steps[0]: expected exactly one of tool, adb, seed or wait, got tool, adb"),
        ({"pass": {"steps": [{"adb": ["x"], "args": {}}]}}, "prove.pass.steps[0]: args and expect_error belong to a tool step, not to adb"),
        ({"pass": {"steps": [{"wait": 900}]}}, "prove.pass.steps[0].wait"),
        ({"pass": {"steps": []}, "fail": [{"name": "x", "check": "nope", "reasonIncludes": "w", "steps": []}]},
         "prove.fail[0].check: expected the name of one of the suite's checks (answer, saved-contact), got 'nope'"),
        ({"pass": {"steps": []}, "fail": [{"name": "fresh", "check": "answer", "reasonIncludes": "w", "steps": []}]},
         "prove.fail[0].name: expected a name no other scenario has (nor pass or fresh), got 'fresh'"),
        ({"pass": {"steps": []}, "fail": [{"name": "x", "check": "answer", "steps": []}]}, "prove.fail[0].reasonIncludes: required key is missing"),
        # Prove fills {device}, {packageName} and captures; a run-time placeholder would reach the phone as text.
        ({"pass": {"steps": [{"adb": ["ls", "{runDirectory}"]}]}}, "prove.pass.steps[0].adb[1]"),
    ],
    ids=["no-pass", "typo", "two-step-kinds", "args-on-adb", "long-wait", "unknown-check", "reserved-name", "no-word",
         "run-time-placeholder"],
)
def test_bad_prove_blocks(tmp_path: Path, prove: dict, message: str) -> None:
    assert message in problems(tmp_path, {**suite_with(device=[CONTACT]), "prove": prove})


def test_a_malformed_entry_is_reported_by_the_schema_without_a_traceback(tmp_path: Path) -> None:
    text = problems(tmp_path, {**suite_with(device=[{"kind": "report", "name": "r", "bugs": "all"}, "not a mapping"]),
                               "prove": {"pass": "x", "fail": [{"name": 1}]}})
    assert "verify.device[0].bugs: expected a list" in text and "verify.device[1]: expected a mapping" in text
    assert "prove.pass: expected a mapping" in text and "prove.fail[0].name: expected a string" in text
