"""Every committed core suite is seeded: its params are drawn per instance, and different seeds ask for different things."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_agentbench.agents.plan import load_plan
from pytest_agentbench.suite import load_suite
from pytest_agentbench.suite.instance import instance_label, instance_seed_text, instantiate

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "benchmark" / "agent" / "suites"
#: Suites without params, each with the reason (docs/jobs.md): a harness demo.
UNSEEDED = {"wifi-on": "a harness demo (settings put can do it), never pooled into core statistics"}
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
    # Over a few repeats, seeds 0 and 1 draw at least one repeat that differs in its prompt or checks
    # (a small space is covered by three repeats either way, in another order).
    first = [_expected(name, 0, repeat) for repeat in (1, 2, 3)]
    second = [_expected(name, 1, repeat) for repeat in (1, 2, 3)]
    assert first != second
    # And within a seed the repeats are not all one instance.
    assert len(set(first) | set(second)) > 1


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
    assert instance_label("wifi-on", {"repeat": 1, "values": {}}) == "wifi-on"


# ----------------------------------------------------------------------------- record choices, drawn seeds, plan keys


RECORDS = {"city": {"type": "choice", "values": [{"city": "Tokyo", "cityId": "C27"}, {"city": "Berlin", "cityId": "C5"}]},
           "a": {"type": "code", "pattern": "+1555201####"}, "b": {"type": "code", "pattern": "+1555202####"},
           "order": {"type": "choice", "values": [{"first": "{a}", "second": "{b}"}, {"first": "{b}", "second": "{a}"}]}}


def test_a_record_choice_draws_its_fields_together_and_may_order_other_params() -> None:
    from pytest_agentbench.suite.params import instance_values, shown_values, validate, value_names

    assert validate(RECORDS) == []
    assert value_names(RECORDS) == ("city", "cityId", "a", "b", "first", "second")
    seen = set()
    for repeat in range(1, 9):
        values = instance_values(RECORDS, seed=0, suite="x", repeat=repeat)
        assert (values["city"], values["cityId"]) in {("Tokyo", "C27"), ("Berlin", "C5")}
        assert {values["first"], values["second"]} == {values["a"], values["b"]}
        seen.add(values["first"] == values["a"])
        assert shown_values(RECORDS, values) == {"city": values["city"], "a": values["a"], "b": values["b"],
                                                 "order": values["first"]}
    assert seen == {True, False}


@pytest.mark.parametrize(("declaration", "problem"), [
    ({"x": {"type": "choice", "values": [{"a": 1}, "b"]}}, "params.x.values: expected all records or no records"),
    ({"x": {"type": "choice", "values": [{"a": 1}, {"b": 2}]}}, "params.x.values[1]: expected the fields a (as values[0]), got b"),
    ({"x": {"type": "choice", "values": [{"y": 1}]}, "y": {"type": "word"}}, "field 'y' is also drawn by params.y"),
    ({"x": {"type": "choice", "values": [{"deviceSerial": 1}]}}, "expected field names other than the built-in placeholders"),
    ({"x": {"type": "choice", "values": [{"first": "{nope}"}]}}, "params.x.values[0].first: unknown placeholder {nope}"),
    ({"x": {"type": "choice", "values": [{"a b": 1}]}}, "expected a field name of letters, digits and '_'"),
], ids=["mixed", "other-fields", "clash", "reserved", "unknown-ref", "bad-field"])
def test_a_bad_record_choice_names_its_key_path(declaration: dict, problem: str) -> None:
    from pytest_agentbench.suite.params import validate

    assert any(problem in found for found in validate(declaration)), validate(declaration)


def test_a_drawn_seed_value_the_phone_cannot_take_is_a_suite_error(tmp_path: Path) -> None:
    from pytest_agentbench.errors import SuiteError

    (tmp_path / "suites").mkdir()
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "p.txt").write_text("hi {n}")
    (tmp_path / "suites" / "demo.yml").write_text(
        'name: demo\nplatform: android\nprompt: ../prompts/p.txt\napp: {packageName: com.example.app}\n'
        'params:\n  n: {type: choice, values: ["abc"]}\npreflight:\n  seed:\n    - sms: {from: "{n}", body: "x"}\n'
        'verify:\n  screenIncludes: ["x"]\n')
    suite = load_suite(tmp_path / "suites" / "demo.yml", tmp_path)
    with pytest.raises(SuiteError, match=r"instance r1-abc \(seed 0\) draws a value a phone cannot take: "
                                         r"preflight.seed\[0\].sms.from: expected a phone number of digits, got 'abc'"):
        instantiate(suite, seed=0, repeat=1)


def test_a_plan_reads_values_off_the_prompt_and_repeats_a_call(tmp_path: Path) -> None:
    from pytest_agentbench.agents.plan import parse_plan
    from pytest_agentbench.errors import SuiteError

    plan = parse_plan({"fromPrompt": {"count": r"add (\d+) items", "item": r"of (\w+)"},
                       "steps": [{"tool": "tapOn", "args": {"text": "Add {item}"}, "times": "{count}"},
                                 {"tool": "observe", "times": 0}], "final": "done"}, tmp_path / "p.yml")
    assert plan.prompt_values("Please add 4 items of Mug.") == ({"count": "4", "item": "Mug"}, [])
    assert plan.prompt_values("nothing here")[1] == [r"fromPrompt.count: /add (\d+) items/ matched nothing in the prompt",
                                                     r"fromPrompt.item: /of (\w+)/ matched nothing in the prompt"]
    assert [step.times for step in plan.tool_steps] == ["{count}", 0]
    with pytest.raises(SuiteError) as bad:
        parse_plan({"fromPrompt": {"device": "x", "n": "("}, "steps": [{"tool": "observe", "times": 51}], "final": "x"},
                   tmp_path / "p.yml")
    text = str(bad.value)
    assert "fromPrompt.device: expected a name other than the built-in" in text
    assert "fromPrompt.n.pattern: expected a regular expression" in text
    assert "steps[0].times: expected a count from 0 to 50 or one {name}, got 51" in text
