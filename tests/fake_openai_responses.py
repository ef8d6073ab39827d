"""Scripted turns into a fake OpenAI Responses API (SSE streaming) for driving the real Codex CLI.

Codex CLI 0.171.0 (`codex exec`) with a `model_providers` entry whose `wire_api = "responses"`
sends `POST {base_url}/responses` with `stream: true` and `Authorization: Bearer <env_key>`.
Requests that offer tools are the agent loop: each one is answered by the next turn of the
script. A turn is a function of the request (so it can look at the tools offered and the tool
outputs received) returning a `Reply`, an `HttpError`, a `StreamFailure` (HTTP 200, then a
`response.failed` event), or `HANG` (the request is never answered until the server stops). A
`Reply` holds output items: text, function calls (a namespaced one for an MCP tool, whose
namespace Codex names `mcp__SERVER`), custom tool calls (code mode's JavaScript `exec`,
`apply_patch`) and client-run tool searches (how a model loads the MCP tools Codex defers). With
`stall_after=N` it sends its first N events and then holds the stream open: a hang in the middle
of a streamed answer. Requests without tools are side requests: logged and answered with a
short text. With `api_key` set, any request that does not carry exactly that bearer token is
answered 401, as the real API would.

Usage (tests/codexcli.py writes the config.toml that points Codex here)::

    script = [
        lambda req: reply(tool_search("device tools")),
        lambda req: reply(function_call(req.tool_named("observe"), {"device": "emulator-5554"})),
        lambda req: reply(text("EXPECTED_COUNT: 3")),
    ]
    with FakeResponses(script, api_key="sk-test") as api:
        config = codex_config(base_url=api.base_url, mcp_command=..., mcp_args=[...])
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Union

from scriptedfake import ScriptedFake

DEFAULT_MODEL = "gpt-5.5"
DEFAULT_USAGE = {"input_tokens": 1000, "cached_tokens": 0, "output_tokens": 20, "reasoning_tokens": 0}


@dataclass(frozen=True)
class TextItem:
    """An assistant `message` output item with one `output_text` part."""

    text: str
    id: str = field(default_factory=lambda: _new_id("msg"))


@dataclass(frozen=True)
class FunctionCall:
    """A `function_call` output item; `arguments` (a dict, or a raw string sent as is) is streamed in deltas.

    A tool offered inside a `namespace` tool (Codex offers each MCP server's tools as namespace
    `mcp__SERVER`) is called with that `namespace` and the tool's own name.
    """

    name: str
    arguments: dict | str
    namespace: str | None = None
    call_id: str = field(default_factory=lambda: _new_id("call"))
    id: str = field(default_factory=lambda: _new_id("fc"))

    @property
    def encoded_arguments(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class CustomToolCall:
    """A `custom_tool_call` output item: freeform `input` for a `custom` tool (Codex's code-mode `exec`, `apply_patch`)."""

    name: str
    input: str
    call_id: str = field(default_factory=lambda: _new_id("call"))
    id: str = field(default_factory=lambda: _new_id("ctc"))


@dataclass(frozen=True)
class ToolSearchCall:
    """A `tool_search_call` output item run by the client (Codex loads deferred tools, such as MCP tools, this way)."""

    query: str
    limit: int | None = None
    call_id: str = field(default_factory=lambda: _new_id("call"))
    id: str = field(default_factory=lambda: _new_id("ts"))


Item = Union[TextItem, FunctionCall, CustomToolCall, ToolSearchCall]


def _new_id(prefix: str) -> str:
    return f"{prefix}_fake_{uuid.uuid4().hex[:20]}"


@dataclass(frozen=True)
class Reply:
    """One response: its output items, usage numbers, and where (if anywhere) the stream stalls.

    Attributes:
        items: The output items, in order.
        usage: input/cached/output/reasoning token counts (`response.completed`'s `usage`).
        stall_after: Send only this many SSE events, then hold the stream open until the fake stops.
    """

    items: tuple[Item, ...]
    usage: dict = field(default_factory=lambda: dict(DEFAULT_USAGE))
    stall_after: int | None = None


@dataclass(frozen=True)
class HttpError:
    """Answer the request with this HTTP status and an OpenAI-style error body."""

    status: int
    message: str = "The server had an error while processing your request (fake)."
    type: str = "server_error"
    code: str | None = None


@dataclass(frozen=True)
class StreamFailure:
    """HTTP 200, `response.created`, then `response.failed` carrying this error (no `response.completed`)."""

    message: str = "The model failed to respond (fake)."
    code: str = "server_error"


class _Hang:
    """Never answer: the request blocks until the server stops."""

    def __repr__(self) -> str:
        return "HANG"


HANG = _Hang()
Outcome = Union[Reply, HttpError, StreamFailure, _Hang]


def text(value: str) -> TextItem:
    """An assistant message item."""
    return TextItem(value)


def function_call(name: str, arguments: dict | str | None = None) -> FunctionCall:
    """A function call item calling `name`: a tool name as offered, or `NAMESPACE/NAME` for a tool inside a namespace."""
    namespace, _, short = name.rpartition("/")
    return FunctionCall(name=short, arguments=arguments if isinstance(arguments, str) else dict(arguments or {}), namespace=namespace or None)


def custom_tool_call(name: str, input: str) -> CustomToolCall:
    """A freeform call of a `custom` tool (`exec` in Codex's code mode takes JavaScript)."""
    return CustomToolCall(name=name, input=input)


def tool_search(query: str, limit: int | None = None) -> ToolSearchCall:
    """A client-run tool search (the model loading deferred tools whose metadata matches `query`)."""
    return ToolSearchCall(query=query, limit=limit)


def reply(*items: Item, usage: dict | None = None, stall_after: int | None = None) -> Reply:
    """A response made of `items`, with `usage` merged over the default numbers."""
    return Reply(items=tuple(items), usage={**DEFAULT_USAGE, **(usage or {})}, stall_after=stall_after)


@dataclass(frozen=True)
class ToolOutput:
    """A call's output the CLI sent back: `kind` is function, custom or tool_search; `name` is the call's tool."""

    kind: str
    call_id: str
    name: str
    output: str


_OUTPUT_KINDS = {"function_call_output": "function", "custom_tool_call_output": "custom", "tool_search_output": "tool_search"}
_CALL_KINDS = ("function_call", "custom_tool_call", "tool_search_call")


@dataclass
class ResponsesRequest:
    """One request the fake received, with helpers for scripts."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    turn: int | None = None  # index into the script; None for side requests and other paths
    outcome: str = ""
    #: The call ids of the fake's previous reply: `tool_outputs()` answers those.
    answering: tuple[str, ...] = ()

    @property
    def streaming(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def input_items(self) -> list[dict]:
        items = self.body.get("input")
        return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []

    @property
    def tool_entries(self) -> list[dict]:
        """Every tool entry the model can see: `tools`, `additional_tools` input items, and tools loaded by a tool search."""
        entries = [tool for tool in self.body.get("tools") or [] if isinstance(tool, dict)]
        for item in self.input_items:
            if item.get("type") in ("additional_tools", "tool_search_output"):
                entries.extend(tool for tool in item.get("tools") or [] if isinstance(tool, dict))
        return entries

    @property
    def tools(self) -> list[str]:
        """Names of the tools the model can call (a namespace's tools as `NAMESPACE/NAME`, as `function_call` takes them)."""
        return [name for tool in self.tool_entries for name in _tool_names(tool)]

    @property
    def tool_types(self) -> list[str]:
        """The `type` of every top-level tool entry (`function`, `custom`, `namespace`, `tool_search`, `web_search`, ...)."""
        return [str(tool.get("type")) for tool in self.tool_entries]

    @property
    def agent_loop(self) -> bool:
        """Whether the request offers the model any tool (the agent loop) rather than being a side request."""
        return bool(self.tool_entries)

    def tool_named(self, short_name: str) -> str:
        """The full name of the offered tool whose name is `short_name` or ends in `/short_name` or `__short_name`."""
        for name in self.tools:
            if name == short_name or name.endswith((f"/{short_name}", f"__{short_name}")):
                return name
        raise LookupError(f"no tool named {short_name!r} offered; offered: {self.tools}")

    def tool_outputs(self) -> list[ToolOutput]:
        """The outputs answering the fake's previous reply's calls (all call outputs when that is unknown), in order."""
        names: dict[str, str] = {}
        for item in self.input_items:
            if item.get("type") in _CALL_KINDS:
                names[str(item.get("call_id", ""))] = str(item.get("name") or item.get("type"))
        found = []
        for item in self.input_items:
            kind = _OUTPUT_KINDS.get(str(item.get("type")))
            call_id = str(item.get("call_id", ""))
            if kind is None or (self.answering and call_id not in self.answering):
                continue
            output = ", ".join(_tool_names_all(item.get("tools"))) if kind == "tool_search" else _flatten(item.get("output"))
            found.append(ToolOutput(kind, call_id, names.get(call_id, ""), output))
        return found

    def user_texts(self) -> list[str]:
        """The text of every `user`-role message in the input, in order."""
        return [_flatten(item.get("content")) for item in self.input_items if item.get("type", "message") == "message" and item.get("role") == "user"]


def _tool_names(tool: dict) -> list[str]:
    if tool.get("type") == "namespace":
        prefix = str(tool.get("name", ""))
        return [f"{prefix}/{name}" for inner in tool.get("tools") or [] if isinstance(inner, dict) for name in _tool_names(inner)]
    name = tool.get("name")
    return [str(name)] if name else []


def _tool_names_all(tools: Any) -> list[str]:
    return [name for tool in tools or [] if isinstance(tool, dict) for name in _tool_names(tool)]


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict) and "text" in part)
    if isinstance(content, dict):
        return _flatten(content.get("content"))
    return ""


