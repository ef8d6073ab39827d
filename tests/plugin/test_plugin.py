"""Tests for plugin.py through pytester: collection, selection, bad suites, markers, options, fixtures, loading."""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET

import pytest
from suitefiles import PROMPT, make_suites, suite_text  # noqa: F401

from adbserver import free_port

def test_node_ids_and_collect_only(pytester: pytest.Pytester) -> None:
    make_suites(pytester, "bug-repro", "ux-flow")
    result = pytester.runpytest("benchmark/", "--collect-only", "-q")
    result.stdout.fnmatch_lines([
        "benchmark/agent/suites/bug-repro.yml::bug-repro",
        "benchmark/agent/suites/ux-flow.yml::ux-flow",
        "2 tests collected*",
    ])
    assert result.ret == 0


@pytest.mark.parametrize("expression", ["bug_repro", "bug-repro", "bug_repro and agentbench", "not ux_flow"])
def test_k_selects_both_spellings(pytester: pytest.Pytester, expression: str) -> None:
    make_suites(pytester, "bug-repro", "ux-flow")
    result = pytester.runpytest("benchmark/", "--agentbench-dry-run", "-k", expression)
    result.assert_outcomes(passed=1, deselected=1)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["benchmark/agent/suites/ux-flow.yml"], {"ux-flow"}),
        (["benchmark/agent/suites"], {"bug-repro", "ux-flow"}),
        (["benchmark/agent/suites/bug-repro.yml::bug-repro"], {"bug-repro"}),
        (["benchmark/", "-m", "agentbench"], {"bug-repro", "ux-flow"}),
    ],
)
def test_paths_and_markers_select(pytester: pytest.Pytester, args: list[str], expected: set[str]) -> None:
    make_suites(pytester, "bug-repro", "ux-flow")
    items, _ = pytester.inline_genitems(*args)
    assert {item.name for item in items} == expected


def test_item_location_points_at_the_name_line(pytester: pytest.Pytester) -> None:
    root = make_suites(pytester)
    (root / "suites" / "demo.yml").write_text("# leading comment\n\n" + suite_text("demo"), encoding="utf-8")
    items, _ = pytester.inline_genitems("benchmark/")
    assert [item.location for item in items] == [("benchmark/agent/suites/demo.yml", 2, "suite: demo")]
    assert items[0].get_closest_marker("agentbench") is not None


@pytest.mark.parametrize(
    ("args", "ini", "expected"),
    [
        ([], "", {"test_unit"}),
        ([], "testpaths = benchmark", set()),
        (["tests"], "", {"test_unit"}),
        (["."], "", {"bug-repro", "ux-flow", "test_unit"}),
        (["benchmark/agent"], "", {"bug-repro", "ux-flow"}),
        (["tests", "benchmark/agent/suites/ux-flow.yml"], "", {"ux-flow", "test_unit"}),
    ],
    ids=["bare-pytest", "testpaths", "tests-only", "dot", "a-parent-dir", "a-suite-beside-tests"],
)
def test_a_suite_is_collected_only_when_the_command_line_names_it(
    pytester: pytest.Pytester, args: list[str], ini: str, expected: set[str]
) -> None:
    # A bare `pytest` (or testpaths) must never start an agent that spends money: only a named
    # suite file, or a directory named on the command line that holds it, collects.
    make_suites(pytester, "bug-repro", "ux-flow")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_unit.py").write_text("def test_unit():\n    pass\n", encoding="utf-8")
    pytester.makeini(f"[pytest]\n{ini}\n")
    items, _ = pytester.inline_genitems(*args)
    assert {item.name for item in items} == expected


def test_other_yaml_is_never_touched(pytester: pytest.Pytester) -> None:
    root = make_suites(pytester, "demo")
    (root / "plans").mkdir()
    (root / "plans" / "demo.yml").write_text("steps: [unclosed\n", encoding="utf-8")
    (pytester.path / "config.yml").write_text(": : not yaml {\n", encoding="utf-8")
    (root / "suites" / "notes.yaml").write_text("not: [a suite\n", encoding="utf-8")
    (root / "suites" / "README.md").write_text("docs\n", encoding="utf-8")
    result = pytester.runpytest("benchmark/", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["benchmark/agent/suites/demo.yml::demo", "1 test collected*"])
    assert result.ret == 0


def test_suite_dir_names_come_from_the_ini(pytester: pytest.Pytester) -> None:
    root = make_suites(pytester, base="bench")
    (root / "suites").rename(root / "jobs")
    (root / "jobs" / "demo.yml").write_text(suite_text("demo"), encoding="utf-8")
    pytester.makeini("[pytest]\nagentbench_suite_dirs = jobs other\n")
    items, _ = pytester.inline_genitems("bench/")
    assert [item.nodeid for item in items] == ["bench/jobs/demo.yml::demo"]


