"""ui_tree (XML or mobile-mcp listing -> indexed elements -> tap point), the profile tool maps, and the executor's calls and sentences."""

from __future__ import annotations

import json
import re

import anyio
import pytest
from modeldevice import SimDevice

from pytest_agentbench.agents.model.executor import Executor, action_key
from pytest_agentbench.agents.model.tool_parse import ParsedCall
from pytest_agentbench.agents.model.ui_tree import TreeError, from_mobile_mcp, from_uiautomator, parse_observation
from pytest_agentbench.device.uiautomator import format_elements, indexed_elements, parse_screen
from pytest_agentbench.servers import agentbench_profile, mobile_mcp_profile
from pytest_agentbench.servers.agent_tools import PROFILE_VARIABLE, agent_tool_map
from pytest_agentbench.sim.phone import Phone


def _settings_phone() -> Phone:
    phone = Phone()
    phone.launch("com.android.settings")
    return phone


# ----------------------------------------------------------------------------- ui_tree


def test_uiautomator_tree_is_the_servers_own_element_list() -> None:
    xml = _settings_phone().screen_xml()
    tree = from_uiautomator("foreground: com.android.settings/.Settings\n" + xml)
    screen = parse_screen(xml)
    # The same parser, the same indexed elements, the same lines as the built-in server's observe.
    assert tree.text() == format_elements(indexed_elements(screen), foreground="com.android.settings/.Settings")
    index = next(i for i, element in enumerate(tree.elements) if "Network & internet" in element.texts)
    assert tree.tap_point(index) == tree.elements[index].node.center
    assert tree.describe(index) == 'LinearLayout "Network & internet"'


def test_the_status_bar_clock_is_not_a_screen_change() -> None:
    xml = _settings_phone().screen_xml()
    ticked = re.sub(r'(systemui:id/clock"[^>]*?content-desc=")[^"]*', r"\g<1>23:59", xml)
    assert ticked != xml
    assert from_uiautomator(xml).signature == from_uiautomator(ticked).signature


@pytest.mark.parametrize("index", [-1, 99, "2", True, 1.5], ids=["negative", "past-the-end", "text", "bool", "float"])
def test_an_index_off_the_list_is_a_sentence(index: object) -> None:
    tree = from_uiautomator(_settings_phone().screen_xml())
    with pytest.raises(TreeError, match=r"is not on the current screen, which lists indexes 0-\d+; use an index from the latest list"):
        tree.tap_point(index)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["", "not xml", "<hierarchy><node bounds='bad'/></hierarchy>"], ids=["empty", "text", "bad-bounds"])
def test_an_unreadable_dump_is_a_sentence(text: str) -> None:
    with pytest.raises(TreeError, match="observe again"):
        from_uiautomator(text)


MOBILE_MCP_LISTING = "Found these elements on screen: " + json.dumps([
    {"type": "android.widget.TextView", "text": "Internet", "label": "", "coordinates": {"x": 0, "y": 300, "width": 1080, "height": 100}},
    {"type": "android.widget.Switch", "text": "", "label": "Wi-Fi", "identifier": "android:id/switch_widget",
     "coordinates": {"x": 900, "y": 420, "width": 120, "height": 80}, "checked": True},
])


def test_mobile_mcp_listing_becomes_the_same_kind_of_list() -> None:
    tree = from_mobile_mcp(MOBILE_MCP_LISTING)
    assert tree.text().splitlines() == [
        "foreground: unknown", "elements: 2",
        '0 TextView "Internet" @540,350',
        '1 Switch "Wi-Fi" #switch_widget checked @960,460',
    ]
    assert tree.tap_point(1) == (960, 460)
    assert parse_observation(MOBILE_MCP_LISTING, "mobile-mcp-json") == tree


def test_mobile_mcp_status_bar_clock_is_not_a_screen_change() -> None:
    def listing(clock: str) -> str:
        items = json.loads(MOBILE_MCP_LISTING.split(": ", 1)[1]) + [
            {"type": "android.widget.TextView", "text": clock, "identifier": "com.android.systemui:id/clock",
             "coordinates": {"x": 42, "y": 0, "width": 158, "height": 63}}]
        return "Found these elements on screen: " + json.dumps(items)

    assert from_mobile_mcp(listing("09:07")).signature == from_mobile_mcp(listing("09:08")).signature
    assert from_mobile_mcp(listing("09:07")).signature != from_mobile_mcp(MOBILE_MCP_LISTING.replace('"checked": true', '"checked": false')).signature


