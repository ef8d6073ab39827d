"""Tests for screen.py: uiautomator XML -> nodes, app texts, and the compact element list."""

from __future__ import annotations

import pytest

from pytest_agentbench.device.uiautomator import (
    app_texts,
    format_element,
    format_elements,
    indexed_elements,
    parse_hierarchy,
    parse_screen,
    screen_signature,
    visible_texts,
)

_ATTRS = (
    'index="{i}" text="{text}" resource-id="{rid}" class="{cls}" package="{pkg}" content-desc="{desc}" '
    'checkable="{checkable}" checked="{checked}" clickable="{clickable}" enabled="{enabled}" '
    'focusable="{focusable}" focused="{focused}" scrollable="false" long-clickable="false" '
    'password="false" selected="{selected}" bounds="{bounds}"'
)


def _node(children: str = "", **values: object) -> str:
    fields = {
        "i": 0, "text": "", "rid": "", "cls": "android.widget.FrameLayout", "pkg": "com.android.settings",
        "desc": "", "checkable": "false", "checked": "false", "clickable": "false", "enabled": "true",
        "focusable": "false", "focused": "false", "selected": "false", "bounds": "[0,0][1080,2400]",
    }
    fields.update(values)
    attrs = _ATTRS.format(**fields)
    return f"<node {attrs}>{children}</node>" if children else f"<node {attrs} />"


def _dump(*roots: str, trailer: str = "UI hierchary dumped to: /dev/tty") -> str:
    body = "".join(roots)
    return f"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">{body}</hierarchy>{trailer}"


# A Settings "Internet" screen shaped as a real phone dumps it: a status-bar window from
# com.android.systemui, a title, a clickable preference row whose texts sit in child TextViews,
# and a Switch that is checkable but not clickable (the row takes the tap).
INTERNET_SCREEN = _dump(
    _node(pkg="com.android.systemui", children=_node(text="12:30", cls="android.widget.TextView",
                                                      pkg="com.android.systemui", bounds="[40,0][160,60]")),
    _node(children=(
        _node(text="Internet", cls="android.widget.TextView", rid="android:id/title", bounds="[0,80][1080,200]")
        + _node(clickable="true", focusable="true", cls="android.widget.LinearLayout",
                rid="com.android.settings:id/wifi_row", bounds="[0,220][1080,380]", children=(
                    _node(text="Wi-Fi", cls="android.widget.TextView", bounds="[40,240][800,300]")
                    + _node(text="Off", cls="android.widget.TextView", bounds="[40,300][800,360]")
                    + _node(cls="android.widget.Switch", checkable="true", checked="false",
                            rid="com.android.settings:id/switch_widget", bounds="[900,260][1040,340]")))
        + _node(cls="android.widget.LinearLayout", bounds="[0,400][1080,500]", children=(
            _node(text="To see available networks, turn Wi-Fi on", cls="android.widget.TextView",
                  bounds="[40,400][1040,500]")))
    )),
)


def test_parse_hierarchy_reads_every_node_in_document_order_with_attributes() -> None:
    nodes = parse_hierarchy(INTERNET_SCREEN)
    assert [n.index for n in nodes] == list(range(len(nodes)))
    assert [n.text for n in nodes if n.text] == [
        "12:30", "Internet", "Wi-Fi", "Off", "To see available networks, turn Wi-Fi on",
    ]
    switch = next(n for n in nodes if n.class_name == "android.widget.Switch")
    assert (switch.checkable, switch.checked, switch.clickable) == (True, False, False)
    assert switch.bounds == (900, 260, 1040, 340)
    assert switch.center == (970, 300)
    assert switch.short_id == "switch_widget"
    assert switch.short_class == "Switch"


