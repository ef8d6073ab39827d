"""Driving a simulated phone's screen the way a person (or an MCP server) does: dump, find a node, tap, type."""

from __future__ import annotations

import re
import shlex

import defusedxml.ElementTree as SafeET

from pytest_agentbench.sim.phone import Phone
from pytest_agentbench.sim.ui import SYSTEMUI_PACKAGE

BOUNDS = re.compile(r"\[(\d+),(\d+)\]\[(\d+),(\d+)\]")


def nodes(phone: Phone) -> list[dict[str, str]]:
    """Every node of the current uiautomator dump, as attribute dicts."""
    xml = phone.shell("uiautomator dump /dev/tty").stdout.split(b"UI hierchary dumped to:")[0]
    return [dict(node.attrib) for node in SafeET.fromstring(xml).iter("node")]


def texts(phone: Phone) -> list[str]:
    """The app's texts on screen, top to bottom (the status bar left out)."""
    return [n["text"] for n in nodes(phone) if n["text"] and n["package"] != SYSTEMUI_PACKAGE]


def find(phone: Phone, label: str, *, scroll: bool = True) -> dict[str, str]:
    """The first node whose text, content-desc or resource id (`:id/NAME`) is `label`, scrolling down to it."""
    for _attempt in range(12):
        for node in nodes(phone):
            if label in (node["text"], node["content-desc"]) or node["resource-id"].endswith(f":id/{label}"):
                return node
        if not scroll:
            break
        width, height = phone.size
        before = phone.screen_xml()
        phone.shell(f"input swipe {width // 2} {height - 200} {width // 2} {height // 2} 300")
        if phone.screen_xml() == before:
            break
    raise AssertionError(f"{label!r} is not on screen: {texts(phone)}")


def tap(phone: Phone, label: str) -> None:
    left, top, right, bottom = map(int, BOUNDS.fullmatch(find(phone, label)["bounds"]).groups())
    result = phone.shell(f"input tap {(left + right) // 2} {(top + bottom) // 2}")
    assert result.exit_code == 0, result


def type_into(phone: Phone, field: str, text: str) -> None:
    """Focus a text field (by its hint or id) and type, as `input text` does (spaces as %s)."""
    tap(phone, field)
    result = phone.shell("input text " + shlex.quote(text.replace(" ", "%s")))
    assert result.exit_code == 0, result
    phone.shell("input keyevent KEYCODE_ENTER")


def back(phone: Phone) -> None:
    phone.shell("input keyevent KEYCODE_BACK")


def open_link(phone: Phone, uri: str) -> None:
    result = phone.shell(f"am start -a android.intent.action.VIEW -d {shlex.quote(uri)}")
    assert result.exit_code == 0, result