def _bad_suites(pytester: pytest.Pytester) -> None:
    root = make_suites(pytester, "good")
    (root / "suites" / "slow.yml").write_text(suite_text("slow", claude="{timeoutSeconds: -5}"), encoding="utf-8")
    (root / "suites" / "typo.yml").write_text(suite_text("typo", verfy="{}"), encoding="utf-8")
    (root / "suites" / "broken.yml").write_text("name: broken\nverify: [\n", encoding="utf-8")
    (root / "suites" / "twice.yml").write_text(suite_text("twice") + "name: twice\n", encoding="utf-8")
    # A prompt line without its colon: the fault is line 3, where pyyaml notices it on line 4.
    (root / "suites" / "colon.yml").write_text(suite_text("colon").replace("prompt: ", "prompt "), encoding="utf-8")
    (root / "suites" / "noprompt.yml").write_text(suite_text("noprompt").replace("prompt: ../prompts/task.txt\n", ""), encoding="utf-8")


BAD_SUITE_LINES = {
    "broken": "benchmark/agent/suites/broken.yml: (yaml) line 3, column 1:*",
    "colon": "benchmark/agent/suites/colon.yml: (yaml) line 3, column 1: while scanning a simple key could not find expected ':'",
    "noprompt": "benchmark/agent/suites/noprompt.yml: prompt: required key is missing",
    "slow": "benchmark/agent/suites/slow.yml: claude.timeoutSeconds: expected a number > 0, got -5",
    "twice": "*found duplicate key 'name' (first defined on line 1)*",
    "typo": "benchmark/agent/suites/typo.yml: verfy: unknown key (did you mean 'verify'?)*",
}


def test_each_bad_suite_fails_as_its_own_item_and_the_others_run(pytester: pytest.Pytester) -> None:
    _bad_suites(pytester)
    result = pytester.runpytest("benchmark/", "--agentbench-dry-run", "--junitxml=report.xml", "--agentbench-json=session.json")
    # Each bad suite is one failed item named after its file; the good suite still runs.
    result.assert_outcomes(passed=1, failed=len(BAD_SUITE_LINES))
    result.stdout.fnmatch_lines(["*agentbench dry run*", "*benchmark/agent/suites/good.yml::good*"])
    for name, line in sorted(BAD_SUITE_LINES.items()):
        result.stdout.fnmatch_lines([f"*_ invalid suite: {name} _*", line])
        result.stdout.fnmatch_lines([f"FAILED benchmark/agent/suites/{name}.yml::{name} - *"])
        result.stdout.fnmatch_lines([f"INVALID benchmark/agent/suites/{name}.yml::{name} - *"])
    output = result.stdout.str()
    assert "Traceback" not in output and "errors during collection" not in output
    assert "suite.py" not in output and "raise SuiteError" not in output and "items.py" not in output
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    cases = {case.get("name"): case for case in ET.parse(pytester.path / "report.xml").getroot().iter("testcase")}
    assert cases["good"].find("failure") is None
    assert cases["slow"].find("failure").get("message") == "benchmark/agent/suites/slow.yml: claude.timeoutSeconds: expected a number > 0, got -5"
    document = json.loads((pytester.path / "session.json").read_text(encoding="utf-8"))
    assert sorted(entry["nodeid"] for entry in document["invalidSuites"]) == sorted(
        f"benchmark/agent/suites/{name}.yml::{name}" for name in BAD_SUITE_LINES)
    # Not runs: no incomplete run, no statistics for them.
    assert document["unrecorded"] == [] and document["counts"] == {"passed": 0, "failed": 0, "incomplete": 0}


def test_collect_only_lists_a_bad_suite_with_its_problem(pytester: pytest.Pytester) -> None:
    _bad_suites(pytester)
    result = pytester.runpytest("benchmark/", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["benchmark/agent/suites/broken.yml::broken", "benchmark/agent/suites/good.yml::good"])
    result.stdout.fnmatch_lines(["INVALID benchmark/agent/suites/typo.yml::typo - *verfy: unknown key*"])
    # Nothing ran, but a suite is broken: --co says so in its status too.
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "errors during collection" not in result.stdout.str()


def test_junitxml_has_one_testcase_per_suite(pytester: pytest.Pytester) -> None:
    make_suites(pytester, "alpha", "beta", "gamma")
    result = pytester.runpytest("benchmark/", "--agentbench-dry-run", "--junitxml=report.xml")
    assert result.ret == 0
    cases = ET.parse(pytester.path / "report.xml").getroot().findall(".//testcase")
    assert sorted(case.get("name") for case in cases) == ["alpha", "beta", "gamma"]
    assert {case.get("classname") for case in cases} == {"benchmark.agent.suites.alpha.yml", "benchmark.agent.suites.beta.yml", "benchmark.agent.suites.gamma.yml"}
    assert all(case.find("failure") is None and case.find("error") is None for case in cases)