Turn = Callable[[ResponsesRequest], Outcome]


def _sse(data: dict) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _chunks(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def _response(response_id: str, model: str, status: str, output: list[dict], usage: dict | None) -> dict:
    body: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": output,
        "error": None,
        "incomplete_details": None,
        "usage": None,
    }
    if usage is not None:
        body["usage"] = {
            "input_tokens": usage["input_tokens"],
            "input_tokens_details": {"cached_tokens": usage.get("cached_tokens", 0)},
            "output_tokens": usage["output_tokens"],
            "output_tokens_details": {"reasoning_tokens": usage.get("reasoning_tokens", 0)},
            "total_tokens": usage["input_tokens"] + usage["output_tokens"],
        }
    return body


def _done_item(item: Item) -> dict:
    if isinstance(item, TextItem):
        return {
            "type": "message",
            "id": item.id,
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": item.text, "annotations": []}],
        }
    if isinstance(item, FunctionCall):
        done = {
            "type": "function_call",
            "id": item.id,
            "call_id": item.call_id,
            "name": item.name,
            "arguments": item.encoded_arguments,
            "status": "completed",
        }
        if item.namespace is not None:
            done["namespace"] = item.namespace
        return done
    if isinstance(item, CustomToolCall):
        return {"type": "custom_tool_call", "id": item.id, "call_id": item.call_id, "name": item.name, "input": item.input, "status": "completed"}
    arguments: dict[str, Any] = {"query": item.query}
    if item.limit is not None:
        arguments["limit"] = item.limit
    return {"type": "tool_search_call", "id": item.id, "call_id": item.call_id, "execution": "client", "arguments": arguments, "status": "completed"}


