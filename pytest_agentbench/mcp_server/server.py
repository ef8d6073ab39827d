"""Tool calls (AutoMobile names) -> phone actions through the device layer; `build_server()` makes the MCPServer."""

from __future__ import annotations

import difflib
import inspect
import logging
import re
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import Field, ValidationError

from pytest_agentbench import __version__
from pytest_agentbench.device.adb import Adb
from pytest_agentbench.mcp_server.config import ServerConfig
from pytest_agentbench.mcp_server.driver import KEYCODES, Observation, PhoneDriver
from pytest_agentbench.mcp_server.hub import DeviceHub
from pytest_agentbench.mcp_server.stdio import hub_lifespan
from pytest_agentbench.mcp_server.screenshots import ScreenshotRecorder
from pytest_agentbench.device.uiautomator import UiNode, visible_texts
from pytest_agentbench.text import normalize_spaces

logger = logging.getLogger("agentbench.mcp")

SERVER_NAME = "agentbench"
INSTRUCTIONS = (
    "This server drives an Android phone. Call observe to see the foreground app and a numbered list "
    "of the elements on screen (index, class, text, #id, state, @tap point). Act with tapOn (index from "
    "the latest list, or exact text, or id), inputText, swipeOn, pressButton, launchApp, terminateApp, "
    "openLink and homeScreen; readLogs reads the device log. Every action answers with the new element list, or says the screen did "
    "not change, so you rarely need a separate observe. Check a switch's checked/unchecked state before "
    "tapping it: tapping a switch that is already on turns it off."
)
_PACKAGE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)+")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")
_SHOWN_TEXTS = 25
_LOG_TAG = re.compile(r"[A-Za-z0-9_.:-]+")
#: The most log lines one readLogs answer carries (a whole log would flood the agent's context).
MAX_LOG_LINES = 500


def log_excerpt(text: str, *, contains: str, lines: int) -> str:
    """The newest `lines` log lines that contain `contains` (ignoring case), or a sentence saying none did."""
    needle = contains.casefold()
    kept = [line for line in text.splitlines()
            if line.strip() and not line.startswith("--------- beginning of") and needle in line.casefold()]
    if not kept:
        return f"no log line contains {contains!r}" if contains else "the log is empty"
    shown = kept[-lines:]
    more = f"({len(kept) - len(shown)} older matching lines not shown)\n" if len(kept) > len(shown) else ""
    return more + "\n".join(shown)

DeviceArg = Annotated[
    str, Field(description="Serial of the phone to act on (from listDevices); empty means the only or pinned phone")
]
Button = Literal[tuple(KEYCODES)]  # type: ignore[valid-type]
Direction = Literal["up", "down", "left", "right"]


class AgentbenchServer(MCPServer):
    """MCPServer whose argument mistakes come back as one short sentence naming the tool's arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._arguments: dict[str, tuple[str, ...]] = {}
        #: Set by build_server when AGENTBENCH_SCREENSHOTS=1.
        self.screenshots: ScreenshotRecorder | None = None

    def register(self, fn: Callable[..., Any]) -> None:
        """Add a tool: its name, its docstring's line as description, text-only results."""
        self._arguments[fn.__name__] = tuple(inspect.signature(fn).parameters)
        self.add_tool(fn, name=fn.__name__, structured_output=False)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Call a tool (see `_call_tool`); with screenshots on, photograph the phone before answering."""
        if self.screenshots is None:
            return await self._call_tool(name, arguments, context)
        ok = False
        try:
            answer = await self._call_tool(name, arguments, context)
            ok = True
            return answer
        finally:
            await anyio.to_thread.run_sync(self.screenshots.after_call, name, arguments or {}, ok)

    async def _call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Call a tool, rewording argument and wrapper errors into sentences an agent can act on."""
        expected = self._arguments.get(name)
        if expected is not None:
            unknown = sorted(set(arguments) - set(expected))
            if unknown:
                raise ToolError(
                    f"malformed arguments for {name}: unknown argument {', '.join(map(repr, unknown))}; "
                    f"{name} takes {', '.join(expected) or 'no arguments'}"
                )
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(_validation_sentence(name, cause, expected or ())) from cause
            if isinstance(cause, ToolError):
                # Drop the SDK's "Error executing tool X:" prefix: the sentence is the message.
                raise ToolError(str(cause)) from cause
            raise


