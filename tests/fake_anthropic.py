"""Scripted turns into a fake Anthropic Messages API (SSE streaming) for driving the real Claude Code CLI.

Claude Code 2.1.197 in print mode sends `HEAD /` and `POST /v1/messages?beta=true` with
`stream: true`. Requests that offer tools are the agent loop: each one is answered by the next
turn of the script. A turn is a function of the request (so it can look at the tools offered
and the tool results received) returning a `Reply` (text and/or tool_use blocks), an
`HttpError`, or `HANG` (the request is never answered until the server stops). Requests without
tools are side requests (titles, quota probes): they are logged and answered with a short text.

Usage::

    script = [
        lambda req: reply(tool_use(req.tool_named("observe"), {"device": "emulator-5554"})),
        lambda req: reply(text("EXPECTED_COUNT: 3")),
    ]
    with FakeAnthropic(script) as api:
        env["ANTHROPIC_BASE_URL"] = api.base_url
"""

from __future__ import annotations

import itertools
import json
import os
import ssl
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Union

import pytest

DEFAULT_MODEL = "claude-sonnet-4-5"
DEFAULT_USAGE = {"input_tokens": 1000, "output_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


@dataclass(frozen=True)
class TextBlock:
    """An assistant text block."""

    text: str


@dataclass(frozen=True)
class ToolUseBlock:
    """An assistant tool_use block; `input` is streamed as input_json_delta chunks."""

    name: str
    input: dict
    id: str = field(default_factory=lambda: f"toolu_fake_{uuid.uuid4().hex[:20]}")


@dataclass(frozen=True)
class Reply:
    """One assistant message: its blocks, usage numbers and stop reason (derived when None)."""

    blocks: tuple[TextBlock | ToolUseBlock, ...]
    usage: dict = field(default_factory=lambda: dict(DEFAULT_USAGE))
    stop_reason: str | None = None

    @property
    def effective_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUseBlock) for b in self.blocks) else "end_turn"


@dataclass(frozen=True)
class HttpError:
    """Answer the request with this HTTP status and an Anthropic-style error body."""

    status: int
    error_type: str = "api_error"
    message: str = "Internal server error (fake)"


class _Hang:
    """Never answer: the request blocks until the server stops."""

    def __repr__(self) -> str:
        return "HANG"


HANG = _Hang()
Outcome = Union[Reply, HttpError, _Hang]


def text(value: str) -> TextBlock:
    """A text block."""
    return TextBlock(value)


def tool_use(name: str, input: dict | None = None) -> ToolUseBlock:
    """A tool_use block calling `name` (a full tool name such as `mcp__dev__observe`)."""
    return ToolUseBlock(name=name, input=dict(input or {}))


def reply(*blocks: TextBlock | ToolUseBlock, usage: dict | None = None, stop_reason: str | None = None) -> Reply:
    """An assistant message made of `blocks`, with `usage` merged over the default numbers."""
    return Reply(blocks=tuple(blocks), usage={**DEFAULT_USAGE, **(usage or {})}, stop_reason=stop_reason)


@dataclass(frozen=True)
class ToolResult:
    """A tool_result block the CLI sent back."""

    tool_use_id: str
    text: str
    is_error: bool