def _item_events(index: int, item: Item) -> list[dict]:
    """The events that stream one output item, from `output_item.added` to `output_item.done`."""
    done = _done_item(item)
    if isinstance(item, TextItem):
        common = {"item_id": item.id, "output_index": index, "content_index": 0}
        events = [
            {"type": "response.output_item.added", "output_index": index, "item": {**done, "status": "in_progress", "content": []}},
            {"type": "response.content_part.added", **common, "part": {"type": "output_text", "text": "", "annotations": []}},
        ]
        events += [{"type": "response.output_text.delta", **common, "delta": chunk} for chunk in _chunks(item.text, 40)]
        events += [
            {"type": "response.output_text.done", **common, "text": item.text},
            {"type": "response.content_part.done", **common, "part": done["content"][0]},
        ]
    elif isinstance(item, FunctionCall):
        common = {"item_id": item.id, "output_index": index}
        events = [{"type": "response.output_item.added", "output_index": index, "item": {**done, "arguments": "", "status": "in_progress"}}]
        events += [{"type": "response.function_call_arguments.delta", **common, "delta": chunk} for chunk in _chunks(item.encoded_arguments, 16)]
        events.append({"type": "response.function_call_arguments.done", **common, "arguments": item.encoded_arguments})
    elif isinstance(item, CustomToolCall):
        common = {"item_id": item.id, "output_index": index}
        events = [{"type": "response.output_item.added", "output_index": index, "item": {**done, "input": "", "status": "in_progress"}}]
        events += [{"type": "response.custom_tool_call_input.delta", **common, "delta": chunk} for chunk in _chunks(item.input, 40)]
        events.append({"type": "response.custom_tool_call_input.done", **common, "input": item.input})
    else:
        events = [{"type": "response.output_item.added", "output_index": index, "item": {**done, "status": "in_progress"}}]
    events.append({"type": "response.output_item.done", "output_index": index, "item": done})
    return events


