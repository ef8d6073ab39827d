"""Every seeded instance, end to end on one simulated phone: the replay agent passes three instances of every suite, and three instances of every suite are proven (pass, each fail, fresh)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from adbserver import PrivateAdbServer, one_simulated_phone
from fakeagents import BENCHMARK, REPO, junit_cases, pytest_argv, run_in_own_group, run_session, session_env

from pytest_agentbench.sim.fleet import SimFleet

ALL_SUITES = tuple(sorted(path.stem for path in (BENCHMARK / "suites").glob("*.yml")))
REPEATS = 3
SESSION_TIMEOUT_S = 1800


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrivateAdbServer, SimFleet]]:
    with one_simulated_phone(tmp_path_factory.mktemp("adb")) as lab:
        yield lab


def session(lab, tmp: Path, *args: str):
    server, fleet = lab
    tmp.mkdir(parents=True, exist_ok=True)
    junit = tmp / "junit.xml"
    env = session_env(server.port, tmp / "claims", COLUMNS="200")
    # Three instances of every suite, proven, is some 300 items: longer than one ordinary session.
    # Seed 0 named, so each CI run proves the same instances (a session without it draws its own).
    done = run_in_own_group(pytest_argv("benchmark/", "--device", fleet.serials[0], "--agentbench-output", str(tmp / "out"),
                                        f"--junitxml={junit}", "-rA", "--agentbench-repeat", str(REPEATS), "--agentbench-seed", "0",
                                        *args),
                            cwd=REPO, env=env, timeout_s=SESSION_TIMEOUT_S)
    assert junit.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return done, junit_cases(junit)


def _suite_of(name: str) -> str:
    return name.split("[", 1)[0]


def test_the_replay_agent_passes_three_instances_of_every_suite(lab, tmp_path: Path) -> None:
    done, cases = session(lab, tmp_path, "--claude", "agentbench-replay")
    failed = {name: case.message for name, case in cases.items() if case.outcome != "passed"}
    assert failed == {}, done.stdout[-6000:]
    per_suite = {suite: [name for name in cases if _suite_of(name) == suite] for suite in ALL_SUITES}
    assert {suite: len(names) for suite, names in per_suite.items()} == {suite: REPEATS for suite in ALL_SUITES}
    # Each run's result names its instance by the drawn values and the seed.
    for name, case in cases.items():
        result = json.loads((Path(case.properties["agentbench_run_dir"]) / "result.json").read_text())
        instance = result["instance"]
        assert instance["seed"] == 0 and instance["repeat"] in (1, 2, 3), name
        if instance["values"]:
            assert instance["label"] and "=" in instance["label"], name


def test_three_instances_of_every_suite_are_proven_with_fresh_and_fail_items_each(lab, tmp_path: Path) -> None:
    done, cases = session(lab, tmp_path, "--agentbench-prove")
    failed = {name: case.message[:500] for name, case in cases.items() if case.outcome != "passed"}
    assert failed == {}, done.stdout[-6000:]
    for suite in ALL_SUITES:
        raw = yaml.safe_load((BENCHMARK / "suites" / f"{suite}.yml").read_text())
        scenarios = {"prove-pass", "prove-fresh", *(f"prove-fail-{fail['name']}" for fail in raw["prove"]["fail"])}
        items = [name for name in cases if _suite_of(name) == suite]
        # Every scenario once per instance: r1, r2 and r3 each have pass, every fail and fresh.
        for repeat in range(1, REPEATS + 1):
            mine = {re.sub(rf"^\[r{repeat}(-.*?)?-(prove-)", r"\2", name[len(suite):]).rstrip("]")
                    for name in items if name[len(suite):].startswith((f"[r{repeat}-", f"[r{repeat}]"))}
            assert mine == scenarios, (suite, repeat, sorted(mine))


# ----------------------------------------------------------------------------- a check one drawn instance passes with no action


def test_a_check_that_one_drawn_instance_passes_with_no_action_fails_that_instance_and_names_its_seed(tmp_path: Path) -> None:
    from checklab import lab_phone, lab_suite, write_project

    from pytest_agentbench.suite.params import instance_values

    declaration = {"photo": {"type": "choice", "values": ["beach.png", "absent.png"]}}
    # The lab phone has beach.png before anything runs: an instance that draws it passes with no action.
    listed = {"kind": "content", "name": "photo-listed", "uri": "content://media/external/images/media",
              "projection": ["_display_name"], "match": {"_display_name": "{photo}"}}
    suite = lab_suite("lab-seeded", params=declaration, verify={"answerIncludes": ["LAB: done"], "device": [listed]},
                      prove={"pass": {"steps": [], "answer": "LAB: done"}})
    project = write_project(tmp_path / "project", {"lab-seeded": suite})
    drawn = {repeat: instance_values(declaration, seed=4, suite="lab-seeded", repeat=repeat)["photo"] for repeat in (1, 2, 3, 4)}
    assert set(drawn.values()) == {"beach.png", "absent.png"}, drawn  # seed 4 draws both within four instances
    (tmp_path / "adb").mkdir()
    with one_simulated_phone(tmp_path / "adb", lab_phone) as lab:
        server, fleet = lab
        junit = tmp_path / "junit.xml"
        done = run_session(project, ["benchmark/", "--device", fleet.serials[0], "--agentbench-output", str(tmp_path / "out"),
                                     f"--junitxml={junit}", "-rA", "--agentbench-prove", "--agentbench-repeat", "4",
                                     "--agentbench-seed", "4", "-k", "prove-fresh"],
                           session_env(server.port, tmp_path / "claims", COLUMNS="200"))
    cases = junit_cases(junit)
    assert len(cases) == 4, done.stdout[-3000:]
    for repeat, photo in drawn.items():
        (name,) = [name for name in cases if name.startswith(f"lab-seeded[r{repeat}-")]
        case = cases[name]
        if photo == "absent.png":
            assert case.outcome == "passed", case.message
            continue
        assert case.outcome == "failure", done.stdout[-3000:]
        assert "the suite passes with no action" in case.message
        assert f"(instance lab-seeded[photo=beach.png], seed 4, r{repeat})" in case.message
        assert (f"rerun this instance: pytest 'benchmark/agent/suites/lab-seeded.yml::{name}' --agentbench-prove "
                f"--agentbench-seed 4 --agentbench-repeat {repeat}") in case.text
