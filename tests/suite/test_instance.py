"""Tests for suite/instance.py and the params rules in suite/load.py: a suite + seed + repeat -> one filled, typed instance."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from pytest_agentbench.baseline.fingerprints import suite_digest
from pytest_agentbench.errors import SuiteError
from pytest_agentbench.suite import load_suite, suite_schema
from pytest_agentbench.suite.instance import instantiate, item_name
from pytest_agentbench.suite.load import fillable
from pytest_agentbench.suite.params import instance_id, instance_values, params_schema

SUITE: dict[str, Any] = {
    "name": "contacts-add",
    "platform": "android",
    "prompt": "../prompts/task.txt",
    "app": {"packageName": "com.example.contacts"},
    "params": {
        "contact": {"type": "choice", "values": ["Alice Moreau", "Bob Chen", "Chidi Okafor"]},
        "amount": {"type": "integer", "min": 5, "max": 95},
        "code": {"type": "code", "pattern": "ORD-####"},
    },
    "preflight": {
        "sharedPreferences": {"draft": {"note": "{code}", "count": 3}},
        "launchUri": "contacts://new?name={contact}",
        "startScreenIncludes": ["New contact"],
    },
    "claude": {"model": "claude-sonnet-5-5", "appendSystemPrompt": "Order {code} on {deviceSerial}", "timeoutSeconds": 60},
    "verify": {"answerIncludes": ["AMOUNT: {amount}"], "screenIncludes": ["{contact}", "Order {code}"]},
    "failurePatterns": ["cannot add {contact}"],
}
PROMPT = "Add {contact} with {amount} credits for order {code} on {deviceSerial}; JSON stays: {\"ok\": true}.\n"


def write(root: Path, data: dict[str, Any], prompt: str = PROMPT) -> Path:
    (root / "suites").mkdir(parents=True, exist_ok=True)
    (root / "prompts").mkdir(exist_ok=True)
    (root / "prompts" / "task.txt").write_text(prompt, encoding="utf-8")
    path = root / "suites" / f"{data['name']}.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def suite(tmp_path: Path):
    return load_suite(write(tmp_path, SUITE), tmp_path)


def test_an_instance_fills_every_text_the_params_reach(suite) -> None:
    instance = instantiate(suite, seed=7, repeat=3)
    values = instance_values(SUITE["params"], seed=7, suite="contacts-add", repeat=3)
    contact, amount, code = values["contact"], values["amount"], values["code"]
    assert instance.instance.values == values and instance.instance.id == instance_id(3, values)
    assert instance.prompt_text == (
        f"Add {contact} with {amount} credits for order {code} on {{deviceSerial}}; JSON stays: {{\"ok\": true}}.\n"
    )
    assert instance.preflight.shared_preferences == {"draft": {"note": code, "count": 3}}
    assert instance.preflight.launch_uri == f"contacts://new?name={contact}"
    assert instance.claude.append_system_prompt == f"Order {code} on {{deviceSerial}}"
    assert instance.verify.answer_includes == (f"AMOUNT: {amount}",)
    assert instance.verify.screen_includes == (contact, f"Order {code}")
    assert instance.failure_patterns == (f"cannot add {contact}",)
    # Not filled: the identity, the app, the agent settings other than the system prompt.
    assert (instance.name, instance.app, instance.claude.model) == (suite.name, suite.app, "claude-sonnet-5-5")
    assert instance.raw["params"] == SUITE["params"] and instance.declared is suite


def test_the_digest_covers_the_declaration_not_the_values(tmp_path: Path, suite) -> None:
    first, other = instantiate(suite, seed=1, repeat=1), instantiate(suite, seed=2, repeat=5)
    assert first.verify != other.verify
    digests = {suite_digest(s.declared.raw, prompt_text=s.declared.prompt_text) for s in (first, other, suite)}
    assert len(digests) == 1
    edited = copy.deepcopy(SUITE)
    edited["params"]["amount"]["max"] = 96
    changed = load_suite(write(tmp_path / "edited", edited), tmp_path / "edited")
    assert suite_digest(changed.raw, prompt_text=changed.prompt_text) not in digests


def test_a_suite_without_params_is_its_own_instance(tmp_path: Path) -> None:
    plain = {key: value for key, value in SUITE.items() if key != "params"}
    plain["verify"] = {"screenIncludes": ["Saved"]}
    plain["preflight"] = {"startScreenIncludes": ["New contact"]}
    plain["claude"] = {"appendSystemPrompt": "On {deviceSerial}"}
    plain["failurePatterns"] = []
    loaded = load_suite(write(tmp_path, plain, prompt="Add a contact on {deviceSerial}.\n"), tmp_path)
    instance = instantiate(loaded, seed=9, repeat=4)
    assert instance.instance.id == "r4" and instance.instance.values == {}
    assert (instance.prompt_text, instance.verify, instance.preflight) == (loaded.prompt_text, loaded.verify, loaded.preflight)


@pytest.mark.parametrize(
    ("repeats", "with_params", "expected"),
    [(1, False, "demo"), (3, False, "demo[r2]"), (1, True, "demo[r2-"), (5, True, "demo[r2-")],
    ids=["single-plain", "repeats", "params-single", "params-repeats"],
)
def test_item_names(tmp_path: Path, repeats: int, with_params: bool, expected: str) -> None:
    data = {"name": "demo", "platform": "android", "prompt": "../prompts/task.txt",
            "app": {"packageName": "com.example.app"}, "verify": {"screenIncludes": ["{n}" if with_params else "Done"]}}
    if with_params:
        data["params"] = {"n": {"type": "integer", "min": 1, "max": 9}}
    loaded = load_suite(write(tmp_path, data, prompt="Do it.\n"), tmp_path)
    assert item_name(instantiate(loaded, seed=0, repeat=2), repeats=repeats).startswith(expected)


def test_recorded_values_win_over_drawing_them(suite) -> None:
    recorded = {"contact": "Zed", "amount": 1, "code": "ORD-0000"}
    instance = instantiate(suite, seed=0, repeat=2, values=recorded)
    assert instance.verify.screen_includes == ("Zed", "Order ORD-0000")
    assert instance.instance.id == instance_id(2, recorded)


def test_json_block_of_an_instance(suite) -> None:
    block = instantiate(suite, seed=3, repeat=1).instance.to_json()
    assert set(block) == {"id", "repeat", "seed", "derivation", "values", "label"}
    assert (block["repeat"], block["seed"]) == (1, 3) and json.loads(json.dumps(block)) == block


@pytest.mark.parametrize(
    ("where", "value", "expected"),
    [
        ("prompt", "Add {contct}.\n", "prompt: unknown placeholder {contct} (did you mean {contact}?)"),
        ("verify", {"screenIncludes": ["{amonut}"]}, "verify.screenIncludes[0]: unknown placeholder {amonut} (did you mean {amount}?)"),
        ("preflight", {"launchUri": "x://{nope}"}, "preflight.launchUri: unknown placeholder {nope}"),
        ("preflight", {"sharedPreferences": {"p": {"k": "{missing}"}}}, "preflight.sharedPreferences.p.k: unknown placeholder {missing}"),
        ("claude", {"appendSystemPrompt": "{serial}"}, "claude.appendSystemPrompt: unknown placeholder {serial}"),
        ("failurePatterns", ["{x}"], "failurePatterns[0]: unknown placeholder {x}"),
    ],
    ids=["prompt", "verify", "launch-uri", "pref-value", "system-prompt", "failure-pattern"],
)
def test_an_unknown_placeholder_names_the_file_and_the_key(tmp_path: Path, where: str, value: Any, expected: str) -> None:
    data = copy.deepcopy(SUITE)
    prompt = PROMPT
    if where == "prompt":
        prompt = value
    else:
        data[where] = value
    with pytest.raises(SuiteError) as excinfo:
        load_suite(write(tmp_path, data, prompt=prompt), tmp_path)
    message = str(excinfo.value)
    assert "suites/contacts-add.yml" in message and expected in message, message
    assert "expected a declared param (contact, amount, code) or {deviceSerial}, {packageName}, {runDirectory}" in message


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"deviceSerial": {"type": "word"}}, "params.deviceSerial: expected a name other than the built-in placeholders"),
        ({"n": {"type": "integer", "min": 5, "max": 1}}, "params.n: expected min <= max, got min 5 and max 1"),
        ({"n": {"type": "integr", "min": 1, "max": 2}}, "params.n.type: expected a type of choice, integer, word or code"),
        ({"9x": {"type": "word"}}, "params: expected a param name of letters, digits and '_'"),
    ],
    ids=["reserved-name", "min-above-max", "type-typo", "bad-name"],
)
def test_a_bad_declaration_is_a_suite_error(tmp_path: Path, params: dict, expected: str) -> None:
    data = copy.deepcopy(SUITE)
    data["params"] = params
    data["verify"] = {"screenIncludes": ["Saved"]}
    data["preflight"], data["claude"], data["failurePatterns"] = {}, {}, []
    with pytest.raises(SuiteError) as excinfo:
        load_suite(write(tmp_path, data, prompt="Do it.\n"), tmp_path)
    assert expected in str(excinfo.value)


def test_run_time_placeholders_are_allowed_where_params_are() -> None:
    parts = fillable(SUITE)
    assert set(parts) == {"preflight", "claude", "verify", "failurePatterns"}
    assert parts["claude"] == {"appendSystemPrompt": SUITE["claude"]["appendSystemPrompt"]}


def test_the_suite_schema_embeds_the_params_fragment() -> None:
    assert suite_schema()["properties"]["params"] == params_schema()
    Draft202012Validator.check_schema(suite_schema())