def test_options_are_in_the_agentbench_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines([
        "agent benchmarks on Android devices (pytest-agentbench):",
        "*--device=SERIAL*",
        "*--model=MODEL*",
        "*--claude=COMMAND*",
        "*--server-instructions*",
        "*--agentbench-output=DIR*",
        "*--agentbench-dry-run*",
    ])
    result.stdout.fnmatch_lines(["*agentbench_output (string)*", "*agentbench_suite_dirs (args)*", "*agentbench_server (string)*", "*agentbench_automobile_dir (string)*"])


def test_repeats_are_items_named_by_instance(pytester: pytest.Pytester) -> None:
    root = make_suites(pytester, "bug-repro")
    (root / "suites" / "seeded.yml").write_text(
        suite_text("seeded", params="{n: {type: integer, min: 10, max: 99}}").replace("screenIncludes: [Done]", "screenIncludes: ['{n}']"),
        encoding="utf-8",
    )
    result = pytester.runpytest("benchmark/", "--collect-only", "-q", "--agentbench-repeat", "3", "--agentbench-seed", "4")
    assert result.ret == 0
    ids = [line for line in result.stdout.lines if "::" in line]
    assert ids[:3] == [f"benchmark/agent/suites/bug-repro.yml::bug-repro[r{r}]" for r in (1, 2, 3)]
    assert [re.fullmatch(r"benchmark/agent/suites/seeded\.yml::seeded\[r(\d)-(\d\d)\]", line).group(1) for line in ids[3:]] == ["1", "2", "3"]
    # -k still selects a suite's runs by its name.
    selected = pytester.runpytest("benchmark/", "--collect-only", "-q", "-k", "bug_repro", "--agentbench-repeat", "2")
    assert [line for line in selected.stdout.lines if "::" in line] == [f"benchmark/agent/suites/bug-repro.yml::bug-repro[r{r}]" for r in (1, 2)]
    items, _ = pytester.inline_genitems("benchmark/", "--agentbench-repeat", "2", "--agentbench-seed", "0")
    assert items[0].user_properties == [("agentbench_suite", "bug-repro"), ("agentbench_instance", "r1"), ("agentbench_seed", "0")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agentbench-repeat", "2", "--agentbench-record-baseline"], "*--agentbench-repeat records no baseline*"),
        (["--agentbench-repeat", "2", "--agentbench-from-result", "x"], "*use one of them*"),
    ],
    ids=["with-record-baseline", "with-from-result"],
)
def test_repeat_conflicts_are_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    make_suites(pytester, "demo")
    result = pytester.runpytest("benchmark/", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_dry_run_shows_each_instance_filled(pytester: pytest.Pytester) -> None:
    root = make_suites(pytester)
    (root / "prompts" / "seeded.txt").write_text("Type {word} on {deviceSerial}.\n", encoding="utf-8")
    (root / "suites" / "seeded.yml").write_text(
        suite_text("seeded", params="{word: {type: word}}").replace("../prompts/task.txt", "../prompts/seeded.txt"), encoding="utf-8"
    )
    result = pytester.runpytest("benchmark/", "--agentbench-dry-run", "--agentbench-repeat", "2", "-rA")
    assert result.ret == 0
    result.assert_outcomes(passed=2)


def test_marker_is_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.agentbench: an agent benchmark suite*"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "agentbench_server=nope"], "*agentbench_server = 'nope' is not a known MCP server profile*"),
        (["-o", "agentbench_server=auto-mobile"], "*needs the AutoMobile checkout*"),
        (["-o", "agentbench_server=mobile-mcp", "--server-instructions"], "*--server-instructions: the mobile-mcp MCP server*"),
        (["--model", " "], "*Invalid model ' ': expected a non-empty value*"),
        (["--device", "sim:0"], "*--device sim:0: expected sim or sim:N with N >= 1*"),
        (["--device", "sim:x"], "*--device sim:x: expected sim or sim:N with N >= 1*"),
        (["--device", "host/serial"], "*--device host/serial: expected HOST:PORT/SERIAL*"),
        (["--agentbench-repeat", "0"], "*Invalid repeat count '0': expected a whole number from 1 to 1000*"),
        (["--agentbench-repeat", "many"], "*Invalid repeat count 'many'*"),
        (["--agentbench-seed", "-3"], "*Invalid seed '-3': expected a non-negative whole number as the seed*"),
        (["--agentbench-compare", "missing.json"], "*--agentbench-compare */missing.json: no such file*"),
    ],
)
def test_bad_settings_are_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    make_suites(pytester, "demo")
    result = pytester.runpytest("benchmark/", "--agentbench-dry-run", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


FIXTURE_CONFTEST = '''
import sys, types
import pytest

EVENTS = []

@pytest.fixture(scope="session")
def agentbench_device():
    EVENTS.append("device")
    yield "emulator-5554"
    EVENTS.append("device teardown")

@pytest.fixture
def agentbench_run_dir(tmp_path):
    EVENTS.append("run_dir")
    return tmp_path

@pytest.fixture
def agentbench_private_daemon(agentbench_run_dir):
    EVENTS.append("daemon")
    yield {"dir": agentbench_run_dir}
    EVENTS.append("daemon teardown")

@pytest.fixture
def agentbench_preflight(agentbench_device):
    EVENTS.append("preflight")
    return "preflighted"

@pytest.fixture(autouse=True)
def fake_run_module(monkeypatch):
    # Stand in for the item's real run so its fixtures can be observed here.
    def run_suite_item(item):
        EVENTS.append("run " + item.suite.name + " " + ",".join(sorted(item.funcargs)))
        assert item.funcargs["agentbench_device"] == "emulator-5554"
        assert item.funcargs["agentbench_preflight"] == "preflighted"
    monkeypatch.setattr("pytest_agentbench.items.run_suite_item", run_suite_item)

def pytest_sessionfinish(session):
    print("EVENTS:", "|".join(EVENTS))
'''


def test_items_request_fixtures_like_test_functions(pytester: pytest.Pytester) -> None:
    make_suites(pytester, "demo")
    pytester.makeconftest(FIXTURE_CONFTEST)
    # The usage checks need a real agent program and leave simulated phones to the session's pool.
    result = pytester.runpytest("benchmark/", "-s", "--device", "sim", "--claude", sys.executable)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "*EVENTS: device|run_dir|daemon|preflight|run demo agentbench_device,agentbench_preflight,"
        "agentbench_private_daemon,agentbench_run_dir,fake_run_module,monkeypatch,request,tmp_path,tmp_path_factory"
        "|daemon teardown|device teardown",
    ])