def _validation_sentence(name: str, error: ValidationError, expected: Sequence[str]) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        got = f" (got {item['input']!r})" if item["type"] != "missing" else ""
        problems.append(f"{where}: {item['msg'].lower()}{got}")
    return f"malformed arguments for {name}: {'; '.join(problems)}; {name} takes {', '.join(expected)}"


def _describe(node: UiNode) -> str:
    label = node.text or node.content_desc
    parts = [node.short_class or "node"]
    if label:
        parts.append(f'"{label}"')
    elif node.resource_id:
        parts.append("#" + node.short_id)
    return " ".join(parts)


def pick_node(matches: list[UiNode], *, to_type: bool = False) -> UiNode | list[UiNode]:
    """One node out of several that match a tap (or, with `to_type`, a typing) target, or the candidates left.

    The app's nodes win over the system UI's. For a tap, a non-editable node wins over a text
    field (after typing "London" in a search field, `tapOn(text="London")` means the result row,
    not the field); to type, a text field wins. Then a single actionable node wins. Nodes with the
    same tap point are one choice.

    Returns:
        The node, or the candidates (more than one) when the choice is still ambiguous.
    """
    if len(matches) > 1:
        app_nodes = [node for node in matches if node.package != "com.android.systemui"]
        matches = app_nodes or matches
    if len(matches) > 1:
        preferred = [node for node in matches if node.is_editable == to_type]
        matches = preferred or matches
    if len(matches) > 1:
        actionable = [node for node in matches if node.is_actionable]
        matches = actionable if len(actionable) == 1 else matches
    if len({node.center for node in matches}) > 1:
        return matches
    return matches[0]


def _pick(matches: list[UiNode], observation: Observation, what: str, *, to_type: bool = False) -> UiNode:
    """`pick_node`, or a tool error naming every candidate (its index, class, text and place)."""
    chosen = pick_node(matches, to_type=to_type)
    if isinstance(chosen, UiNode):
        return chosen
    listed = []
    for node in chosen:
        index = next((str(i) for i, el in enumerate(observation.elements) if el.node == node), None)
        where = f"at {node.center[0]},{node.center[1]}"
        listed.append(f"{'[' + index + '] ' if index is not None else ''}{_describe(node)}"
                      f"{' (editable)' if node.is_editable else ''} {where}")
    raise ToolError(
        f"{len(chosen)} elements match {what}, so the target is ambiguous: {'; '.join(listed)}; "
        f"{'type into' if to_type else 'tap'} one of them by index"
    )


