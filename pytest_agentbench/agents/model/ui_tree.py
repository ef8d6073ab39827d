"""uiautomator XML (or mobile-mcp's element listing) -> the indexed element list a model reads -> back to a tap point.

The XML goes through the project's one parser (`pytest_agentbench.device.uiautomator`): the same nodes, the
same indexed elements and the same one-line format the built-in server's `observe` shows, so an
index means the same element to this agent as to any other.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.device.uiautomator import (
    Element,
    UiNode,
    format_elements,
    indexed_elements,
    parse_screen,
    screen_signature,
)
from pytest_agentbench.servers.agent_tools import ObserveFormat

_FOREGROUND_LINE = re.compile(r"\A\s*foreground:\s*(?P<foreground>[^\n]*)\n")
_SYSTEM_UI = "com.android.systemui"
_CHECKABLE_TYPES = ("Switch", "CheckBox", "RadioButton", "ToggleButton", "CheckedTextView")


class TreeError(ValueError):
    """An observation that is not a screen, or an index that names no element; the message is a sentence for the model."""


@dataclass(frozen=True)
class UiTree:
    """One observed screen: the foreground app, the indexed elements and what makes it this screen.

    Attributes:
        foreground: `package/activity` (or `unknown`).
        elements: The indexed elements; an element's position is the index the model uses.
        signature: Equal for two observations of the same screen state (the status bar is left out,
            so its clock ticking is not a change).
        raw_chars: The size of what the server returned.
    """

    foreground: str
    elements: tuple[Element, ...]
    signature: tuple[tuple[object, ...], ...]
    raw_chars: int

    def text(self) -> str:
        """The element list the model reads (the built-in server's observe format)."""
        return format_elements(self.elements, foreground=self.foreground)

    def element(self, index: int) -> Element:
        """The element at an index of the list.

        Raises:
            TreeError: The index is not on the list (the sentence says which indexes are).
        """
        count = len(self.elements)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            listed = f"indexes 0-{count - 1}" if count else "no elements"
            raise TreeError(f"index {index!r} is not on the current screen, which lists {listed}; use an index from the latest list")
        return self.elements[index]

    def tap_point(self, index: int) -> tuple[int, int]:
        """The point to tap for an element: the middle of its bounds."""
        return self.element(index).node.center

    def describe(self, index: int) -> str:
        """`Switch "Wi-Fi"`: how a sentence names the element at an index."""
        element = self.element(index)
        label = element.texts[0] if element.texts else element.context
        kind = element.node.short_class or "element"
        return f'{kind} "{label}"' if label else f"{kind} #{element.node.short_id}" if element.node.resource_id else kind


def from_uiautomator(text: str) -> UiTree:
    """Parse a uiautomator dump, optionally after a `foreground: pkg/activity` line (the built-in server's raw observe).

    Raises:
        TreeError: The text holds no well-formed hierarchy.
    """
    match = _FOREGROUND_LINE.match(text)
    foreground = match.group("foreground").strip() if match else ""
    try:
        screen = parse_screen(text)
    except ValueError as exc:
        raise TreeError(f"the screen could not be read ({exc}); observe again") from exc
    app_nodes = [node for node in screen.nodes if node.package != _SYSTEM_UI]
    if not foreground:
        foreground = f"{app_nodes[0].package} (activity unknown)" if app_nodes and app_nodes[0].package else "unknown"
    return UiTree(
        foreground=foreground,
        elements=indexed_elements(screen),
        signature=screen_signature(app_nodes or screen.nodes),
        raw_chars=len(text),
    )


def _flag(value: Any) -> bool:
    return value is True or value == "true"


def _node_from_listing(position: int, item: dict[str, Any]) -> UiNode:
    box = item.get("coordinates") or item.get("rect") or {}
    try:
        if isinstance(box, dict) and "width" not in box and "height" not in box and "x" in box and "y" in box:
            # Older mobile-mcp (its issue #32, April 2025): the centre as decimal strings ("1440.500"), no size.
            # A 1x1 box at that point keeps the tap point exactly where the server said.
            left, top = round(float(box["x"])), round(float(box["y"]))
            right, bottom = left + 1, top + 1
        else:
            left, top = int(box.get("x", 0)), int(box.get("y", 0))
            right, bottom = left + int(box.get("width", 0)), top + int(box.get("height", 0))
    except (TypeError, ValueError, AttributeError):
        raise TreeError(f"element {position} of the listing has unreadable coordinates {box!r} (expected mobile-mcp's "
                        "{x, y, width, height} in pixels, or the {x, y} centre older versions list); observe again") from None
    kind = str(item.get("type") or "")
    identifier = str(item.get("identifier") or "")
    return UiNode(
        index=position,
        text=str(item.get("text") or ""),
        content_desc=str(item.get("label") or item.get("name") or ""),
        resource_id=identifier,
        class_name=kind,
        # The listing names no package; a resource id's prefix does (com.android.systemui:id/clock).
        package=identifier.split(":id/", 1)[0] if ":id/" in identifier else "",
        checkable=kind.rsplit(".", 1)[-1] in _CHECKABLE_TYPES or "checked" in item,
        checked=_flag(item.get("checked")),
        # mobile-mcp lists only elements it considers interesting; each is a tap target.
        clickable=True,
        enabled=item.get("enabled", True) is not False,
        focusable=False,
        focused=_flag(item.get("focused")),
        scrollable=False,
        long_clickable=False,
        selected=_flag(item.get("selected")),
        password=False,
        bounds=(left, top, right, bottom),
    )


def from_mobile_mcp(text: str) -> UiTree:
    """Parse mobile-mcp's `mobile_list_elements_on_screen` JSON listing (`Found these elements on screen: [...]`).

    Raises:
        TreeError: No JSON array of elements in the text.
    """
    start = text.find("[")
    try:
        items = json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError:
        items = None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise TreeError(f"the element listing could not be read (expected a JSON array of elements): {text[:120]!r}; observe again")
    nodes = [_node_from_listing(position, item) for position, item in enumerate(items)]
    elements = tuple(Element(node=node, texts=tuple(t for t in (node.text, node.content_desc) if t)) for node in nodes)
    app_nodes = [node for node in nodes if node.package != _SYSTEM_UI]
    return UiTree(foreground="unknown", elements=elements, signature=screen_signature(app_nodes or nodes), raw_chars=len(text))


def parse_observation(text: str, observe_format: ObserveFormat) -> UiTree:
    """An observe tool's text -> a UiTree, by the format the server profile names.

    Raises:
        TreeError: The text is not an observation of that format.
    """
    if observe_format == "mobile-mcp-json":
        return from_mobile_mcp(text)
    return from_uiautomator(text)
