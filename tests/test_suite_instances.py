"""Every committed core suite is seeded: its params are drawn per instance, and different seeds ask for different things."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_agentbench.agents.plan import load_plan
from pytest_agentbench.suite import load_suite
from pytest_agentbench.suite.instance import instance_label, instance_seed_text, instantiate

ROOT = Path(__file__).resolve().parent.parent
SUITES = ROOT / "benchmark" / "agent" / "suites"
#: Suites without params, each with the reason (docs/jobs.md): a harness demo, or a job whose
#: drawn variant needs the simulated app to change first.
UNSEEDED = {"wifi-on": "a harness demo (settings put can do it), never pooled into core statistics",
            "wakelock-restrict": "only the testbed holds a wake lock in the simulated image"}
SEEDED = sorted(path.stem for path in SUITES.glob("*.yml") if path.stem not in UNSEEDED)


def _suite(name: str):
    return load_suite(SUITES / f"{name}.yml", ROOT)


def _expected(name: str, seed: int, repeat: int = 1) -> tuple[str, str]:
    """What an instance asks and judges: its prompt and its verify block, filled."""
    suite = instantiate(_suite(name), seed=seed, repeat=repeat)
    return suite.prompt_text, yaml.safe_dump(suite.raw.get("verify"), sort_keys=True) + yaml.safe_dump(suite.raw.get("preflight"))


@pytest.mark.parametrize("name", SEEDED)
def test_every_core_suite_declares_params(name: str) -> None:
    assert _suite(name).raw.get("params"), f"{name} has no params:"


@pytest.mark.parametrize("name", SEEDED)
def test_two_seeds_ask_for_different_things(name: str) -> None:
    # Over a few repeats, seeds 0 and 1 draw at least one instance that differs in its prompt or checks.
    first = {_expected(name, 0, repeat) for repeat in (1, 2, 3)}
    second = {_expected(name, 1, repeat) for repeat in (1, 2, 3)}
    assert first != second
    # And within a seed the repeats are not all one instance.
    assert len(first | second) > 1


@pytest.mark.parametrize("name", SEEDED)
def test_no_placeholder_is_left_in_an_instance(name: str) -> None:
    for seed in (0, 1, 7):
        suite = instantiate(_suite(name), seed=seed, repeat=2)
        leftover = [word for word in ("{" + key + "}" for key in suite.instance.values) if word in suite.prompt_text]
        assert leftover == []
        assert suite.instance.values_text in instance_label(name, suite.instance)


@pytest.mark.parametrize("name", SEEDED)
def test_the_replay_plan_reads_every_drawn_value_it_uses_off_the_prompt(name: str) -> None:
    # The replay agent is untrusted: it learns an instance only from its prompt (fromPrompt) and the screen.
    plan = load_plan(ROOT / "benchmark" / "agent" / "plans" / f"{name}.yml")
    for seed in (0, 3):
        suite = instantiate(_suite(name), seed=seed, repeat=1)
        found, missing = plan.prompt_values(suite.prompt_text)
        assert missing == []
        for key, value in found.items():
            if key in suite.instance.values:
                assert value == str(suite.instance.values[key])


def test_an_instance_is_labelled_by_its_drawn_values_and_seed() -> None:
    suite = instantiate(_suite("clock-world-clock"), seed=5, repeat=2)
    label = instance_label("clock-world-clock", suite.instance)
    city, snooze = suite.instance.values["city"], suite.instance.values["snooze"]
    assert label == f"clock-world-clock[city={city},snooze={snooze}]"
    assert instance_seed_text(suite.instance) == "seed 5, r2"
    assert instance_label("clock-world-clock", suite.instance.to_json()) == label
    assert instance_label("wifi-on", None) == "wifi-on"
    assert instance_label("wifi-on", {"repeat": 3, "values": {}}) == "wifi-on[r3]"
