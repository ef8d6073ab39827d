"""Declared widgets + app state -> laid-out screen nodes -> uiautomator XML, hit tests and focus."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from collections.abc import Iterator, Mapping
from xml.sax.saxutils import escape

STATUS_BAR_HEIGHT = 63
SIDE_PADDING = 42
SYSTEMUI_PACKAGE = "com.android.systemui"

# Heights in px at density 420, close to what Material components measure on a 1080x2400 phone.
_HEIGHTS = {"title": 170, "text": 110, "button": 150, "row": 200, "row1": 140, "switch": 180, "radio": 140,
            "field": 170, "icon": 280, "image": 560}
_ICONS_PER_ROW = 4


@dataclass(frozen=True)
class Widget:
    """One declared widget of a screen. Strings may hold `{key}` placeholders filled from app state.

    `checked`, `enabled` and `when` name state keys (a leading "!" negates); empty means
    "not checked" / "always enabled" / "always shown". `on_tap` names a handler of the app.
    """

    kind: str
    text: str = ""
    summary: str = ""
    id: str = ""
    desc: str = ""
    on_tap: str = ""
    arg: str = ""
    on_swipe: str = ""  # a row's handler for a sideways swipe started on it (swipe to dismiss), given `arg`
    checked: str = ""
    enabled: str = ""
    when: str = ""
    password: bool = False
    items: tuple[Widget, ...] = ()  # an `each` widget's template, repeated per item of state[text]


def Title(text: str, **kw: str) -> Widget:
    return Widget("title", text=text, **kw)


def Text(text: str, **kw: str) -> Widget:
    return Widget("text", text=text, **kw)


def Button(text: str, on_tap: str, **kw: str) -> Widget:
    return Widget("button", text=text, on_tap=on_tap, **kw)


def Row(text: str, on_tap: str = "", summary: str = "", **kw: str) -> Widget:
    return Widget("row", text=text, summary=summary, on_tap=on_tap, **kw)


def Switch(text: str, checked: str, on_tap: str, **kw: str) -> Widget:
    return Widget("switch", text=text, checked=checked, on_tap=on_tap, **kw)


def Radio(text: str, checked: str, on_tap: str, arg: str = "", **kw: str) -> Widget:
    return Widget("radio", text=text, checked=checked, on_tap=on_tap, arg=arg or text, **kw)


def Field(hint: str, id: str, password: bool = False, **kw: str) -> Widget:
    return Widget("field", text=hint, id=id, password=password, **kw)


def Icon(label: str, on_tap: str, arg: str = "") -> Widget:
    return Widget("icon", text=label, desc=label, on_tap=on_tap, arg=arg)


def Image(desc: str, on_tap: str = "", **kw: str) -> Widget:
    """A picture (ImageView): no text, a content description."""
    return Widget("image", desc=desc, on_tap=on_tap, **kw)


def Each(key: str, *widgets: Widget, when: str = "") -> Widget:
    """Repeat `widgets` for every item (a dict) of the list in state[key]; item keys fill their `{placeholders}` and args."""
    return Widget("each", text=key, items=tuple(widgets), when=when)


def expand(widgets: tuple[Widget, ...], state: Mapping[str, object]) -> Iterator[tuple[Widget, Mapping[str, object]]]:
    """The widgets a screen shows, `each` lists unrolled, each with the state its placeholders read."""
    for widget in widgets:
        if not state_flag(state, widget.when, True):
            continue
        if widget.kind != "each":
            yield widget, state
            continue
        items = state.get(widget.text) or ()
        for item in items:  # type: ignore[attr-defined]
            merged = {**state, **item}
            for template in widget.items:
                if state_flag(merged, template.when, True):
                    yield replace(template, arg=_fill(template.arg, merged), when=""), merged


@dataclass
class UiNode:
    """A laid-out node: every attribute a real uiautomator dump carries, plus what a tap does."""

    cls: str
    package: str
    bounds: tuple[int, int, int, int]
    text: str = ""
    resource_id: str = ""
    content_desc: str = ""
    checkable: bool = False
    checked: bool = False
    clickable: bool = False
    enabled: bool = True
    focusable: bool = False
    focused: bool = False
    scrollable: bool = False
    long_clickable: bool = False
    password: bool = False
    selected: bool = False
    children: list[UiNode] = field(default_factory=list)
    on_tap: str = ""
    arg: str = ""
    on_swipe: str = ""
    field_id: str = ""
    style: str = "body"  # how png.py paints it; not part of the dump

    def walk(self) -> Iterator[UiNode]:
        yield self
        for child in self.children:
            yield from child.walk()

    @property
    def center(self) -> tuple[int, int]:
        left, top, right, bottom = self.bounds
        return (left + right) // 2, (top + bottom) // 2


def state_flag(state: Mapping[str, object], key: str, default: bool) -> bool:
    """Read a `checked`/`enabled`/`when` key: empty -> default, "!key" -> negation."""
    if not key:
        return default
    if key.startswith("!"):
        return not bool(state.get(key[1:]))
    return bool(state.get(key))


def layout_screen(package: str, widgets: tuple[Widget, ...], state: Mapping[str, object], *,
                  width: int, height: int, fields: Mapping[str, str], focused_field: str,
                  scroll: int = 0) -> tuple[UiNode, int]:
    """Stack the visible widgets of one screen top to bottom inside the app's window root.

    Returns the root and the scroll offset actually applied (clamped to the content's overflow).
    Content taller than the window scrolls: nodes scrolled out of view are left out and partly
    visible ones are clipped, as uiautomator reports them.
    """
    content = UiNode("android.widget.LinearLayout", package, (0, STATUS_BAR_HEIGHT, width, height),
                     resource_id=f"{package}:id/content" if package else "")
    y = STATUS_BAR_HEIGHT + 21
    icon_column = 0
    for widget, widget_state in expand(widgets, state):
        if widget.kind == "icon":
            cell = (width - 2 * SIDE_PADDING) // _ICONS_PER_ROW
            left = SIDE_PADDING + icon_column * cell
            content.children.append(_icon(package, widget, (left, y, left + cell, y + _HEIGHTS["icon"])))
            icon_column += 1
            if icon_column == _ICONS_PER_ROW:
                icon_column, y = 0, y + _HEIGHTS["icon"]
            continue
        if icon_column:
            icon_column, y = 0, y + _HEIGHTS["icon"]
        kind = "row1" if widget.kind == "row" and not widget.summary else widget.kind
        box = (0, y, width, y + _HEIGHTS[kind])
        content.children.append(_build(package, widget, widget_state, box, fields, focused_field))
        y = box[3]
    if icon_column:
        y += _HEIGHTS["icon"]
    overflow = max(0, y + 21 - height)
    scroll = max(0, min(scroll, overflow))
    if overflow:
        content.scrollable = True
        content.children = [child for child in (_shift_clip(c, -scroll, STATUS_BAR_HEIGHT, height)
                                                for c in content.children) if child is not None]
    root = UiNode("android.widget.FrameLayout", package, (0, 0, width, height), children=[content])
    _index_check(root)
    return root, scroll


def _shift_clip(node: UiNode, dy: int, top_limit: int, bottom_limit: int) -> UiNode | None:
    left, top, right, bottom = node.bounds
    top, bottom = max(top + dy, top_limit), min(bottom + dy, bottom_limit)
    if top >= bottom:
        return None
    node.bounds = (left, top, right, bottom)
    node.children = [c for c in (_shift_clip(child, dy, top, bottom) for child in node.children) if c is not None]
    return node


def status_bar(width: int, clock: str, *, wifi_on: bool) -> UiNode:
    """The system UI's status bar window: a second package in every dump, as on a phone."""
    bar = UiNode("android.widget.FrameLayout", SYSTEMUI_PACKAGE, (0, 0, width, STATUS_BAR_HEIGHT),
                 resource_id=f"{SYSTEMUI_PACKAGE}:id/status_bar", style="statusbar")
    bar.children.append(UiNode("android.widget.TextView", SYSTEMUI_PACKAGE, (SIDE_PADDING, 0, SIDE_PADDING + 158,
                               STATUS_BAR_HEIGHT), text=clock, resource_id=f"{SYSTEMUI_PACKAGE}:id/clock",
                               content_desc=clock, style="statusbar"))
    # Icons hug the right edge whatever the display width (wm size overrides, landscape).
    right = width - SIDE_PADDING
    bar.children.append(UiNode("android.widget.ImageView", SYSTEMUI_PACKAGE, (right - 158, 0, right - 98, STATUS_BAR_HEIGHT),
                               content_desc="Wifi signal full." if wifi_on else "Wifi off.",
                               resource_id=f"{SYSTEMUI_PACKAGE}:id/wifi_signal", style="statusbar"))
    bar.children.append(UiNode("android.widget.ImageView", SYSTEMUI_PACKAGE, (right - 78, 0, right, STATUS_BAR_HEIGHT),
                               content_desc="Battery 100 percent.", style="statusbar",
                               resource_id=f"{SYSTEMUI_PACKAGE}:id/battery"))
    return bar


def to_xml(roots: list[UiNode], rotation: int = 0) -> str:
    """Serialize window roots the way `uiautomator dump` does (one line, every attribute)."""
    parts = ["<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>", f'<hierarchy rotation="{rotation}">']
    for index, root in enumerate(roots):
        _node_xml(root, index, parts)
    parts.append("</hierarchy>")
    return "".join(parts)


def swipe_target(roots: list[UiNode], x: int, y: int) -> UiNode | None:
    """The node a sideways swipe starting at the point drags (one with an `on_swipe` handler), if any; topmost root first."""
    for root in reversed(roots):
        for node in root.walk():
            left, top, right, bottom = node.bounds
            if node.on_swipe and left <= x < right and top <= y < bottom:
                return node
    return None


def hit_test(roots: list[UiNode], x: int, y: int) -> UiNode | None:
    """Return the deepest clickable node under the point; later roots are drawn on top."""
    for root in reversed(roots):
        found = _deepest_clickable(root, x, y)
        if found is not None:
            return found
    return None


def _deepest_clickable(node: UiNode, x: int, y: int) -> UiNode | None:
    left, top, right, bottom = node.bounds
    if not (left <= x < right and top <= y < bottom):
        return None
    for child in reversed(node.children):
        found = _deepest_clickable(child, x, y)
        if found is not None:
            return found
    return node if node.clickable else None


def _fill(text: str, state: Mapping[str, object]) -> str:
    return text.format_map(_Missing(state)) if "{" in text else text


class _Missing(dict):
    # A screen must render even when a handler has not set a key yet.
    def __init__(self, state: Mapping[str, object]) -> None:
        super().__init__(state)

    def __missing__(self, key: str) -> str:
        return ""


def _rid(package: str, widget: Widget, fallback: str = "") -> str:
    name = widget.id or fallback
    if not name:
        return ""
    return name if ":" in name else f"{package}:id/{name}"


def _build(package: str, widget: Widget, state: Mapping[str, object], box: tuple[int, int, int, int],
           fields: Mapping[str, str], focused_field: str) -> UiNode:
    left, top, right, bottom = box
    text = _fill(widget.text, state)
    enabled = state_flag(state, widget.enabled, True)
    checked = state_flag(state, widget.checked, False)
    inner = (left + SIDE_PADDING, top, right - SIDE_PADDING, bottom)
    if widget.kind == "title":
        return UiNode("android.widget.TextView", package, inner, text=text, resource_id=_rid(package, widget),
                      content_desc=_fill(widget.desc, state), style="title")
    if widget.kind == "text":
        return UiNode("android.widget.TextView", package, inner, text=text, resource_id=_rid(package, widget),
                      content_desc=_fill(widget.desc, state))
    if widget.kind == "image":
        return UiNode("android.widget.ImageView", package, (inner[0], top + 20, inner[2], bottom - 20),
                      resource_id=_rid(package, widget), content_desc=_fill(widget.desc, state),
                      clickable=bool(widget.on_tap), focusable=bool(widget.on_tap), on_tap=widget.on_tap,
                      arg=widget.arg, style="image")
    if widget.kind == "button":
        return UiNode("android.widget.Button", package, (inner[0], top + 15, inner[2], bottom - 15), text=text,
                      resource_id=_rid(package, widget), content_desc=_fill(widget.desc, state), clickable=enabled,
                      enabled=enabled, focusable=True, on_tap=widget.on_tap, arg=widget.arg, style="button")
    if widget.kind == "radio":
        return UiNode("android.widget.RadioButton", package, inner, text=text, resource_id=_rid(package, widget),
                      checkable=True, checked=checked, clickable=enabled, enabled=enabled, focusable=True,
                      on_tap=widget.on_tap, arg=widget.arg, style="radio")
    if widget.kind == "field":
        value = fields.get(widget.id, "")
        shown = ("\u2022" * len(value) if widget.password else value) if value else text
        return UiNode("android.widget.EditText", package, (inner[0], top + 10, inner[2], bottom - 10), text=shown,
                      resource_id=_rid(package, widget), clickable=True, enabled=True, focusable=True,
                      focused=focused_field == widget.id, password=widget.password, long_clickable=True,
                      field_id=widget.id, on_tap="__focus__", style="field")
    if widget.kind == "row":
        row = UiNode("android.widget.LinearLayout", package, box, clickable=bool(widget.on_tap) and enabled,
                     enabled=enabled, focusable=bool(widget.on_tap), on_tap=widget.on_tap, arg=widget.arg,
                     on_swipe=widget.on_swipe, resource_id=_rid(package, widget), style="row")
        title_bottom = top + (100 if widget.summary else bottom - top)
        row.children.append(UiNode("android.widget.TextView", package, (inner[0], top + 20, inner[2], title_bottom),
                                   text=text, resource_id="android:id/title", enabled=enabled))
        if widget.summary:
            row.children.append(UiNode("android.widget.TextView", package,
                                       (inner[0], title_bottom, inner[2], bottom - 20),
                                       text=_fill(widget.summary, state), resource_id="android:id/summary",
                                       enabled=enabled, style="summary"))
        return row
    if widget.kind == "switch":
        row = UiNode("android.widget.LinearLayout", package, box, clickable=enabled, enabled=enabled, focusable=True,
                     on_tap=widget.on_tap, arg=widget.arg, resource_id=_rid(package, widget), style="row")
        switch_left = inner[2] - 158
        row.children.append(UiNode("android.widget.TextView", package, (inner[0], top, switch_left - 20, bottom),
                                   text=text, resource_id="android:id/title"))
        row.children.append(UiNode("android.widget.Switch", package, (switch_left, top + 40, inner[2], bottom - 40),
                                   resource_id="android:id/switch_widget", checkable=True, checked=checked,
                                   clickable=enabled, enabled=enabled, focusable=True, on_tap=widget.on_tap,
                                   arg=widget.arg, style="switch_on" if checked else "switch_off"))
        return row
    raise ValueError(f"unknown widget kind {widget.kind!r} (text {widget.text!r})")


def _icon(package: str, widget: Widget, box: tuple[int, int, int, int]) -> UiNode:
    return UiNode("android.widget.TextView", package, box, text=widget.text, content_desc=widget.desc,
                  clickable=True, focusable=True, long_clickable=True, on_tap=widget.on_tap,
                  arg=widget.arg or widget.text, style="icon")


def _index_check(root: UiNode) -> None:
    # Bounds outside the window would give taps that land nowhere; catch a bad declaration early.
    left, top, right, bottom = root.bounds
    for node in root.walk():
        node_left, node_top, node_right, node_bottom = node.bounds
        if (node_left < left or node_top < top or node_right > right or node_left > node_right
                or node_top > node_bottom):
            raise ValueError(f"node {node.text or node.cls!r} at {node.bounds} lies outside its window")


_BOOL = ("checkable", "checked", "clickable", "enabled", "focusable", "focused", "scrollable", "long_clickable",
         "password", "selected")


def _attr(value: str) -> str:
    return escape(value, {'"': "&quot;", "\n": "&#10;"})


def _node_xml(node: UiNode, index: int, parts: list[str]) -> None:
    left, top, right, bottom = node.bounds
    attrs = [f'index="{index}"', f'text="{_attr(node.text)}"', f'resource-id="{_attr(node.resource_id)}"',
             f'class="{node.cls}"', f'package="{node.package}"', f'content-desc="{_attr(node.content_desc)}"']
    attrs += [f'{name.replace("_", "-")}="{str(getattr(node, name)).lower()}"' for name in _BOOL]
    attrs.append(f'bounds="[{left},{top}][{right},{bottom}]"')
    if not node.children:
        parts.append(f"<node {' '.join(attrs)} />")
        return
    parts.append(f"<node {' '.join(attrs)}>")
    for child_index, child in enumerate(node.children):
        _node_xml(child, child_index, parts)
    parts.append("</node>")