def stream_events(response_reply: Reply, *, model: str, response_id: str) -> list[bytes]:
    """The SSE events of one response, in the order the real API sends them."""
    events = [
        {"type": "response.created", "response": _response(response_id, model, "in_progress", [], None)},
        {"type": "response.in_progress", "response": _response(response_id, model, "in_progress", [], None)},
    ]
    for index, item in enumerate(response_reply.items):
        events += _item_events(index, item)
    output = [_done_item(item) for item in response_reply.items]
    events.append({"type": "response.completed", "response": _response(response_id, model, "completed", output, response_reply.usage)})
    return [_sse({**event, "sequence_number": number}) for number, event in enumerate(events)]


def failure_events(failure: StreamFailure, *, model: str, response_id: str) -> list[bytes]:
    """`response.created` then `response.failed` with the error (what the API streams when generation fails)."""
    failed = _response(response_id, model, "failed", [], None)
    failed["error"] = {"code": failure.code, "message": failure.message}
    return [
        _sse({"type": "response.created", "response": _response(response_id, model, "in_progress", [], None)}),
        _sse({"type": "response.failed", "response": failed}),
    ]


def response_json(response_reply: Reply, *, model: str, response_id: str) -> dict:
    """The non-streaming JSON body of one response."""
    return _response(response_id, model, "completed", [_done_item(item) for item in response_reply.items], response_reply.usage)


