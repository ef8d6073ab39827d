"""Bytes on one side of the MCP relay -> validated JSON-RPC messages, refusals, and the one canonical framing the hub forwards.

The hub (`run/relay_hub.py`) is the framing authority between the agent and a server: it never
forwards the agent's bytes, only the messages it parsed here, re-encoded by `encode` and logged
first. The rules (docs/relay.md has the table):

* A message is the bytes up to an LF (`b"\\n"`), or up to the end of the stream for the last
  one. LF is the only delimiter: a CR is JSON whitespace, so CRLF framing parses, while a CR
  that joins two messages leaves a line that is not one JSON value, and it is refused whole.
* A line of JSON whitespace only (space, tab, CR) carries nothing and is skipped.
* A line longer than the limit, one that is not strict UTF-8, not exactly one JSON value, a
  value with NaN/Infinity/an out-of-range number, a lone surrogate escape (`"\\ud800"`), or
  nesting deeper than `MAX_DEPTH` is refused as a parse error (`-32700`, or `-32600` for size),
  with a null id: the hub cannot trust any id in it.
* A JSON array (a batch) is refused (`-32600`); MCP has no batches.
* The value must be a JSON-RPC 2.0 object: `"jsonrpc": "2.0"`; a request has a string `method`
  and an `id` that is a string or an integer (not a bool, a float or null: the MCP SDK would
  read such a message as a notification); a notification has a `method` and no `id`; a
  response has an `id` and exactly one of `result`/`error`, and no `method`. `params`, when
  present, is an object. From the agent, a message without an id must be a `notifications/...`.
* A `tools/call` names its tool with a string `name`; `arguments` is absent, null or an object;
  `_meta` is absent or an object whose `progressToken` is a string or an integer; no other
  key is allowed (`-32602`, answered with the request's own id).
* The canonical message keeps only those keys (`jsonrpc`, `id`, `method`, `params` or
  `jsonrpc`, `id`, `result`/`error`) and is encoded as compact, ASCII-only JSON plus one LF,
  so every reader (universal newlines, `errors="replace"`, `str.splitlines`, a Node reader)
  sees exactly one message, the one the hub logged.

Pure: no I/O, no clock. The hub adds what depends on the connection (pending ids, id
rewriting, cancellations).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Literal

#: JSON-RPC error codes the hub answers with.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

#: Deepest nesting of arrays and objects accepted from the agent. The MCP SDK's JSON parser
#: (pydantic's jiter) stops at about 200 levels; a message the server cannot parse must never be
#: logged as a call, so the hub refuses well below that.
MAX_DEPTH = 64
#: The largest message the hub takes from the agent (bytes, without the LF). Tool calls are a
#: few hundred bytes; 4 MiB leaves room for any honest argument.
AGENT_MESSAGE_LIMIT = 4 << 20
#: The largest message the hub takes from a server (screenshots are a few MB of base64).
SERVER_MESSAGE_LIMIT = 64 << 20

_JSON_SPACE = b" \t\r"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_TOOLS_CALL_KEYS = frozenset({"name", "arguments", "_meta"})
_EXCERPT_CHARS = 200

Kind = Literal["request", "notification", "response"]


@dataclass(frozen=True)
class Oversized:
    """A line that grew past the limit: only its size is kept, its bytes were dropped as they came."""

    size: int


@dataclass(frozen=True)
class Message:
    """One valid JSON-RPC message, already reduced to its canonical keys (`body`)."""

    kind: Kind
    body: dict[str, Any]

    @property
    def method(self) -> str | None:
        return self.body.get("method")

    @property
    def id(self) -> Any:
        return self.body.get("id")

    @property
    def params(self) -> dict[str, Any]:
        params = self.body.get("params")
        return params if isinstance(params, dict) else {}


@dataclass(frozen=True)
class Refusal:
    """A line the hub will not forward, and why.

    Attributes:
        code: The JSON-RPC error code of the refusal.
        reason: One sentence, for the log and the error reply.
        reply: Whether the sender gets an error response (requests and unreadable lines do;
            notifications and responses never get one).
        reply_id: The id that error response carries (None: JSON null, the id is not trusted).
        method: The message's method, when it could be read.
        tool: The tool a refused `tools/call` named, when it could be read.
        request_id: The message's id, when it could be read (logged as read, not trusted).
    """

    code: int
    reason: str
    reply: bool = True
    reply_id: Any = None
    method: str | None = None
    tool: str | None = None
    request_id: Any = None


class LineFramer:
    """A byte stream -> its LF-terminated lines, without holding more than `limit` bytes of one line.

    `feed` returns the lines completed by a chunk (bytes, or `Oversized` for a line that passed
    the limit: its bytes are dropped as they arrive, up to its LF); `finish` returns what the
    stream left after its last LF (None when nothing), which is a message too.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 0

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        lines: list[bytes | Oversized] = []
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            self._add(data[start:end])
            lines.append(self._take())
            start = end + 1
        if start < len(data):
            self._add(data[start:])
        return lines

    def finish(self) -> bytes | Oversized | None:
        return self._take() if self._size else None

    def _add(self, piece: bytes) -> None:
        self._size += len(piece)
        if self._size <= self._limit:
            self._parts.append(piece)
        else:
            self._parts.clear()

    def _take(self) -> bytes | Oversized:
        line: bytes | Oversized = Oversized(self._size) if self._size > self._limit else b"".join(self._parts)
        self._parts, self._size = [], 0
        return line


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _too_deep(value: Any, limit: int) -> bool:
    level: list[tuple[Any, int]] = [(value, 1)]
    while level:
        item, depth = level.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        level.extend((child, depth + 1) for child in children)
    return False


