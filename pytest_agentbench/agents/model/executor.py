"""One model tool call (seed 004's action space) -> calls of the server's own tools, and a sentence the model can act on.

The model sees the indexed element list and calls `tap(index)`, `type_text(text, index?)`,
`swipe(direction)`, `back()`, `home()`, `open_app(package)` or `task_complete(answer)`. The
executor checks the arguments, turns an index into the element's tap point, performs the action
through `McpDevice` and looks at the screen again. Whatever goes wrong comes back as a sentence
(`index 9 is not on the current screen, which lists indexes 0-6; ...`), never as an exception.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.agents.model.mcp_device import DeviceCallFailed, McpDevice
from pytest_agentbench.agents.model.tool_parse import ParsedCall
from pytest_agentbench.agents.model.ui_tree import TreeError, UiTree

DIRECTIONS = ("up", "down", "left", "right")
_PACKAGE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)+")
COMPLETE_TOOL = "task_complete"


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required, "additionalProperties": False},
        },
    }


_INDEX = {"type": "integer", "description": "Index of an element in the latest element list"}

#: The tools the model is given (OpenAI function definitions).
MODEL_TOOLS: tuple[dict[str, Any], ...] = (
    _function("tap", "Tap the element with this index in the latest element list.", {"index": _INDEX}, ["index"]),
    _function(
        "type_text",
        "Type text into the focused text field, or into the field with this index (tapped first).",
        {"text": {"type": "string", "description": "The text to type"}, "index": _INDEX},
        ["text"],
    ),
    _function(
        "swipe",
        "Swipe the screen: up scrolls the content down, down scrolls it up.",
        {"direction": {"type": "string", "enum": list(DIRECTIONS)}},
        ["direction"],
    ),
    _function("back", "Press the Back button.", {}, []),
    _function("home", "Go to the home screen.", {}, []),
    _function(
        "open_app",
        "Open an app by its Android package name.",
        {"package": {"type": "string", "description": "Package name, e.g. com.android.settings"}},
        ["package"],
    ),
    _function(
        COMPLETE_TOOL,
        "Finish the task. Call it only when the screen shows the task is done; answer is your final reply.",
        {"answer": {"type": "string", "description": "Your final reply, including any lines the task asks for"}},
        ["answer"],
    ),
)
TOOL_NAMES = tuple(tool["function"]["name"] for tool in MODEL_TOOLS)
TOOL_SCHEMAS: Mapping[str, Mapping[str, Any]] = {tool["function"]["name"]: tool["function"]["parameters"] for tool in MODEL_TOOLS}


@dataclass(frozen=True)
class Outcome:
    """What one call did.

    Attributes:
        sentence: What the model is told (the new screen is added by the loop).
        error: The call was refused or failed; the model should try something else.
        after: The screen after the action (the one before it when nothing was done).
        acted: Whether a device action reached the server (only then can the screen change).
        answer: `task_complete`'s answer; None for every other tool.
        coerced: A sentence per argument accepted only after conversion (`index "2"` read as 2),
            for the loop to report.
    """

    sentence: str
    error: bool
    after: UiTree
    acted: bool = False
    answer: str | None = None
    coerced: tuple[str, ...] = ()


class CallRejected(Exception):
    """A call the executor will not perform; the message is the sentence for the model."""


def action_key(call: ParsedCall, before: UiTree | None = None) -> str:
    """What makes two calls the same action (self-undo detection): the tool, its arguments, and what was tapped.

    An index names a different element on each screen, so it is replaced by the element it named
    on `before`: its resource id, class, text, label (first text), description and bounds (not
    its checked state or its summary, which the tap itself changes). "Navigate up" at index 1 is then not the row at index 1 that
    opened the submenu.
    """
    arguments: dict[str, Any] = dict(call.arguments)
    if before is not None and "index" in arguments:
        try:
            element = before.element(_index(arguments["index"]))
        except (CallRejected, TreeError):
            pass
        else:
            node = element.node
            # A row's own text is often empty: its label is its first text (a summary below it,
            # "Wi-Fi off", changes with the very state a self-undo flips, so it is left out).
            label = element.texts[0] if element.texts else element.context
            arguments["index"] = {"resource_id": node.resource_id, "class": node.class_name, "text": node.text,
                                  "label": label, "content_desc": node.content_desc, "bounds": list(node.bounds)}
    return call.name + json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def coercion(name: str, value: Any) -> str | None:
    """The sentence for an index that arrived as something other than an integer, or None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return None
    try:
        number = _index(value)
    except CallRejected:
        return None
    kind = "a string" if isinstance(value, str) else type(value).__name__
    return f"{name} {json.dumps(value)} ({kind}) was read as the integer {number}"