@pytest.mark.parametrize("text", ["no elements", "Found these elements on screen: {}", '[{"coordinates": {"x": "a"}}]'],
                         ids=["no-json", "not-a-list", "bad-coordinates"])
def test_an_unreadable_listing_is_a_sentence(text: str) -> None:
    with pytest.raises(TreeError, match="observe again"):
        from_mobile_mcp(text)


# ----------------------------------------------------------------------------- profile tool maps


@pytest.mark.parametrize(
    ("profile", "action", "values", "tool", "arguments"),
    [
        ("agentbench", "observe", {}, "observe", {"raw": True, "device": "S"}),
        ("agentbench", "tap", {"x": 5, "y": 7}, "tapOn", {"x": 5, "y": 7, "device": "S"}),
        ("agentbench", "back", {}, "pressButton", {"button": "back", "device": "S"}),
        ("agentbench", "open_app", {"package": "com.a.b"}, "launchApp", {"packageName": "com.a.b", "device": "S"}),
        ("mobile-mcp", "observe", {}, "mobile_list_elements_on_screen", {"device": "S", "format": "json"}),
        ("mobile-mcp", "tap", {"x": 5, "y": 7}, "mobile_click_on_screen_at_coordinates", {"device": "S", "x": 5, "y": 7}),
        ("mobile-mcp", "type", {"text": "hi"}, "mobile_type_keys", {"device": "S", "text": "hi", "submit": False}),
        ("mobile-mcp", "home", {}, "mobile_press_button", {"device": "S", "button": "HOME"}),
    ],
)
def test_tool_maps_fill_the_servers_own_arguments(profile: str, action: str, values: dict, tool: str, arguments: dict) -> None:
    template = agent_tool_map(profile).actions[action]
    assert (template.tool, template.fill({"device": "S", **values})) == (tool, arguments)


def test_profiles_carry_their_tool_map_and_the_variable_overrides_the_name() -> None:
    assert agentbench_profile().agent_tools is agent_tool_map("agentbench")
    assert mobile_mcp_profile().agent_tools is agent_tool_map("mobile-mcp")
    assert agent_tool_map("auto-mobile") is None and agent_tool_map("phone") is None
    assert agent_tool_map("phone", {PROFILE_VARIABLE: "mobile-mcp"}) is agent_tool_map("mobile-mcp")


# ----------------------------------------------------------------------------- executor


def _execute(device: SimDevice, name: str, **arguments: object):
    async def go():
        before = await device.observe()
        return before, await Executor(device).execute(ParsedCall(name, dict(arguments)), before)

    return anyio.run(go)


def _index(device: SimDevice, text: str) -> int:
    tree = anyio.run(device.observe)
    return next(i for i, element in enumerate(tree.elements) if text in element.texts)


def test_tap_by_index_taps_the_elements_point_and_looks_again() -> None:
    device = SimDevice(_settings_phone())
    index = _index(device, "Network & internet")
    before, outcome = _execute(device, "tap", index=index)
    x, y = before.tap_point(index)
    assert device.calls[-2:] == [("tap", {"x": x, "y": y}), ("observe", {})]
    assert outcome.sentence == f'tapped LinearLayout "Network & internet" at {x},{y}' and not outcome.error
    assert outcome.after.signature != before.signature and "Airplane mode" in outcome.after.text()