def _has_lone_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _is_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def excerpt(line: bytes | Oversized) -> str:
    """The first characters of a refused line, for the log (undecodable bytes as \\x escapes)."""
    if isinstance(line, Oversized):
        return ""
    return line[: _EXCERPT_CHARS * 4].decode("utf-8", "backslashreplace")[:_EXCERPT_CHARS]


def parse_json(line: bytes, *, strict_text: bool) -> Any:
    """One line -> the JSON value it holds.

    Raises:
        ValueError: The line is not strict UTF-8 or not exactly one JSON value (the message
            says which); with `strict_text`, also a lone surrogate escape or nesting deeper
            than MAX_DEPTH.
    """
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"the message is not UTF-8 (byte {exc.start} is {line[exc.start:exc.start + 1]!r})") from None
    try:
        value = json.loads(text, parse_float=_finite, parse_constant=_constant)
    except RecursionError:
        raise ValueError("the message is nested too deeply") from None
    except ValueError as exc:
        raise ValueError(f"the message is not one JSON value ({exc})") from None
    if strict_text:
        if (text.count("[") + text.count("{") > MAX_DEPTH) and _too_deep(value, MAX_DEPTH):
            raise ValueError(f"the message is nested more than {MAX_DEPTH} levels deep")
        if _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(value):
            raise ValueError("the message has a lone UTF-16 surrogate escape")
    return value


def _tools_call_problem(params: dict[str, Any]) -> str | None:
    if not isinstance(params.get("name"), str):
        return "tools/call params need a string `name`"
    if params.get("arguments") is not None and not isinstance(params.get("arguments"), dict):
        return "tools/call `arguments` must be an object"
    meta = params.get("_meta")
    if meta is not None:
        if not isinstance(meta, dict):
            return "tools/call `_meta` must be an object"
        if "progressToken" in meta and not _is_id(meta["progressToken"]):
            return "tools/call `_meta.progressToken` must be a string or an integer"
    extra = sorted(set(params) - _TOOLS_CALL_KEYS)
    if extra:
        return f"tools/call params may carry only name, arguments and _meta, not {', '.join(map(repr, extra[:5]))}"
    return None


