"""Tests for sessionseed.py through pytester: a drawn seed in the header and the records, --lf/--ff/--sw/--deselect on seeded items, xdist workers, the repeats warning.

Issue 28 D (a secret seed per session) and issue 29 part 3 (pytest's rerun habits on seeded
suites). The runs are faked (`run_suite_item` replaced in a conftest): the suites' three plans
are drawn once each by three repeats, whatever the seed, and the run fails exactly on `Pro`.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from pytest_agentbench.session import session_key
from pytest_agentbench.sessionseed import CACHE_KEY

PROMPT = "Choose the {plan} plan on {deviceSerial}.\nRESULT: <value>\n"
SUITES = ("alpha", "beta")

CONFTEST = '''
import pytest

@pytest.fixture(scope="session")
def agentbench_device():
    return "emulator-5554"

@pytest.fixture
def agentbench_run_dir(tmp_path):
    return tmp_path

@pytest.fixture
def agentbench_private_daemon(agentbench_run_dir):
    return {"dir": agentbench_run_dir}

@pytest.fixture
def agentbench_preflight(agentbench_device):
    return "preflighted"

@pytest.fixture(autouse=True)
def fake_run(monkeypatch):
    # The run of an instance fails exactly when it drew the Pro plan.
    def run_suite_item(item):
        assert item.suite.instance.values["plan"] != "Pro", "the Pro plan fails"
    monkeypatch.setattr("pytest_agentbench.items.run_suite_item", run_suite_item)
'''

#: Three repeats of a three-plan suite draw each plan once: two failures in six runs, whatever the seed.
#: `--claude=PATH` in one word: a separate path would be taken for a test path when pytest picks its rootdir.
RUN = ("benchmark/", "--agentbench-repeat", "3", "--device", "sim", f"--claude={sys.executable}", "-v")
HEADER = re.compile(r"^agentbench: using --agentbench-seed=(\d+) \((.*)\)$")
OUTCOME = re.compile(r"^(benchmark/\S+::\S+) (PASSED|FAILED)")


def project(pytester: pytest.Pytester) -> None:
    root = pytester.path / "benchmark" / "agent"
    (root / "suites").mkdir(parents=True)
    (root / "prompts").mkdir()
    (root / "prompts" / "task.txt").write_text(PROMPT, encoding="utf-8")
    for name in SUITES:
        (root / "suites" / f"{name}.yml").write_text(
            f"name: {name}\nplatform: android\nprompt: ../prompts/task.txt\napp: {{packageName: com.example.app}}\n"
            "params: {plan: {type: choice, values: [Basic, Pro, Team]}}\n"
            "verify: {answerIncludes: ['RESULT: ok'], screenIncludes: ['{plan}']}\n", encoding="utf-8")
    pytester.makeconftest(CONFTEST)


def header(result: pytest.RunResult) -> tuple[int, str]:
    (match,) = [m for m in map(HEADER.match, result.outlines) if m]
    return int(match[1]), match[2]


def outcomes(result: pytest.RunResult) -> list[tuple[str, str]]:
    """(node id, PASSED or FAILED) of every run, in the order they ran."""
    return [(m[1], m[2]) for m in map(OUTCOME.match, result.outlines) if m]


def failed(result: pytest.RunResult) -> list[str]:
    return [nodeid for nodeid, outcome in outcomes(result) if outcome == "FAILED"]


# ----------------------------------------------------------------------------- a drawn seed, printed and recorded


def test_a_session_draws_a_fresh_seed_prints_it_and_names_its_instances_by_it(pytester: pytest.Pytester) -> None:
    project(pytester)
    shown = [pytester.runpytest("benchmark/", "--collect-only", "--agentbench-repeat", "3", "-p", "no:cacheprovider") for _ in range(2)]
    (seed_a, why_a), (seed_b, _) = header(shown[0]), header(shown[1])
    assert seed_a != seed_b and why_a == "drawn for this session; pass it to rerun these instances"
    # The seed given back reproduces the session exactly: the same instances, the same item ids.
    ids = [line.strip() for line in shown[0].outlines if "<SuiteItem" in line]
    assert len(ids) == 6
    again = pytester.runpytest("benchmark/", "--collect-only", "--agentbench-repeat", "3", "--agentbench-seed", str(seed_a))
    assert [line.strip() for line in again.outlines if "<SuiteItem" in line] == ids and header(again) == (seed_a, "given")
    # A session that names no suite draws no instance and says nothing of seeds.
    pytester.makepyfile(test_unit="def test_unit():\n    pass\n")
    unit = pytester.runpytest("test_unit.py")
    unit.assert_outcomes(passed=1)
    assert not any(line.startswith("agentbench:") for line in unit.outlines)


def test_the_seed_is_recorded_in_the_session_document_and_junit(pytester: pytest.Pytester) -> None:
    project(pytester)
    result = pytester.runpytest(*RUN, "--agentbench-json", "session.json", "--junitxml", "junit.xml")
    result.assert_outcomes(passed=4, failed=2)
    seed, _ = header(result)
    document = json.loads((pytester.path / "session.json").read_text(encoding="utf-8"))
    assert (document["seed"], document["seedSource"]) == (seed, "drawn")
    junit = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    assert f'<property name="agentbench.seed" value="{seed}" />' in junit
    assert junit.count(f'<property name="agentbench_seed" value="{seed}" />') == 6
    # The seed is kept for the next session's rerun once this one is over.
    assert pytester.parseconfigure().cache.get(CACHE_KEY, None) == seed


# ----------------------------------------------------------------------------- pytest's rerun habits (issue 29 part 3)


def test_lf_reruns_exactly_the_failed_seeded_items(pytester: pytest.Pytester) -> None:
    project(pytester)
    first = pytester.runpytest(*RUN)
    first.assert_outcomes(passed=4, failed=2)
    seed, _ = header(first)
    assert len(failed(first)) == 2 and all(nodeid.endswith("-Pro]") for nodeid in failed(first))
    rerun = pytester.runpytest(*RUN, "--lf", "--agentbench-json", "session.json")
    assert header(rerun) == (seed, "the last session's, so --lf finds its instances; --agentbench-seed N overrides")
    rerun.stdout.fnmatch_lines(["run-last-failure: rerun previous 2 failures*"])
    rerun.assert_outcomes(failed=2)
    assert outcomes(rerun) == [(nodeid, "FAILED") for nodeid in failed(first)]
    assert json.loads((pytester.path / "session.json").read_text(encoding="utf-8"))["seedSource"] == "last"


def test_ff_runs_the_failed_seeded_items_first_then_the_rest(pytester: pytest.Pytester) -> None:
    project(pytester)
    first = pytester.runpytest(*RUN)
    rerun = pytester.runpytest(*RUN, "--ff")
    assert header(rerun)[0] == header(first)[0] and "--ff" in header(rerun)[1]
    ran = outcomes(rerun)
    assert [nodeid for nodeid, _ in ran[:2]] == failed(first) and sorted(ran) == sorted(outcomes(first))


def test_sw_continues_from_the_seeded_item_that_failed(pytester: pytest.Pytester) -> None:
    project(pytester)
    first = pytester.runpytest(*RUN, "--sw")
    (stopped,) = failed(first)
    ran = [nodeid for nodeid, _ in outcomes(first)]
    assert ran[-1] == stopped
    rerun = pytester.runpytest(*RUN, "--sw")
    assert header(rerun)[0] == header(first)[0] and "--sw" in header(rerun)[1]
    rerun.stdout.fnmatch_lines([f"stepwise: skipping {len(ran) - 1} already passed items*"])
    assert outcomes(rerun)[0] == (stopped, "FAILED")


def test_deselect_and_a_node_id_name_the_last_sessions_instances(pytester: pytest.Pytester) -> None:
    project(pytester)
    first = pytester.runpytest(*RUN)
    ids = [nodeid for nodeid, _ in outcomes(first)]
    passed = next(nodeid for nodeid, outcome in outcomes(first) if outcome == "PASSED")
    deselected = pytester.runpytest(*RUN, "--deselect", passed)
    assert header(deselected)[0] == header(first)[0] and f"--deselect {passed}" in header(deselected)[1]
    deselected.assert_outcomes(passed=3, failed=2, deselected=1)
    assert sorted(nodeid for nodeid, _ in outcomes(deselected)) == sorted(set(ids) - {passed})
    # A node id copied from the output runs that instance.
    (_, *args) = RUN
    alone = pytester.runpytest(passed, *args)
    assert header(alone)[0] == header(first)[0]
    assert outcomes(alone) == [(passed, "PASSED")]


def test_a_given_seed_wins_over_the_last_one(pytester: pytest.Pytester) -> None:
    project(pytester)
    first = pytester.runpytest(*RUN)
    other = header(first)[0] + 1
    rerun = pytester.runpytest(*RUN, "--lf", "--agentbench-seed", str(other))
    assert header(rerun) == (other, "given")


def test_lf_without_a_kept_seed_says_that_earlier_ids_may_not_be_found(pytester: pytest.Pytester) -> None:
    project(pytester)
    result = pytester.runpytest(*RUN, "--lf")
    assert header(result)[1] == ("drawn: --lf asks for the last session's instances, but the pytest cache holds no seed, "
                                 "so earlier ids may not be found")


def test_collect_only_keeps_the_last_run_sessions_seed(pytester: pytest.Pytester) -> None:
    project(pytester)
    first = pytester.runpytest(*RUN)
    listed = pytester.runpytest("benchmark/", "--collect-only", "--agentbench-repeat", "3")
    assert header(listed)[0] != header(first)[0]
    rerun = pytester.runpytest(*RUN, "--lf")
    assert header(rerun)[0] == header(first)[0]
    assert failed(rerun) == failed(first)


def test_xdist_workers_draw_the_controllers_instances(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    project(pytester)
    result = pytester.runpytest_subprocess("benchmark/", "-p", "xdist", "-n", "2", "--agentbench-dry-run", "--agentbench-repeat", "3",
                                           "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)
    seed, _ = header(result)
    ran = sorted(re.findall(r"PASSED (benchmark/\S+::\S+)", result.stdout.str()))
    listed = pytester.runpytest("benchmark/", "--collect-only", "-q", "--agentbench-repeat", "3", "--agentbench-seed", str(seed))
    assert ran == sorted(line for line in listed.outlines if "::" in line)


def test_a_comparison_runs_the_compared_sessions_instances(pytester: pytest.Pytester) -> None:
    project(pytester)
    baseline = {"seed": 77, "repeat": 3, "runs": [{"suite": "alpha", "verdict": {"status": "passed", "reasons": []},
                                                    "instance": {"id": "r1-Pro", "repeat": 1, "seed": 77, "values": {"plan": "Pro"}}}]}
    (pytester.path / "a.json").write_text(json.dumps(baseline), encoding="utf-8")
    compared = pytester.runpytest("benchmark/", "--collect-only", "--agentbench-repeat", "3", "--agentbench-compare", "a.json")
    assert header(compared) == (77, "the compared session's, so --agentbench-compare a.json pairs instance by instance; "
                                    "--agentbench-seed N overrides")
    given = pytester.runpytest("benchmark/", "--collect-only", "--agentbench-repeat", "3", "--agentbench-compare", "a.json",
                               "--agentbench-seed", "78")
    assert header(given) == (78, "given")


# ----------------------------------------------------------------------------- repeats past the instance space


def test_more_repeats_than_instances_is_said_naming_the_suite(pytester: pytest.Pytester) -> None:
    project(pytester)
    result = pytester.runpytest("benchmark/", "--collect-only", "-q", "--agentbench-repeat", "4")
    result.stdout.fnmatch_lines([
        "*RepeatsWarning: alpha has 3 distinct instances: --agentbench-repeat 4 runs each of them 1 or 2 times (r4 starts over)",
    ])
    ids = [line for line in result.outlines if "::alpha[" in line]
    # r1-r3 are the three plans; r4 starts the next round.
    assert len({line.rsplit("-", 1)[1] for line in ids[:3]}) == 3 and len(ids) == 4
    quiet = pytester.runpytest("benchmark/", "--collect-only", "-q", "--agentbench-repeat", "3")
    assert "RepeatsWarning" not in quiet.stdout.str()


# ----------------------------------------------------------------------------- where a reused seed is kept, hidden


def test_what_records_a_seed_outside_the_project_is_hidden_from_a_confined_agent(pytester: pytest.Pytester, tmp_path: Path) -> None:
    project(pytester)
    elsewhere = tmp_path / "elsewhere"
    config = pytester.parseconfigure("benchmark/", "-o", f"cache_dir={elsewhere / 'cache'}", "--agentbench-dry-run",
                                     "--agentbench-json", str(elsewhere / "session.json"), "--agentbench-html", str(elsewhere / "page.html"),
                                     "--junitxml", str(elsewhere / "junit.xml"))
    private = config.stash[session_key].options.private_paths
    assert set(private) == {elsewhere / "cache", elsewhere / "session.json", elsewhere / "page.html", elsewhere / "junit.xml"}
