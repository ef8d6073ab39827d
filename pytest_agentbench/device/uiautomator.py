"""A device screen -> uiautomator XML (one dump) -> UiNode tuples (defusedxml), app-only texts and their match, indexed elements."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING
from dataclasses import dataclass
from xml.etree.ElementTree import Element as XmlElement
from xml.etree.ElementTree import ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from pytest_agentbench.errors import DeviceError
from pytest_agentbench.text import normalize_spaces, standalone_match

if TYPE_CHECKING:
    from pytest_agentbench.device.adb import Adb

_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")
# Class names of nodes text is typed into (EditText and its subclasses that report their own class,
# Compose text fields); uiautomator's XML has no editable attribute.
_EDITABLE_CLASSES = ("EditText", "TextField", "AutoCompleteTextView", "SearchAutoComplete")
#: What `uiautomator dump` prints instead of a hierarchy while the screen animates (AOSP DumpCommand).
NOT_IDLE = "could not get idle state"
#: Dumps tried again after that (observe, the post-run screen) before the screen counts as unreadable.
IDLE_RETRIES = 2
# Long texts (articles, logs) are cut so one node cannot flood the agent's context.
_MAX_LABEL_CHARS = 80


@dataclass(frozen=True)
class UiNode:
    """One `<node>` of a uiautomator dump, in document order (`index` is its position)."""

    index: int
    text: str
    content_desc: str
    resource_id: str
    class_name: str
    package: str
    checkable: bool
    checked: bool
    clickable: bool
    enabled: bool
    focusable: bool
    focused: bool
    scrollable: bool
    long_clickable: bool
    selected: bool
    password: bool
    bounds: tuple[int, int, int, int]

    @property
    def center(self) -> tuple[int, int]:
        """The tap point: the middle of the node's bounds."""
        left, top, right, bottom = self.bounds
        return (left + right) // 2, (top + bottom) // 2

    @property
    def short_class(self) -> str:
        """`android.widget.Button` -> `Button`."""
        return self.class_name.rsplit(".", 1)[-1]

    @property
    def short_id(self) -> str:
        """`com.app:id/add_item` -> `add_item`; ids without a package part stay as they are."""
        return self.resource_id.split(":id/", 1)[-1]

    @property
    def is_editable(self) -> bool:
        """Whether text can be typed into the node (uiautomator has no editable attribute): by its class."""
        return any(marker in self.class_name for marker in _EDITABLE_CLASSES)

    @property
    def is_actionable(self) -> bool:
        """Whether an agent would act on the node itself: tap, long-press, toggle or type."""
        return self.clickable or self.long_clickable or self.checkable or (self.is_editable and self.focusable)


@dataclass(frozen=True)
class Screen:
    """A parsed dump: the nodes and, for each, the position of its parent (-1 for a root)."""

    nodes: tuple[UiNode, ...]
    parents: tuple[int, ...]


@dataclass(frozen=True)
class Element:
    """One line of the compact list: a node that matters and every text it stands for."""

    node: UiNode
    texts: tuple[str, ...]
    # For a control with no text of its own (a row's Switch): the first text of its row.
    context: str = ""
    # For a row: the state of the checkable control inside it ("Switch:checked").
    inner_state: str = ""


def _slice_document(xml: str | bytes) -> bytes:
    """Cut the XML out of what a device printed: devices add text after `</hierarchy>`."""
    data = xml.encode("utf-8") if isinstance(xml, str) else xml
    start = data.find(b"<?xml")
    if start < 0:
        start = data.find(b"<hierarchy")
    end = data.rfind(b"</hierarchy>")
    if start < 0 or end < 0:
        snippet = data[:80].decode("utf-8", "replace")
        raise ValueError(f"not a uiautomator dump (no <hierarchy> element): {snippet!r}")
    return data[start : end + len(b"</hierarchy>")]


def _parse_bounds(value: str) -> tuple[int, int, int, int]:
    match = _BOUNDS.fullmatch(value.strip())
    if match is None:
        raise ValueError(f"bad bounds attribute {value!r}: expected [left,top][right,bottom]")
    left, top, right, bottom = (int(group) for group in match.groups())
    return left, top, right, bottom


def _flag(element: XmlElement, name: str) -> bool:
    return element.get(name, "false") == "true"


def _node(element: XmlElement, index: int) -> UiNode:
    return UiNode(
        index=index,
        text=element.get("text", ""),
        content_desc=element.get("content-desc", ""),
        resource_id=element.get("resource-id", ""),
        class_name=element.get("class", ""),
        package=element.get("package", ""),
        checkable=_flag(element, "checkable"),
        checked=_flag(element, "checked"),
        clickable=_flag(element, "clickable"),
        enabled=_flag(element, "enabled"),
        focusable=_flag(element, "focusable"),
        focused=_flag(element, "focused"),
        scrollable=_flag(element, "scrollable"),
        long_clickable=_flag(element, "long-clickable"),
        selected=_flag(element, "selected"),
        password=_flag(element, "password"),
        bounds=_parse_bounds(element.get("bounds", "[0,0][0,0]")),
    )