def read_message(line: bytes | Oversized, *, limit: int, from_agent: bool) -> Message | Refusal | None:
    """One framed line -> a canonical Message, a Refusal, or None for a line with nothing in it.

    `from_agent` applies the rules that protect the server (depth, surrogates, tools/call
    params); a server's lines are checked only for what the hub must parse to log them.
    """
    if isinstance(line, Oversized) or len(line) > limit:
        size = line.size if isinstance(line, Oversized) else len(line)
        return Refusal(INVALID_REQUEST, f"the message is {size} bytes, more than the relay's limit of {limit}")
    if not line.strip(_JSON_SPACE):
        return None
    try:
        value = parse_json(line, strict_text=from_agent)
    except ValueError as exc:
        return Refusal(PARSE_ERROR, str(exc))
    if isinstance(value, list):
        return Refusal(INVALID_REQUEST, "the message is a JSON-RPC batch; MCP has no batches: send one message per line")
    if not isinstance(value, dict):
        return Refusal(INVALID_REQUEST, "the message is not a JSON-RPC object")
    return validate(value, from_agent=from_agent)


def validate(value: dict[str, Any], *, from_agent: bool) -> Message | Refusal:
    """A parsed JSON object -> its canonical Message, or the Refusal naming the rule it breaks."""
    method = value.get("method")
    has_id = "id" in value
    request_id = value.get("id")
    readable_id = request_id if _is_id(request_id) else None
    # Who gets an error reply: anything that may expect an answer; never a notification (a
    # method without an id) nor something shaped like a response.
    looks_like_response = "method" not in value and ("result" in value or "error" in value)
    replies = not looks_like_response and (has_id or "method" not in value)

    def refuse(code: int, reason: str) -> Refusal:
        tool = None
        if method == "tools/call" and isinstance(value.get("params"), dict) and isinstance(value["params"].get("name"), str):
            tool = value["params"]["name"]
        return Refusal(code, reason, reply=replies, reply_id=readable_id if isinstance(method, str) else None,
                       method=method if isinstance(method, str) else None, tool=tool, request_id=readable_id)

    if value.get("jsonrpc") != "2.0":
        return refuse(INVALID_REQUEST, 'the message is not JSON-RPC 2.0 ("jsonrpc": "2.0" is missing)')
    if "method" in value:
        if not isinstance(method, str):
            return refuse(INVALID_REQUEST, "the message's `method` is not a string")
        if "result" in value or "error" in value:
            return refuse(INVALID_REQUEST, "the message has both a `method` and a `result` or `error`")
        if has_id and not _is_id(request_id):
            return refuse(INVALID_REQUEST, f"a request id must be a string or an integer, not {json.dumps(request_id)[:40]}")
        params = value.get("params")
        if "params" in value and not isinstance(params, dict):
            return refuse(INVALID_REQUEST, "the message's `params` is not an object")
        if from_agent and method == "tools/call" and has_id:
            problem = _tools_call_problem(params if isinstance(params, dict) else {})
            if problem is not None:
                return refuse(INVALID_PARAMS, problem)
        if from_agent and not has_id and not method.startswith("notifications/"):
            # MCP's notifications are all `notifications/...`; a `tools/call` without an id would
            # be a call the server may or may not run, so it is not forwarded at all.
            return refuse(INVALID_REQUEST, f"a `{method[:60]}` message without an id is not an MCP notification")
        body: dict[str, Any] = {"jsonrpc": "2.0"}
        if has_id:
            body["id"] = request_id
        body["method"] = method
        if "params" in value:
            body["params"] = params
        return Message("request" if has_id else "notification", body)
    if not _is_id(request_id):
        return refuse(INVALID_REQUEST, "the message has no `method` and no string or integer `id`")
    if ("result" in value) == ("error" in value):
        return refuse(INVALID_REQUEST, "a response needs exactly one of `result` and `error`")
    key = "result" if "result" in value else "error"
    return Message("response", {"jsonrpc": "2.0", "id": request_id, key: value[key]})


def encode(body: dict[str, Any]) -> bytes:
    """A canonical message -> the one line the hub writes: compact ASCII JSON and an LF."""
    return json.dumps(body, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"


def error_reply(request_id: Any, code: int, reason: str) -> dict[str, Any]:
    """The JSON-RPC error response the hub sends in place of a refused request."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": f"refused by the agentbench relay: {reason}"}}