def test_dry_run_requests_no_run_fixtures(pytester: pytest.Pytester) -> None:
    make_suites(pytester, "demo")
    pytester.makeconftest('''
import pytest

@pytest.fixture
def agentbench_device():
    raise AssertionError("a dry run must not resolve a device")
''')
    result = pytester.runpytest("benchmark/", "--agentbench-dry-run")
    result.assert_outcomes(passed=1)


def test_no_device_is_one_usage_error_before_collection(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # A fresh adb server port: the plugin starts a server that lists no device, and stops it after.
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(free_port()))
    make_suites(pytester, "demo", "other")
    result = pytester.runpytest_subprocess("benchmark/", "--claude", sys.executable, "--agentbench-repeat", "3", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert errors == [
        "ERROR: no online Android device: the adb server lists nothing; check what adb sees with `adb devices`, "
        "name a phone with `--device SERIAL`, or run on a simulated phone with `--device sim --claude agentbench-replay`"
    ]
    assert "collected" not in result.stdout.str() and "Traceback" not in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize(
    ("args", "collected"),
    [([], 0), (["-p", "agentbench"], 1)],
)
def test_loading_with_autoload_disabled(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str], collected: int) -> None:
    make_suites(pytester, "demo")
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess("benchmark/", *args, "--collect-only", "-q", "-p", "no:cacheprovider")
    if collected:
        result.stdout.fnmatch_lines(["benchmark/agent/suites/demo.yml::demo", "1 test collected*"])
        assert result.ret == 0
    else:
        assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_autoload_collects_without_p(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    make_suites(pytester, "demo")
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    result = pytester.runpytest_subprocess("benchmark/", "--agentbench-dry-run", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(("tbstyle", "expected"), [
    # The report alone: it lists the reasons the first line joins (that line is the short summary's and JUnit's).
    ("auto", "suite: FAILED\n  - a"),
    ("long", "suite: FAILED\n  - a"),
    ("short", "failed: a; b"),
    # pytest writes the one line (path, line, the reasons) itself.
    ("line", ""),
    ("no", ""),
])
def test_a_failed_verdict_is_shortened_the_way_tb_asks(tbstyle: str, expected: str) -> None:
    from pytest_agentbench.errors import VerdictFailed
    from pytest_agentbench.items import failure_text

    assert failure_text(VerdictFailed({}, "failed: a; b\n\nsuite: FAILED\n  - a"), tbstyle) == expected