def parse_screen(xml: str | bytes) -> Screen:
    """Parse a uiautomator dump once, keeping the parent of every node.

    Args:
        xml: What `uiautomator dump` wrote, possibly with the device's trailing status text.

    Returns:
        The nodes in document order and their parents' positions.

    Raises:
        ValueError: The text is not a well-formed uiautomator hierarchy, or a node has bad bounds.
    """
    document = _slice_document(xml)
    try:
        root = fromstring(document)
    except (ParseError, DefusedXmlException) as exc:
        raise ValueError(f"malformed uiautomator XML: {exc}") from exc
    if root.tag != "hierarchy":
        raise ValueError(f"not a uiautomator dump: root element is <{root.tag}>, expected <hierarchy>")
    nodes: list[UiNode] = []
    parents: list[int] = []
    # Iterative pre-order walk: deep Compose trees would hit the recursion limit.
    stack: list[tuple[XmlElement, int]] = [(child, -1) for child in reversed(list(root)) if child.tag == "node"]
    while stack:
        element, parent = stack.pop()
        position = len(nodes)
        nodes.append(_node(element, position))
        parents.append(parent)
        stack.extend((child, position) for child in reversed(list(element)) if child.tag == "node")
    return Screen(nodes=tuple(nodes), parents=tuple(parents))


def parse_hierarchy(xml: str | bytes) -> tuple[UiNode, ...]:
    """Parse a uiautomator dump into nodes in document order.

    Args:
        xml: What `uiautomator dump` wrote, possibly with the device's trailing status text.

    Returns:
        One `UiNode` per `<node>`, `index` being its document position.

    Raises:
        ValueError: The text is not a well-formed uiautomator hierarchy.
    """
    return parse_screen(xml).nodes


def app_texts(nodes: Iterable[UiNode], package: str, *, editable: bool = False) -> list[str]:
    """Collect what one package's nodes show, in document order: text and content-desc.

    The `text` of an editable node (`UiNode.is_editable`: an EditText or a text field, whatever
    the agent typed there) is not something the app shows, so it never counts; its content-desc
    (the app's own label) does. Preflight's start-screen check, taken before any agent ran, passes
    `editable=True`: there a field's text is the app's own (an empty omnibox shows its hint).

    Args:
        nodes: Parsed nodes of a dump.
        package: The app whose nodes count; other windows (system UI, keyboard) are ignored.
        editable: Count editable nodes' text too.

    Returns:
        Every non-empty text and content-desc of that package's nodes, editable nodes' text left out.
    """
    texts: list[str] = []
    for node in nodes:
        if node.package != package:
            continue
        shown = (node.content_desc,) if node.is_editable and not editable else (node.text, node.content_desc)
        texts.extend(value for value in shown if value)
    return texts


def _own_texts(node: UiNode) -> list[str]:
    texts = [node.text] if node.text else []
    if node.content_desc and node.content_desc != node.text:
        texts.append(node.content_desc)
    return texts


def indexed_elements(screen: Screen) -> tuple[Element, ...]:
    """Choose the nodes an agent needs: every actionable node, and every text not inside one.

    A text inside a clickable row is folded into the row's line, because tapping the text taps
    the row; checkable nodes keep their own line so their state is never hidden.

    Args:
        screen: A parsed dump.

    Returns:
        Elements in document order; an element's position is its index for `tapOn`.
    """
    owner: dict[int, int] = {}
    chosen: dict[int, list[str]] = {}
    for position, node in enumerate(screen.nodes):
        parent = screen.parents[position]
        inherited = owner.get(parent) if parent >= 0 else None
        if node.is_actionable:
            # The nearest actionable ancestor owns the texts below it: tapping them taps it.
            chosen[position] = _own_texts(node)
            owner[position] = position
        elif inherited is not None:
            chosen[inherited].extend(_own_texts(node))
            owner[position] = inherited
        elif _own_texts(node):
            chosen[position] = _own_texts(node)
    context: dict[int, str] = {}
    inner_state: dict[int, list[str]] = {}
    for position, texts in chosen.items():
        parent = screen.parents[position]
        row = owner.get(parent) if parent >= 0 else None
        if row is None or not screen.nodes[position].is_actionable:
            continue
        # A textless switch or checkbox is named by its row, and the row shows the switch's
        # state, so "Enable Bug" and "unchecked" end up on the same line for the agent.
        if not texts and chosen[row]:
            context[position] = chosen[row][0]
        node = screen.nodes[position]
        if node.checkable:
            inner_state.setdefault(row, []).append(f"{node.short_class}:{'checked' if node.checked else 'unchecked'}")
    return tuple(
        Element(node=screen.nodes[position], texts=tuple(texts), context=context.get(position, ""),
                inner_state=" ".join(inner_state.get(position, ())))
        for position, texts in chosen.items()
    )