class FakeResponses(ScriptedFake[ResponsesRequest]):
    """A scripted Responses API on a free 127.0.0.1 port, served from a background thread.

    Args:
        script: One turn per agent-loop request, in order.
        after_script: Answer for agent-loop requests once the script is used up.
        model: The model name reported in responses.
        side_reply: Text answered to side requests (no tools offered).
        api_key: When set, the only bearer token accepted; any other request gets a 401.
    """

    thread_name = "fake-responses"

    def __init__(
        self,
        script: Sequence[Turn],
        *,
        after_script: Turn | None = None,
        model: str = DEFAULT_MODEL,
        side_reply: str = "Fake session",
        api_key: str | None = None,
    ) -> None:
        super().__init__(script, after_script or (lambda _request: reply(text("Done."))))
        self.model = model
        self.side_reply = side_reply
        self.api_key = api_key
        self._last_calls: tuple[str, ...] = ()

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1` (Codex appends `/responses`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    def script_failed(self, turn: int, error: Exception) -> Outcome:
        return HttpError(500, f"the fake's script failed at turn {turn}: {error}")

    def next_outcome(self, request: ResponsesRequest) -> Outcome:
        """The scripted answer, remembering the calls it makes so the next request's `tool_outputs()` finds their answers."""
        with self.lock:
            request.answering = self._last_calls
        outcome = super().next_outcome(request)
        if isinstance(outcome, Reply):
            with self.lock:
                self._last_calls = tuple(item.call_id for item in outcome.items if not isinstance(item, TextItem))
        return outcome

    def authorized(self, headers: dict[str, str]) -> bool:
        if self.api_key is None:
            return True
        lowered = {key.lower(): value for key, value in headers.items()}
        return lowered.get("authorization") == f"Bearer {self.api_key}"


def _error_body(message: str, error_type: str, code: str | None) -> dict:
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def _make_handler(fake: FakeResponses) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
            pass  # requests are recorded in fake.requests instead of stderr

        def _send_json(self, status: int, body: dict) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("x-request-id", f"req_fake_{uuid.uuid4().hex[:16]}")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _unauthorized(self, request: ResponsesRequest) -> bool:
            if fake.authorized(request.headers):
                return False
            request.outcome = "401"
            self._send_json(401, _error_body("Incorrect API key provided (fake).", "invalid_request_error", "invalid_api_key"))
            return True

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            request = ResponsesRequest("GET", self.path, dict(self.headers), {})
            fake.record(request)
            if self._unauthorized(request):
                return
            request.outcome = "404"
            self._send_json(404, _error_body(f"no route {self.path} (fake)", "invalid_request_error", "not_found"))

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_unparseable": raw.decode("utf-8", "replace")}
            request = ResponsesRequest("POST", self.path, dict(self.headers), body)
            fake.record(request)
            if self._unauthorized(request):
                return
            if not self.path.split("?", 1)[0].rstrip("/").endswith("/responses"):
                request.outcome = "404"
                self._send_json(404, _error_body(f"no route {self.path} (fake)", "invalid_request_error", "not_found"))
                return
            if request.agent_loop:
                outcome = fake.next_outcome(request)
            else:
                outcome = reply(text(fake.side_reply), usage={"input_tokens": 10, "output_tokens": 3})
                request.outcome = "side"
            self._answer(request, outcome)

        def _answer(self, request: ResponsesRequest, outcome: Outcome) -> None:
            if isinstance(outcome, _Hang):
                request.outcome = "hang"
                fake.hold()  # the connection stays open without a byte until the fake stops
                self.close_connection = True
                return
            if isinstance(outcome, HttpError):
                request.outcome = request.outcome or f"http {outcome.status}"
                self._send_json(outcome.status, _error_body(outcome.message, outcome.type, outcome.code))
                return
            response_id = f"resp_fake_{uuid.uuid4().hex[:20]}"
            if isinstance(outcome, StreamFailure):
                request.outcome = "failed"
                self._stream(failure_events(outcome, model=fake.model, response_id=response_id))
                return
            if not request.streaming:
                request.outcome = request.outcome or "reply"
                self._send_json(200, response_json(outcome, model=fake.model, response_id=response_id))
                return
            events = stream_events(outcome, model=fake.model, response_id=response_id)
            if outcome.stall_after is not None:
                self._stream(events[: outcome.stall_after], stall=request)
                return
            request.outcome = request.outcome or "reply"
            self._stream(events)

        def _stream(self, events: list[bytes], *, stall: ResponsesRequest | None = None) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("x-request-id", f"req_fake_{uuid.uuid4().hex[:16]}")
            self.send_header("connection", "close")
            self.end_headers()
            try:
                for event in events:
                    self.wfile.write(event)
                    self.wfile.flush()
                if stall is not None:
                    stall.outcome = "stalled"
                    fake.hold()  # the stream stays open, silent, until the fake stops
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up
            self.close_connection = True

    return Handler

