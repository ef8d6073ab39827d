"""A model's reply (native tool_calls, or a call written into its text) -> tool calls, each flagged with how it was recovered.

Never raises on model text: what cannot be read as a call stays content. Every call that did not
arrive as a well-formed native `tool_calls` entry carries `recovered_from`, so the agent reports
it: an agent that silently repairs its model's output hides regressions in that model (seed 004).

Recovered shapes (`recovered_from`):

* `glm45`: GLM-4.5/4.7 `<tool_call>NAME\\n<arg_key>K</arg_key>\\n<arg_value>V</arg_value></tool_call>`,
  also without the closing tag or the newline after the name;
* `hermes`: Hermes/Qwen `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (also unclosed);
* `unterminated-json`: a call object cut off before its closing braces, such as
  `[tap]\\n{"tool": "tap", "parameters": {"index": 1}`;
* `fenced-json`: a call object inside a ```json fence;
* `json-in-text`: a call object as the content, or with prose before or after it;
* `arguments-repaired`, `arguments-double-encoded`: a native call whose `arguments` string was
  cut off, or was a JSON string holding the JSON object.

A call inside `<tool_call>` markup is a call whatever tool it names (the executor answers an
unknown one "no such tool", as it answers a native one); a bare JSON object in prose is taken
for a call only when it names a known tool. What was recovered is cut out of the content, so no
stray markup goes back to the model. `split_thinking` turns `<think>` blocks left in the content
(no reasoning parser) into reasoning: an unclosed one makes the rest of the reply reasoning.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
_GLM_CALL = re.compile(r"<tool_call>\s*(?P<body>.*?)(?:</tool_call>|\Z)", re.DOTALL)
_GLM_ARG = re.compile(r"<arg_key>(?P<key>.*?)</arg_key>\s*<arg_value>(?P<value>.*?)(?:</arg_value>|\Z)", re.DOTALL)
_FENCE = re.compile(r"```(?:json|JSON|tool_call)?\s*\n(?P<body>.*?)(?:```|\Z)", re.DOTALL)
_BRACKET_NAME = re.compile(r"\[(?P<name>[A-Za-z_][\w-]*)\]\s*$")
# Keys a call object names its tool and its arguments with, across the shapes models emit.
_NAME_KEYS = ("name", "tool", "tool_name", "function", "action")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input", "params")
_EXCERPT_CHARS = 200


@dataclass(frozen=True)
class ParsedCall:
    """One tool call the model made.

    Attributes:
        name: The tool name.
        arguments: The decoded arguments (untrusted: the executor checks them).
        recovered_from: None for a well-formed native call, else how it was recovered.
        raw: An excerpt of the text the call was read from (for the report).
        id: The native call id, when the API gave one.
    """

    name: str
    arguments: dict[str, Any]
    recovered_from: str | None = None
    raw: str = ""
    id: str | None = None


@dataclass(frozen=True)
class ParsedReply:
    """What a reply said: its calls, the prose around them, and any call that could not be decoded."""

    calls: tuple[ParsedCall, ...] = ()
    content: str = ""
    problems: tuple[str, ...] = field(default_factory=tuple)
    bad_calls: tuple[BadCall, ...] = ()


def _excerpt(text: str) -> str:
    flat = text.strip()
    return flat if len(flat) <= _EXCERPT_CHARS else flat[: _EXCERPT_CHARS - 1] + "…"


@dataclass(frozen=True)
class BadCall:
    """A native tool call that could not be decoded: its id (for the tool message), its name and the sentence for the model."""

    id: str | None
    name: str
    sentence: str
    raw: str = ""


def split_thinking(text: str) -> tuple[str, str, bool]:
    """Content that may hold `<think>` blocks -> (the thinking text, the visible rest, whether a `<think>` never closed).

    What vLLM without a reasoning parser, or llama.cpp with `--reasoning-format none`, leave in
    `content`. A `</think>` without its opening tag (the template opened it) ends the thinking.
    """
    text = text or ""
    thoughts: list[str] = []
    if "</think>" in text and "<think>" not in text.split("</think>", 1)[0]:
        before, text = text.split("</think>", 1)
        thoughts.append(before)
    visible: list[str] = []
    unclosed = False
    position = 0
    while True:
        opened = text.find("<think>", position)
        if opened < 0:
            visible.append(text[position:])
            break
        visible.append(text[position:opened])
        closed = text.find("</think>", opened)
        if closed < 0:
            thoughts.append(text[opened + len("<think>"):])
            unclosed = True
            break
        thoughts.append(text[opened + len("<think>"):closed])
        position = closed + len("</think>")
    thinking = "\n\n".join(part.strip() for part in thoughts if part.strip())
    return thinking, "".join(visible).replace("</think>", ""), unclosed


def strip_reasoning(text: str) -> str:
    """Drop `<think>...</think>` blocks; an unclosed `<think>` makes the rest reasoning too."""
    text = _THINK_BLOCK.sub("", text)
    opened = text.find("<think>")
    if opened >= 0:
        text = text[:opened]
    return text.replace("</think>", "")


def complete_json(text: str) -> str | None:
    """Close what a cut-off JSON object left open (a string, arrays, objects), or None if it is not one.

    Args:
        text: Text starting with `{`.

    Returns:
        The text with the missing closers appended, or None when it does not start an object or
        has a closer that does not match.
    """
    if not text.startswith("{"):
        return None
    closers: list[str] = []
    in_string = False
    escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in "{[":
            closers.append("}" if char == "{" else "]")
        elif char in "}]":
            if not closers or closers.pop() != char:
                return None
            if not closers:
                return None  # balanced already: nothing to complete
    completed = text.rstrip()
    if in_string:
        completed += '"'
    # A dangling separator ("index": 1,) would still not parse.
    completed = re.sub(r"[,:]\s*$", "", completed)
    return completed + "".join(reversed(closers))


def _decode_object(text: str) -> tuple[dict[str, Any] | None, str, bool]:
    """The first JSON object at the start of `text`: (object, text after it, completed?)."""
    decoder = json.JSONDecoder()
    try:
        value, end = decoder.raw_decode(text)
    except json.JSONDecodeError:
        completed = complete_json(text.strip())
        if completed is None:
            return None, text, False
        try:
            value = json.loads(completed)
        except json.JSONDecodeError:
            return None, text, False
        return (value, "", True) if isinstance(value, dict) else (None, text, False)
    return (value, text[end:], False) if isinstance(value, dict) else (None, text, False)


def _decode_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Native `arguments` (a JSON string, or already an object) -> (arguments, how repaired)."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if not isinstance(raw, str):
        return None, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value, _, completed = _decode_object(raw.strip())
        if value is not None:
            return value, "arguments-repaired"
        return None, None
    if isinstance(value, str):
        # Some servers send the arguments JSON encoded twice.
        inner, _ = _decode_arguments(value)
        return (inner, "arguments-double-encoded") if inner is not None else (None, None)
    return (value, None) if isinstance(value, dict) else (None, None)


def _call_from_object(obj: Mapping[str, Any], known: Collection[str], hint: str | None) -> tuple[str, dict[str, Any]] | None:
    """A decoded JSON object -> (name, arguments) when it names a known tool."""
    if isinstance(obj.get("function"), Mapping):
        obj = obj["function"]
    name = next((obj[key] for key in _NAME_KEYS if isinstance(obj.get(key), str)), None) or hint
    if not name or name not in known:
        return None
    arguments: dict[str, Any] | None = None
    for key in _ARGUMENT_KEYS:
        if key in obj:
            arguments, _ = _decode_arguments(obj[key])
            break
    if arguments is None:
        # A flat object: {"name": "tap", "index": 1}.
        arguments = {key: value for key, value in obj.items() if key not in _NAME_KEYS and key not in _ARGUMENT_KEYS}
    return name, arguments


def _typed_value(raw: str, schema: Mapping[str, Any] | None) -> Any:
    # As vLLM's GLM parser does: a value declared a string stays raw; others are JSON, then Python literals.
    value = raw.strip()
    kind = (schema or {}).get("type")
    if kind == "string":
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return value


def _glm_call(body: str, schemas: Mapping[str, Mapping[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    first_arg = body.find("<arg_key>")
    name = (body if first_arg < 0 else body[:first_arg]).strip()
    if not name or not re.fullmatch(r"[A-Za-z_][\w.-]*", name):
        return None
    properties = (schemas.get(name) or {}).get("properties") or {}
    arguments = {
        arg.group("key").strip(): _typed_value(arg.group("value"), properties.get(arg.group("key").strip()))
        for arg in _GLM_ARG.finditer(body)
    }
    return name, arguments


def _hermes_call(body: str) -> tuple[str, dict[str, Any]] | None:
    obj, _, _ = _decode_object(body)
    if obj is None:
        return None
    if isinstance(obj.get("function"), Mapping):
        obj = obj["function"]
    name = next((obj[key] for key in _NAME_KEYS if isinstance(obj.get(key), str)), None)
    if not name:
        return None
    found = _call_from_object(obj, (name,), None)
    return found


def _tagged_calls(text: str, schemas: Mapping[str, Mapping[str, Any]]) -> tuple[list[ParsedCall], str]:
    """Calls inside `<tool_call>` markup (GLM or Hermes bodies), whatever tool they name; the content without them."""
    calls: list[ParsedCall] = []
    kept: list[str] = []
    position = 0
    for match in _GLM_CALL.finditer(text):
        body = match.group("body").strip()
        if body.startswith("{"):
            found, kind = _hermes_call(body), "hermes"
        else:
            found, kind = _glm_call(body, schemas), "glm45"
        if found is None:
            continue
        calls.append(ParsedCall(found[0], found[1], kind, _excerpt(match.group(0))))
        kept.append(text[position : match.start()])
        position = match.end()
    kept.append(text[position:])
    return calls, ("".join(kept) if calls else text)


def _json_calls(text: str, known: Collection[str]) -> tuple[list[ParsedCall], str]:
    """Call objects anywhere in prose or fences: the first known call found wins."""
    for fence in _FENCE.finditer(text):
        obj, _, completed = _decode_object(fence.group("body").strip())
        found = _call_from_object(obj, known, None) if obj is not None else None
        if found is not None:
            kind = "unterminated-json" if completed else "fenced-json"
            return [ParsedCall(found[0], found[1], kind, _excerpt(fence.group(0)))], text[: fence.start()]
    position = text.find("{")
    while position >= 0:
        bracket = _BRACKET_NAME.search(text[:position])
        hint = bracket.group("name") if bracket else None
        obj, rest, completed = _decode_object(text[position:])
        found = _call_from_object(obj, known, hint) if obj is not None else None
        if found is not None:
            start = bracket.start() if bracket else position
            kind = "unterminated-json" if completed else "json-in-text"
            raw = text[start : len(text) - len(rest)]
            return [ParsedCall(found[0], found[1], kind, _excerpt(raw))], text[:start]
        position = text.find("{", position + 1)
    return [], text


def recover_from_text(text: str, known: Collection[str], schemas: Mapping[str, Mapping[str, Any]] | None = None) -> ParsedReply:
    """Find the tool calls a model wrote into its text instead of the API's `tool_calls`.

    Args:
        text: The reply's content.
        known: The tool names the model was given; a bare JSON object naming another tool is not a
            call (inside `<tool_call>` markup it is, and the executor refuses it).
        schemas: Tool name -> JSON Schema of its arguments (decides GLM value types).

    Returns:
        The calls found (each flagged with `recovered_from`) and the prose before them.
    """
    try:
        visible = strip_reasoning(text or "")
        calls, content = _tagged_calls(visible, schemas or {})
        if not calls:
            calls, content = _json_calls(visible, known)
        return ParsedReply(tuple(calls), content.strip())
    except Exception as exc:  # noqa: BLE001 - model text must never crash the agent
        return ParsedReply((), (text or "").strip(), (f"the reply could not be searched for tool calls: {exc!r}",))


def parse_reply(
    content: str | None,
    tool_calls: list[Mapping[str, Any]] | None,
    known: Collection[str],
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
) -> ParsedReply:
    """A chat completion message -> its tool calls: the native ones, else the ones recovered from its text.

    Args:
        content: `message.content` (may be None).
        tool_calls: `message.tool_calls` as dicts (`{id, type, function: {name, arguments}}`).
        known: The tool names the model was given.
        schemas: Tool name -> argument schema.

    Returns:
        The calls, the prose, and a sentence per native call that could not be decoded (also as
        `bad_calls`, with the call's id so the model is answered on that call). Text is searched
        for calls only when no native entry came.
    """
    calls: list[ParsedCall] = []
    problems: list[str] = []
    bad: list[BadCall] = []
    for entry in tool_calls or []:
        try:
            if entry.get("type", "function") != "function":
                continue
            function = entry.get("function") or {}
            name = str(function.get("name") or "")
            arguments, repaired = _decode_arguments(function.get("arguments"))
            if arguments is None:
                sentence = f"the arguments of your {name or 'unnamed'} call are not a JSON object: {_excerpt(str(function.get('arguments')))}"
                problems.append(sentence)
                bad.append(BadCall(entry.get("id"), name or "unknown", sentence, _excerpt(str(function.get("arguments")))))
                continue
            raw = _excerpt(str(function.get("arguments") or "")) if repaired else ""
            calls.append(ParsedCall(name, arguments, repaired, raw, entry.get("id")))
        except Exception as exc:  # noqa: BLE001 - a malformed entry is the model's problem, not a crash
            sentence = f"a tool call could not be read: {exc!r}"
            problems.append(sentence)
            bad.append(BadCall(entry.get("id") if isinstance(entry, Mapping) else None, "unknown", sentence))
    text = content or ""
    if calls or bad:
        return ParsedReply(tuple(calls), strip_reasoning(text).strip(), tuple(problems), tuple(bad))
    recovered = recover_from_text(text, known, schemas)
    return ParsedReply(recovered.calls, recovered.content, tuple(problems) + recovered.problems)