def _quote(text: str) -> str:
    flat = normalize_spaces(text)
    if len(flat) > _MAX_LABEL_CHARS:
        flat = flat[: _MAX_LABEL_CHARS - 1] + "…"
    return '"' + flat.replace('"', "'") + '"'


def _flags(node: UiNode) -> list[str]:
    flags: list[str] = []
    if node.checkable:
        flags.append("checked" if node.checked else "unchecked")
    if node.selected:
        flags.append("selected")
    if not node.enabled:
        flags.append("disabled")
    if node.focused:
        flags.append("focused")
    if node.password:
        flags.append("password")
    if node.scrollable:
        flags.append("scrollable")
    return flags


def format_element(position: int, element: Element) -> str:
    """One compact line: index, short class, texts, short id, state flags, tap point."""
    node = element.node
    parts = [str(position), node.short_class or "node"]
    parts.extend(_quote(text) for text in element.texts)
    if element.context:
        parts.append("in " + _quote(element.context))
    if node.resource_id:
        parts.append("#" + node.short_id)
    parts.extend(_flags(node))
    if element.inner_state:
        parts.append(element.inner_state)
    x, y = node.center
    parts.append(f"@{x},{y}")
    return " ".join(parts)


def format_elements(elements: Sequence[Element], *, foreground: str) -> str:
    """The whole observe text: the foreground app/activity line, then one line per element."""
    lines = [f"foreground: {foreground or 'unknown'}", f"elements: {len(elements)}"]
    lines.extend(format_element(position, element) for position, element in enumerate(elements))
    return "\n".join(lines)


def visible_texts(elements: Sequence[Element]) -> list[str]:
    """Every text the list shows, deduplicated in order (for error sentences)."""
    seen: dict[str, None] = {}
    for element in elements:
        for text in element.texts:
            seen.setdefault(text, None)
    return list(seen)


def screen_signature(nodes: Iterable[UiNode]) -> tuple[tuple[object, ...], ...]:
    """What makes two dumps the same screen to an agent: texts, ids, state and layout."""
    return tuple(
        (
            node.class_name,
            node.text,
            node.content_desc,
            node.resource_id,
            node.package,
            node.checked,
            node.selected,
            node.enabled,
            node.focused,
            node.bounds,
        )
        for node in nodes
    )


def screen_includes(texts: Iterable[str], expected: str) -> bool:
    """Tell whether one of the app's on-screen texts shows `expected` standalone, case-sensitively.

    Both sides have their Unicode spaces normalised first (`text.normalize_spaces`), as the
    observe text shows them: `12:30 PM` matches Android 14's `12:30\u202fPM`. An entry of several
    lines is one check of them together: every line must be shown (each by some text) on this
    one screen, for a state only the lines together describe (`Expected count: 3` with
    `Displayed count: 0`, where each alone is also a fresh screen's or an undone job's).
    """
    shown = [normalize_spaces(text) for text in texts]
    wanted = [normalize_spaces(line) for line in expected.split("\n") if line.strip()]
    return bool(wanted) and all(any(standalone_match(text, line, ignore_case=False) for text in shown) for line in wanted)


def extract_hierarchy(raw: bytes) -> str:
    """The XML of `uiautomator dump /dev/tty` output (a real device appends a status line)."""
    text = raw.decode("utf-8", "replace")
    start = text.find("<?xml")
    end = text.rfind("</hierarchy>")
    if start < 0 or end < 0:
        raise ValueError(f"uiautomator printed no hierarchy: {text[:200]!r}")
    return text[start : end + len("</hierarchy>")]


def missing_texts(expected: tuple[str, ...], texts: list[str]) -> list[str]:
    """Expected strings that no app text shows (the same standalone match as verify.screenIncludes)."""
    return [want for want in expected if not screen_includes(texts, want)]


def dump_screen(adb: Adb, serial: str, *, timeout_s: float = 30) -> str:
    """One uiautomator dump straight to stdout (one round trip), as XML text.

    Raises:
        DeviceError: uiautomator printed no hierarchy (for example "could not get idle state").
        DeviceLost: The device went away.
    """
    raw = adb.exec_out(serial, ["uiautomator", "dump", "/dev/tty"], timeout_s=timeout_s)
    try:
        return extract_hierarchy(raw)
    except ValueError as exc:
        raise DeviceError(f"{serial}: {exc}", command="uiautomator dump /dev/tty") from None