def _node_by_text(observation: Observation, text: str) -> UiNode:
    nodes = observation.screen.nodes
    matches = [node for node in nodes if text in (node.text, node.content_desc)]
    if not matches:
        # The observe text shows U+202F / U+00A0 as spaces, so the agent's `12:30 PM` names `12:30\u202fPM`.
        wanted = normalize_spaces(text)
        matches = [node for node in nodes if wanted in (normalize_spaces(node.text), normalize_spaces(node.content_desc))]
    if not matches:
        folded = normalize_spaces(text).casefold()
        matches = [node for node in nodes
                   if folded in (normalize_spaces(node.text).casefold(), normalize_spaces(node.content_desc).casefold())]
    if matches:
        return _pick(matches, observation, f"text '{text}'")
    shown = visible_texts(observation.elements)
    close = difflib.get_close_matches(text, shown, n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    listing = ", ".join(shown[:_SHOWN_TEXTS]) + (", ..." if len(shown) > _SHOWN_TEXTS else "")
    raise ToolError(f"no element with text '{text}'{hint}; visible texts: {listing or 'none'}")


def _node_by_id(observation: Observation, resource_id: str, *, to_type: bool = False) -> UiNode:
    matches = [node for node in observation.screen.nodes
               if node.resource_id and resource_id in (node.resource_id, node.short_id)]
    if matches:
        return _pick(matches, observation, f"id '{resource_id}'", to_type=to_type)
    ids = sorted({el.node.short_id for el in observation.elements if el.node.resource_id})
    raise ToolError(f"no element with id '{resource_id}'; ids on screen: {', '.join(ids) or 'none'}")


def _node_by_index(driver: PhoneDriver, index: int) -> UiNode:
    observation = driver.last
    if observation is None:
        raise ToolError(f"no observe has run on {driver.serial} yet; call observe, then use one of its indexes")
    count = len(observation.elements)
    if not 0 <= index < count:
        listed = f"{count} elements (0-{count - 1})" if count else "no elements"
        raise ToolError(f"index {index} is out of range: the last observe listed {listed}; call observe again")
    return observation.elements[index].node


def _one_target(tool: str, **given: object) -> tuple[str, object] | None:
    chosen = [(key, value) for key, value in given.items() if value is not None]
    if len(chosen) > 1:
        names = " and ".join(key for key, _ in chosen)
        raise ToolError(f"{tool} takes only one of {', '.join(given)}, but got {names}")
    return chosen[0] if chosen else None


def _target(driver: PhoneDriver, kind: str, value: object, *, to_type: bool = False) -> tuple[UiNode, Observation]:
    """The node a tapOn/inputText target names and the observation it was found in."""
    if kind == "index":
        before = driver.current()
        return _node_by_index(driver, int(value)), before  # type: ignore[arg-type]
    # Text and ids are looked up on the screen as it is now, not as it was at the last observe.
    before = driver.observe()
    if kind == "text":
        return _node_by_text(before, str(value)), before
    return _node_by_id(before, str(value), to_type=to_type), before


def _report(driver: PhoneDriver, before: Observation, done: str) -> str:
    after, changed = driver.after_action(before)
    if not changed:
        return f"{done}; the screen did not change"
    return f"{done}; the screen now shows:\n{after.text}"


def _check_package(name: str) -> None:
    if not _PACKAGE.fullmatch(name):
        raise ToolError(f"'{name}' is not a package name; expected something like com.android.settings")


def build_server(config: ServerConfig | None = None, *, adb: Adb | None = None) -> AgentbenchServer:
    """Build the built-in Android MCP server.

    Args:
        config: Settings; read from the environment when None.
        adb: The device-layer client; one for `config.endpoint` when None.

    Returns:
        The server, ready for `run("stdio")` or an in-process `mcp.Client`. Its device claims are
        released when its lifespan ends (the stdio session closes).
    """
    config = config if config is not None else ServerConfig.from_environ()
    hub = DeviceHub(config, adb if adb is not None else Adb(config.endpoint))

    server = AgentbenchServer(
        SERVER_NAME,
        instructions=INSTRUCTIONS if config.instructions else None,
        version=__version__,
        lifespan=hub_lifespan(hub),
    )
    server.hub = hub  # type: ignore[attr-defined]
    if config.screenshots and config.data_dir is not None:
        server.screenshots = ScreenshotRecorder(config.data_dir, hub)

    async def on_phone(device: str, action: Callable[[PhoneDriver], str]) -> str:
        return await anyio.to_thread.run_sync(hub.call, device, action)

    async def changing_screen(device: str, change: Callable[[PhoneDriver], str]) -> str:
        # An action whose answer compares the screen after it with the screen before it.
        def act(driver: PhoneDriver) -> str:
            before = driver.current()
            return _report(driver, before, change(driver))

        return await on_phone(device, act)

    async def listDevices() -> str:
        """List the Android devices this server can drive, one line each: serial and state."""
        return await anyio.to_thread.run_sync(hub.inventory)

    async def observe(
        device: DeviceArg = "",
        raw: Annotated[bool, Field(description="Return the raw uiautomator XML (after a foreground: line) instead of the list")] = False,
    ) -> str:
        """Show the foreground app/activity and the numbered on-screen elements (index, class, text, #id, state, @tap point)."""

        def look(driver: PhoneDriver) -> str:
            observation = driver.observe()
            # The raw tree is for agents that build their own element list (agentbench-agent's ui_tree).
            return f"foreground: {observation.foreground}\n{observation.xml}" if raw else observation.text

        return await on_phone(device, look)

    async def tapOn(
        index: Annotated[int | None, Field(description="Element index from the latest observe")] = None,
        text: Annotated[str | None, Field(description="Exact visible text or content-desc (case-insensitive as fallback)")] = None,
        id: Annotated[str | None, Field(description="Resource id, short (add_item) or full (pkg:id/add_item)")] = None,
        device: DeviceArg = "",
        x: Annotated[int | None, Field(description="Point to tap, with y, instead of an element (pixels)")] = None,
        y: Annotated[int | None, Field(description="Point to tap, with x, instead of an element (pixels)")] = None,
    ) -> str:
        """Tap one element, named by exactly one of index, text or id, or a point (x, y); answers with the new screen."""
        if x is not None or y is not None:
            return await tap_point(x, y, device, others=(index, text, id))
        target = _one_target("tapOn", index=index, text=text, id=id)
        if target is None:
            raise ToolError("tapOn needs one of index, text or id (or a point x, y); call observe to see the elements")

        def act(driver: PhoneDriver) -> str:
            node, before = _target(driver, *target)
            x, y = node.center
            driver.tap(x, y)
            return _report(driver, before, f"tapped {_describe(node)} at {x},{y}")

        return await on_phone(device, act)

    async def tap_point(x: int | None, y: int | None, device: str, *, others: tuple[object, ...]) -> str:
        if x is None or y is None:
            raise ToolError("tapOn at a point needs both x and y")
        if any(value is not None for value in others):
            raise ToolError("tapOn takes either a point (x, y) or one of index, text, id, not both")
        if x < 0 or y < 0:
            raise ToolError(f"point {x},{y} is off the screen; x and y are pixels from the top left corner")

        def act(driver: PhoneDriver) -> str:
            before = driver.current()
            width, height = before.size
            if x >= width or y >= height:
                raise ToolError(f"point {x},{y} is off the screen, which is {width}x{height}")
            driver.tap(x, y)
            return _report(driver, before, f"tapped {x},{y}")

        return await on_phone(device, act)

    async def inputText(
        text: Annotated[str, Field(description="The text to type")],
        index: Annotated[int | None, Field(description="Field index from the latest observe (tapped first)")] = None,
        id: Annotated[str | None, Field(description="Field resource id (tapped first)")] = None,
        device: DeviceArg = "",
    ) -> str:
        """Type text into the focused field, or into the field given by index or id."""
        if not text:
            raise ToolError("inputText needs a non-empty text; to clear a field use pressButton delete")
        target = _one_target("inputText", index=index, id=id)

        def act(driver: PhoneDriver) -> str:
            if target is None:
                before = driver.current()
                if not any(node.focused and node.is_editable for node in before.screen.nodes):
                    raise ToolError("no text field is focused; pass the index or id of the field to type into")
                driver.type_text(text)
                return _report(driver, before, f"typed {text!r} into the focused field")
            node, before = _target(driver, *target, to_type=True)
            driver.type_text(text, tap_first=node.center)
            return _report(driver, before, f"typed {text!r} into {_describe(node)}")

        return await on_phone(device, act)

    async def swipeOn(
        direction: Annotated[Direction | None, Field(description="Finger direction: up scrolls content down")] = None,
        fromX: int | None = None,
        fromY: int | None = None,
        toX: int | None = None,
        toY: int | None = None,
        device: DeviceArg = "",
    ) -> str:
        """Swipe the screen in a direction (up/down/left/right), or from (fromX, fromY) to (toX, toY)."""
        points = (fromX, fromY, toX, toY)
        if direction is not None and any(p is not None for p in points):
            raise ToolError("swipeOn takes either direction or fromX/fromY/toX/toY, not both")
        if direction is None and any(p is None for p in points):
            raise ToolError("swipeOn needs a direction (up, down, left, right) or all of fromX, fromY, toX, toY")

        def act(driver: PhoneDriver) -> str:
            before = driver.current()
            if direction is None:
                start, end = (fromX, fromY), (toX, toY)
            else:
                width, height = before.size
                middle = (width // 2, height // 2)
                reach = {"up": (0, -height * 3 // 10), "down": (0, height * 3 // 10),
                         "left": (-width * 3 // 10, 0), "right": (width * 3 // 10, 0)}[direction]
                start = (middle[0] - reach[0], middle[1] - reach[1])
                end = (middle[0] + reach[0], middle[1] + reach[1])
            driver.swipe(start, end)  # type: ignore[arg-type]
            return _report(driver, before, f"swiped from {start[0]},{start[1]} to {end[0]},{end[1]}")

        return await on_phone(device, act)

    async def pressButton(
        button: Annotated[Button, Field(description="Which button to press")],
        device: DeviceArg = "",
    ) -> str:
        """Press a hardware or navigation button: back, home, enter, delete, recent, volume_up, volume_down, power, tab, menu."""

        def press(driver: PhoneDriver) -> str:
            driver.key(button)
            return f"pressed {button}"

        return await changing_screen(device, press)

    async def launchApp(
        packageName: Annotated[str, Field(description="Android package name, e.g. com.android.settings")],
        device: DeviceArg = "",
    ) -> str:
        """Start an app's launcher activity by package name."""
        _check_package(packageName)

        def launch(driver: PhoneDriver) -> str:
            result = driver.launch(packageName)
            if result.exit_code != 0 or "No activities found" in result.stdout or "aborted" in result.stdout:
                apps = [p for p in driver.installed_packages() if not p.startswith(("android", "com.android.internal"))]
                raise ToolError(
                    f"app '{packageName}' is not installed or has no launcher activity; installed apps: "
                    f"{', '.join(apps) or 'none'}"
                )
            return f"launched {packageName}"

        return await changing_screen(device, launch)

    async def terminateApp(
        packageName: Annotated[str, Field(description="Android package name to force-stop")],
        device: DeviceArg = "",
    ) -> str:
        """Force-stop an app by package name."""
        _check_package(packageName)

        def stop(driver: PhoneDriver) -> str:
            driver.force_stop(packageName)
            return f"stopped {packageName}"

        return await changing_screen(device, stop)

    async def openLink(
        url: Annotated[str, Field(description="URL or deep link, e.g. https://example.com or myapp://route")],
        device: DeviceArg = "",
    ) -> str:
        """Open a URL or deep link with the app that handles it."""
        if not _URL.fullmatch(url):
            raise ToolError(f"'{url}' is not a URL; expected scheme:rest, e.g. https://example.com")

        def open_url(driver: PhoneDriver) -> str:
            result = driver.open_link(url)
            if result.exit_code != 0 or "Error" in result.stdout:
                detail = " ".join(result.stdout.split())[-300:]
                raise ToolError(f"no app could open '{url}': {detail}")
            return f"opened {url}"

        return await changing_screen(device, open_url)

    async def readLogs(
        tag: Annotated[str, Field(description="Only lines of this log tag, e.g. ActivityManager; empty means every tag")] = "",
        contains: Annotated[str, Field(description="Only lines that contain this text (ignoring case)")] = "",
        lines: Annotated[int, Field(description=f"At most this many of the newest matching lines (1 to {MAX_LOG_LINES})")] = 100,
        device: DeviceArg = "",
    ) -> str:
        """Read the device log (logcat): the newest lines, of one tag or containing a text if given."""
        if tag and not _LOG_TAG.fullmatch(tag):
            raise ToolError(f"'{tag}' is not a log tag; expected letters, digits and . _ : - (e.g. ActivityManager)")
        if not 1 <= lines <= MAX_LOG_LINES:
            raise ToolError(f"lines must be from 1 to {MAX_LOG_LINES}, got {lines}")

        def read(driver: PhoneDriver) -> str:
            result = driver.read_log(tag or None)
            if result.exit_code != 0:
                raise ToolError(f"logcat failed (exit {result.exit_code}): {' '.join(result.stdout.split())[-300:]}")
            return log_excerpt(result.stdout, contains=contains, lines=lines)

        return await on_phone(device, read)

    async def homeScreen(device: DeviceArg = "") -> str:
        """Go to the home screen (launcher)."""

        def go_home(driver: PhoneDriver) -> str:
            driver.key("home")
            return "went to the home screen"

        return await changing_screen(device, go_home)

    for tool in (listDevices, observe, tapOn, inputText, swipeOn, pressButton, launchApp, terminateApp,
                 openLink, homeScreen, readLogs):
        server.register(tool)
    return server