@pytest.mark.parametrize(
    ("name", "arguments", "sentence"),
    [
        ("click", {"index": 1}, "there is no tool named 'click'; the tools are tap, type_text, swipe, back, home, open_app, task_complete"),
        ("tap", {"idx": 1}, "tap got unknown argument 'idx'; tap takes index"),
        ("tap", {}, "tap needs index; tap takes index"),
        ("tap", {"index": 99}, "index 99 is not on the current screen, which lists indexes 0-"),
        ("tap", {"index": "first"}, "index must be a whole number from the element list, got 'first'"),
        ("swipe", {"direction": "sideways"}, "direction must be one of up, down, left, right, got 'sideways'"),
        ("open_app", {"package": "rm -rf /"}, "'rm -rf /' is not a package name"),
        ("type_text", {"text": 5}, "text must be text, got 5"),
        ("task_complete", {"answer": ""}, "task_complete needs answer"),
    ],
    ids=["unknown-tool", "unknown-argument", "missing-argument", "index-off-list", "index-not-a-number",
         "bad-direction", "bad-package", "text-not-text", "empty-answer"],
)
def test_refused_calls_are_sentences_and_touch_nothing(name: str, arguments: dict, sentence: str) -> None:
    device = SimDevice(_settings_phone())
    before, outcome = _execute(device, name, **arguments)
    assert outcome.error and not outcome.acted and outcome.sentence.startswith(sentence), outcome.sentence
    assert device.actions() == [] and outcome.after is before


def test_a_server_error_is_relayed_and_the_screen_is_looked_at_again() -> None:
    device = SimDevice(_settings_phone(), fail={"back": "pressButton refused: the device is locked"})
    _, outcome = _execute(device, "back")
    assert outcome.error and outcome.acted
    assert outcome.sentence == "back failed: pressButton refused: the device is locked"
    assert device.calls[-1] == ("observe", {})


def test_index_given_as_text_and_type_into_a_field() -> None:
    device = SimDevice(_settings_phone())
    index = _index(device, "Network & internet")
    _, outcome = _execute(device, "tap", index=str(index))
    assert not outcome.error
    _, typed = _execute(device, "type_text", text="hello", index=0)
    assert device.actions()[-2:] == ["tap", "type"] and typed.sentence.endswith("and typed 'hello'")


def test_task_complete_returns_the_answer_and_acts_on_nothing() -> None:
    device = SimDevice(_settings_phone())
    _, outcome = _execute(device, "task_complete", answer="WIFI: on")
    assert outcome.answer == "WIFI: on" and device.actions() == []


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [(("tap", {"index": 1}), ("tap", {"index": 1}), True), (("tap", {"index": 1}), ("tap", {"index": 2}), False),
     (("tap", {"index": 1}), ("back", {}), False), (("swipe", {"direction": "up"}), ("swipe", {"direction": "up"}), True)],
    ids=["same-tap", "other-index", "tap-then-back", "same-swipe"],
)
def test_action_key(first: tuple, second: tuple, same: bool) -> None:
    assert (action_key(ParsedCall(*first)) == action_key(ParsedCall(*second))) is same


def test_action_key_names_the_element_not_its_index() -> None:
    phone = Phone()
    phone.launch("com.android.settings")
    settings = from_uiautomator(phone.screen_xml())
    phone.tap(*settings.tap_point(1))
    network = from_uiautomator(phone.screen_xml())
    tap1 = ParsedCall("tap", {"index": 1})
    # Index 1 is "Network & internet" on one screen and "Internet" on the next: two actions.
    assert action_key(tap1, settings) != action_key(tap1, network)
    # The same element, whatever spelling of its index, is one action; a bad index keys on the index.
    assert action_key(ParsedCall("tap", {"index": "1"}), settings) == action_key(tap1, settings)
    assert action_key(ParsedCall("tap", {"index": 99}), settings) == action_key(ParsedCall("tap", {"index": 99}))
    assert action_key(ParsedCall("back", {}), settings) == action_key(ParsedCall("back", {}))


@pytest.mark.parametrize(
    ("value", "note"),
    [(2, None), ("2", 'index "2" (a string) was read as the integer 2'), (2.0, "index 2.0 (float) was read as the integer 2"),
     (" 3 ", 'index " 3 " (a string) was read as the integer 3'), ("two", None), (True, None), (None, None)],
    ids=["int", "string", "float", "spaced", "word", "bool", "absent"],
)
def test_coercion_is_said(value: object, note: str | None) -> None:
    from pytest_agentbench.agents.model.executor import coercion

    assert coercion("index", value) == note