@dataclass
class MessagesRequest:
    """One request the fake received, with helpers for scripts."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    turn: int | None = None  # index into the script; None for side requests and other paths
    outcome: str = ""

    @property
    def streaming(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def tools(self) -> list[str]:
        """Names of the tools offered in this request."""
        return [tool.get("name", "") for tool in self.body.get("tools") or [] if isinstance(tool, dict)]

    def tool_named(self, short_name: str) -> str:
        """The full name of the offered tool whose name is `short_name` or ends in `__short_name`."""
        for name in self.tools:
            if name == short_name or name.endswith(f"__{short_name}"):
                return name
        raise LookupError(f"no tool named {short_name!r} offered; offered: {self.tools}")

    def last_user_message(self) -> dict | None:
        """The last message with role `user`.

        With `--max-budget-usd`, Claude Code 2.1.197 puts a `system`-role message after the user
        message that carries the tool results (`USD budget: $0.0055/$2; $1.9945 remaining`), so
        the last message is not always the user's.
        """
        for message in reversed(self.body.get("messages") or []):
            if isinstance(message, dict) and message.get("role") == "user":
                return message
        return None

    def tool_results(self) -> list[ToolResult]:
        """The tool_result blocks of the last user message."""
        message = self.last_user_message()
        if message is None:
            return []
        content = message.get("content")
        if not isinstance(content, list):
            return []
        results = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                results.append(ToolResult(block.get("tool_use_id", ""), _flatten(block.get("content")), bool(block.get("is_error"))))
        return results

    def last_user_text(self) -> str:
        """The text of the last user message (prompt or tool results flattened)."""
        message = self.last_user_message()
        return _flatten(message.get("content")) if message is not None else ""


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if "text" in block:
                    parts.append(str(block["text"]))
                elif "content" in block:
                    parts.append(_flatten(block["content"]))
        return "\n".join(parts)
    return ""


Turn = Callable[[MessagesRequest], Outcome]


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def stream_events(message_reply: Reply, *, model: str, message_id: str) -> list[bytes]:
    """The SSE events of one assistant message, in the order the real API sends them."""
    usage = message_reply.usage
    start_usage = {**usage, "output_tokens": 1}
    events = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        )
    ]
    for index, block in enumerate(message_reply.blocks):
        if isinstance(block, TextBlock):
            events.append(_sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))
            for chunk in _chunks(block.text, 40):
                events.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": chunk}}))
        else:
            events.append(
                _sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "tool_use", "id": block.id, "name": block.name, "input": {}},
                    },
                )
            )
            for chunk in _chunks(json.dumps(block.input), 16):
                events.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": chunk}}))
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message_reply.effective_stop_reason, "stop_sequence": None},
                "usage": usage,
            },
        )
    )
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


def _chunks(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def message_json(message_reply: Reply, *, model: str, message_id: str) -> dict:
    """The non-streaming JSON body of one assistant message."""
    content: list[dict] = []
    for block in message_reply.blocks:
        if isinstance(block, TextBlock):
            content.append({"type": "text", "text": block.text})
        else:
            content.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.input})
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": message_reply.effective_stop_reason,
        "stop_sequence": None,
        "usage": message_reply.usage,
    }


class FakeAnthropic:
    """A scripted Messages API on a free 127.0.0.1 port, served from a background thread.

    Args:
        script: One turn per agent-loop request, in order.
        after_script: Answer for agent-loop requests once the script is used up.
        model: The model name reported in messages.
        side_reply: Text answered to side requests (no tools offered).
    """

    def __init__(
        self,
        script: Sequence[Turn],
        *,
        after_script: Turn | None = None,
        model: str = DEFAULT_MODEL,
        side_reply: str = "Fake session",
        accept_only: str | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.script = list(script)
        self.after_script = after_script or (lambda _request: reply(text("Done.")))
        self.model = model
        self.side_reply = side_reply
        #: A credential (API key or OAuth token): any request without it is answered 401.
        self.accept_only = accept_only
        #: A server-side TLS context: the fake speaks https (behind a proxy, as the real host).
        self.tls = tls
        self.refused_auth = 0
        self.requests: list[MessagesRequest] = []
        self._lock = threading.Lock()
        self._turns = itertools.count()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the fake first"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def agent_requests(self) -> list[MessagesRequest]:
        """The agent-loop requests (those answered from the script), in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.turn is not None]

    @property
    def hung(self) -> int:
        """How many requests are being held unanswered."""
        with self._lock:
            return sum(1 for r in self.requests if r.outcome == "hang")

    def start(self) -> FakeAnthropic:
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        if self.tls is not None:
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-anthropic", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _record(self, request: MessagesRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_outcome(self, request: MessagesRequest) -> Outcome:
        turn = next(self._turns)
        request.turn = turn
        chosen = self.script[turn] if turn < len(self.script) else self.after_script
        return chosen(request)

    def wait_for_hang(self, timeout: float) -> bool:
        """Block until a request is being held unanswered (for hang scenarios)."""
        deadline = time.monotonic() + timeout
        while not self.hung and time.monotonic() < deadline:
            self._stopping.wait(0.05)
        return bool(self.hung)