def test_parse_screen_keeps_parents() -> None:
    screen = parse_screen(INTERNET_SCREEN)
    row = next(i for i, n in enumerate(screen.nodes) if n.resource_id.endswith("wifi_row"))
    children = [screen.nodes[i].text for i, p in enumerate(screen.parents) if p == row]
    assert children == ["Wi-Fi", "Off", ""]
    assert screen.parents[0] == -1


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ("", "no <hierarchy>"),
        ("ERROR: could not get idle state.", "no <hierarchy>"),
        ("<hierarchy><node bounds=\"[0,0][1,1]\"></hierarchy>", "malformed"),
        ('<hierarchy><node bounds="0,0,1,1" /></hierarchy>', "bad bounds"),
        ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><hierarchy>&a;</hierarchy>', "malformed"),
    ],
)
def test_parse_hierarchy_rejects_what_is_not_a_dump(payload: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_hierarchy(payload)


def test_parse_accepts_bytes_and_leading_noise() -> None:
    nodes = parse_hierarchy(b"WARNING: linker noise\n" + INTERNET_SCREEN.encode())
    assert len(nodes) == len(parse_hierarchy(INTERNET_SCREEN))


@pytest.mark.parametrize(
    ("package", "expected"),
    [
        ("com.android.settings", ["Internet", "Wi-Fi", "Off", "To see available networks, turn Wi-Fi on"]),
        ("com.android.systemui", ["12:30"]),
        ("com.other", []),
    ],
)
def test_app_texts_only_counts_the_package(package: str, expected: list[str]) -> None:
    assert app_texts(parse_hierarchy(INTERNET_SCREEN), package) == expected


def test_app_texts_includes_content_desc() -> None:
    xml = _dump(_node(pkg="com.android.launcher3", desc="Playground", text="Playground", clickable="true"),
                _node(pkg="com.android.launcher3", desc="Apps list", clickable="true", bounds="[0,0][10,10]"))
    assert app_texts(parse_hierarchy(xml), "com.android.launcher3") == ["Playground", "Playground", "Apps list"]


def test_indexed_elements_fold_row_texts_and_keep_checkables() -> None:
    elements = indexed_elements(parse_screen(INTERNET_SCREEN))
    lines = [format_element(i, e) for i, e in enumerate(elements)]
    assert lines == [
        '0 TextView "12:30" @100,30',
        '1 TextView "Internet" #title @540,140',
        '2 LinearLayout "Wi-Fi" "Off" #wifi_row Switch:unchecked @540,300',
        '3 Switch in "Wi-Fi" #switch_widget unchecked @970,300',
        '4 TextView "To see available networks, turn Wi-Fi on" @540,450',
    ]


@pytest.mark.parametrize(
    ("attrs", "line"),
    [
        ({"text": "Continue", "cls": "android.widget.Button", "clickable": "true", "enabled": "false"},
         '0 Button "Continue" disabled @540,1200'),
        ({"text": "Pro", "cls": "android.widget.RadioButton", "checkable": "true", "checked": "true",
          "clickable": "true"}, '0 RadioButton "Pro" checked @540,1200'),
        ({"desc": "Settings", "cls": "android.widget.ImageView", "clickable": "true", "selected": "true"},
         '0 ImageView "Settings" selected @540,1200'),
        ({"text": "", "cls": "android.widget.EditText", "focusable": "true", "focused": "true",
          "rid": "dev.app:id/email"}, "0 EditText #email focused @540,1200"),
        ({"text": "Say &quot;hi&quot;", "desc": "greeting", "cls": "android.widget.TextView"},
         "0 TextView \"Say 'hi'\" \"greeting\" @540,1200"),
    ],
)
def test_element_lines_show_state_flags(attrs: dict[str, str], line: str) -> None:
    xml = _dump(_node(bounds="[0,0][1080,2400]", **attrs))
    (element,) = indexed_elements(parse_screen(xml))
    assert format_element(0, element) == line


def test_containers_without_text_or_action_are_left_out() -> None:
    xml = _dump(_node(children=_node(cls="android.widget.LinearLayout", bounds="[0,0][10,10]")))
    assert indexed_elements(parse_screen(xml)) == ()


def test_format_elements_header_and_visible_texts() -> None:
    elements = indexed_elements(parse_screen(INTERNET_SCREEN))
    text = format_elements(elements, foreground="com.android.settings/.Settings$WifiActivity")
    assert text.splitlines()[:2] == ["foreground: com.android.settings/.Settings$WifiActivity", "elements: 5"]
    assert "<node" not in text
    assert visible_texts(elements)[:3] == ["12:30", "Internet", "Wi-Fi"]


def test_long_texts_are_cut() -> None:
    xml = _dump(_node(text="word " * 100, cls="android.widget.TextView"))
    (element,) = indexed_elements(parse_screen(xml))
    assert len(format_element(0, element)) < 120


def test_signature_sees_state_changes_only() -> None:
    before = parse_hierarchy(INTERNET_SCREEN)
    same = parse_hierarchy(INTERNET_SCREEN.replace("UI hierchary", "UI hierarchy"))
    toggled = parse_hierarchy(INTERNET_SCREEN.replace('checkable="true" checked="false"', 'checkable="true" checked="true"'))
    assert screen_signature(before) == screen_signature(same)
    assert screen_signature(before) != screen_signature(toggled)


@pytest.mark.parametrize(
    ("cls", "editable", "expected"),
    [
        ("android.widget.EditText", False, ["Email"]),                          # typed text is not screen text
        ("android.widget.AutoCompleteTextView", False, ["Email"]),
        ("android.widget.SearchView$SearchAutoComplete", False, ["Email"]),
        ("androidx.compose.material3.TextField", False, ["Email"]),
        ("android.widget.EditText", True, ["Expected count: 3", "Email"]),      # preflight: the app's own text
        ("android.widget.TextView", False, ["Expected count: 3", "Email"]),
    ],
    ids=["edit-text", "auto-complete", "search-view", "compose-text-field", "preflight-counts-fields", "text-view"],
)
def test_app_texts_leave_out_what_was_typed_into_a_field(cls: str, editable: bool, expected: list[str]) -> None:
    xml = _dump(_node(pkg="p", cls=cls, text="Expected count: 3", desc="Email", clickable="true", focusable="true"))
    assert app_texts(parse_hierarchy(xml), "p", editable=editable) == expected
