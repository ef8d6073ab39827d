"""Every seeded instance, end to end on one simulated phone: the replay agent passes three instances of every suite, and three instances of every suite are proven (pass, each fail, fresh)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from adbserver import PrivateAdbServer, one_simulated_phone
from fakeagents import BENCHMARK, REPO, junit_cases, run_session, session_env

from pytest_agentbench.sim.fleet import SimFleet

ALL_SUITES = tuple(sorted(path.stem for path in (BENCHMARK / "suites").glob("*.yml")))
REPEATS = 3


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrivateAdbServer, SimFleet]]:
    with one_simulated_phone(tmp_path_factory.mktemp("adb")) as lab:
        yield lab


def session(lab, tmp: Path, *args: str):
    server, fleet = lab
    tmp.mkdir(parents=True, exist_ok=True)
    junit = tmp / "junit.xml"
    env = session_env(server.port, tmp / "claims", COLUMNS="200")
    done = run_session(REPO, ["benchmark/", "--device", fleet.serials[0], "--agentbench-output", str(tmp / "out"),
                              f"--junitxml={junit}", "-rA", "--agentbench-repeat", str(REPEATS), *args], env)
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