def _make_handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
            pass  # requests are recorded in fake.requests instead of stderr

        def _send_json(self, status: int, body: dict) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("request-id", f"req_fake_{uuid.uuid4().hex[:16]}")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_HEAD(self) -> None:  # noqa: N802 - stdlib naming
            fake._record(MessagesRequest("HEAD", self.path, dict(self.headers), {}, outcome="ok"))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_GET(self) -> None:  # noqa: N802
            fake._record(MessagesRequest("GET", self.path, dict(self.headers), {}, outcome="404"))
            self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not faked"}})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_unparseable": raw.decode("utf-8", "replace")}
            request = MessagesRequest("POST", self.path, dict(self.headers), body)
            fake._record(request)
            if fake.accept_only is not None and fake.accept_only not in (
                    self.headers.get("x-api-key"), (self.headers.get("authorization") or "").removeprefix("Bearer ")):
                request.outcome = "401"
                with fake._lock:
                    fake.refused_auth += 1
                self._send_json(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
                return
            route = self.path.split("?", 1)[0]
            if route == "/v1/messages/count_tokens":
                request.outcome = "count_tokens"
                self._send_json(200, {"input_tokens": 100})
                return
            if route != "/v1/messages":
                request.outcome = "404"
                self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not faked"}})
                return
            if request.tools:
                outcome = fake._next_outcome(request)
            else:
                outcome = reply(text(fake.side_reply), usage={"input_tokens": 10, "output_tokens": 3})
                request.outcome = "side"
            self._answer(request, outcome)

        def _answer(self, request: MessagesRequest, outcome: Outcome) -> None:
            if isinstance(outcome, _Hang):
                request.outcome = "hang"
                # Hold the connection open without a byte until the fake stops.
                fake._stopping.wait()
                self.close_connection = True
                return
            if isinstance(outcome, HttpError):
                request.outcome = request.outcome or f"http {outcome.status}"
                self._send_json(outcome.status, {"type": "error", "error": {"type": outcome.error_type, "message": outcome.message}})
                return
            request.outcome = request.outcome or "reply"
            message_id = f"msg_fake_{uuid.uuid4().hex[:20]}"
            if not request.streaming:
                self._send_json(200, message_json(outcome, model=fake.model, message_id=message_id))
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("request-id", f"req_fake_{uuid.uuid4().hex[:16]}")
            self.send_header("connection", "close")
            self.end_headers()
            for event in stream_events(outcome, model=fake.model, message_id=message_id):
                self.wfile.write(event)
                self.wfile.flush()
            self.close_connection = True

    return Handler


# ----------------------------------------------------------------------------- the real CLI

#: Where CI installs the pinned Claude Code (`.ci/run`); tests skip with this hint without it.
NPM_CACHE = Path(os.environ.get("AGENTBENCH_NPM_CACHE", Path.home() / ".cache" / "agentbench" / "npm"))
CLAUDE = NPM_CACHE / "node_modules" / ".bin" / "claude"
CLAUDE_VERSION = "2.1.197"


@pytest.fixture(scope="module")
def claude_bin() -> Path:
    """The pinned Claude Code CLI, or a skip that says how to install it."""
    if not CLAUDE.exists():
        pytest.skip(
            f"Claude Code CLI not installed at {CLAUDE}: run `npm install --prefix {NPM_CACHE} "
            f"@anthropic-ai/claude-code@{CLAUDE_VERSION}` or set AGENTBENCH_NPM_CACHE"
        )
    return CLAUDE