def _check_arguments(call: ParsedCall) -> None:
    schema = TOOL_SCHEMAS[call.name]
    allowed = set(schema["properties"])
    unknown = sorted(set(call.arguments) - allowed)
    takes = ", ".join(schema["properties"]) or "no arguments"
    if unknown:
        raise CallRejected(f"{call.name} got unknown argument {', '.join(map(repr, unknown))}; {call.name} takes {takes}")
    missing = [name for name in schema["required"] if call.arguments.get(name) in (None, "")]
    if missing:
        raise CallRejected(f"{call.name} needs {', '.join(missing)}; {call.name} takes {takes}")


def _index(value: Any) -> int:
    # Recovered calls often carry numbers as text ("3"); a whole number in any spelling is an index.
    if isinstance(value, bool):
        raise CallRejected(f"index must be a whole number from the element list, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise CallRejected(f"index must be a whole number from the element list, got {value!r}")


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise CallRejected(f"{name} must be text, got {value!r}")
    return value


class Executor:
    """Runs the model's calls on one device, one at a time."""

    def __init__(self, device: McpDevice) -> None:
        self.device = device

    async def execute(self, call: ParsedCall, before: UiTree) -> Outcome:
        """Perform one call against the screen the model saw.

        Args:
            call: The model's call (native or recovered).
            before: The screen the model's indexes refer to.

        Returns:
            The outcome; errors are outcomes with a sentence, not exceptions.

        Raises:
            ServerGone: The MCP server stopped answering (the loop ends the episode).
        """
        if call.name not in TOOL_NAMES:
            return Outcome(f"there is no tool named {call.name!r}; the tools are {', '.join(TOOL_NAMES)}", True, before)
        try:
            _check_arguments(call)
            if call.name == COMPLETE_TOOL:
                answer = _text("answer", call.arguments["answer"])
                return Outcome("task_complete: the episode ends with your answer", False, before, answer=answer)
            coerced = tuple(note for note in [coercion("index", call.arguments.get("index"))] if note)
            done = await self._act(call, before)
        except (CallRejected, TreeError) as exc:
            return Outcome(str(exc), True, before)
        except DeviceCallFailed as exc:
            # The action reached the server: the screen may have moved all the same, so look again.
            return Outcome(str(exc), True, await self._look(before), acted=True, coerced=coerced)
        return Outcome(done, False, await self._look(before), acted=True, coerced=coerced)

    async def _look(self, before: UiTree) -> UiTree:
        try:
            return await self.device.observe()
        except DeviceCallFailed:
            # The loop tells the model the screen is unknown only if it matters; keep the old one.
            return before

    async def _act(self, call: ParsedCall, before: UiTree) -> str:
        arguments = call.arguments
        if call.name == "tap":
            index = _index(arguments["index"])
            x, y = before.tap_point(index)
            await self.device.call("tap", x=x, y=y)
            return f"tapped {before.describe(index)} at {x},{y}"
        if call.name == "type_text":
            text = _text("text", arguments["text"])
            if arguments.get("index") is not None:
                index = _index(arguments["index"])
                x, y = before.tap_point(index)
                await self.device.call("tap", x=x, y=y)
                await self.device.call("type", text=text)
                return f"tapped {before.describe(index)} and typed {text!r}"
            await self.device.call("type", text=text)
            return f"typed {text!r}"
        if call.name == "swipe":
            direction = _text("direction", arguments["direction"]).strip().lower()
            if direction not in DIRECTIONS:
                raise CallRejected(f"direction must be one of {', '.join(DIRECTIONS)}, got {arguments['direction']!r}")
            await self.device.call("swipe", direction=direction)
            return f"swiped {direction}"
        if call.name == "back":
            await self.device.call("back")
            return "pressed Back"
        if call.name == "home":
            await self.device.call("home")
            return "went to the home screen"
        package = _text("package", arguments["package"]).strip()
        if not _PACKAGE.fullmatch(package):
            raise CallRejected(f"{package!r} is not a package name; expected something like com.android.settings")
        await self.device.call("open_app", package=package)
        return f"opened {package}"
