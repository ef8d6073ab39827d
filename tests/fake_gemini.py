"""Scripted turns into a fake Gemini API (streamGenerateContent over SSE) for driving the real Gemini CLI.

Gemini CLI 0.61.0 pointed here with `GOOGLE_GEMINI_BASE_URL` (and the API-key auth type chosen
in its settings, tests/geminicli.py) sends `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`
with `x-goog-api-key: <GEMINI_API_KEY>`.
Requests that declare functions are the agent loop: each one is answered by the next turn of the
script. A turn is a function of the request (so it can look at the functions declared and the
function responses received) returning a `Reply` (text and/or functionCall parts), an
`HttpError` (a Google-style error body), or `HANG` (never answered until the server stops). A
`Reply` with `stall_after=N` sends its first N chunks and then holds the stream open. Requests
without functions (such as the `auto` model router's `generateContent`) are side requests,
answered with a short text; `countTokens` gets a token count. With `api_key` set, any request that does not
carry exactly that key (header `x-goog-api-key` or `?key=`) is answered 400 API_KEY_INVALID, as
the real API does.

Usage::

    script = [
        lambda req: reply(function_call(req.tool_named("observe"), {"device": "emulator-5554"})),
        lambda req: reply(text("EXPECTED_COUNT: 3")),
    ]
    with FakeGemini(script, api_key="test-key") as api:
        env["GOOGLE_GEMINI_BASE_URL"] = api.base_url
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Union
from urllib.parse import parse_qs, urlsplit

from scriptedfake import ScriptedFake

DEFAULT_MODEL_VERSION = "gemini-2.5-pro"
DEFAULT_USAGE = {"promptTokenCount": 1000, "candidatesTokenCount": 20, "cachedContentTokenCount": 0, "thoughtsTokenCount": 0}
_ROUTE = re.compile(r"^/(?P<version>v1(?:beta|alpha)?)/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$")
_STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


@dataclass(frozen=True)
class TextPart:
    """A model `text` part (streamed in chunks, one SSE event each)."""

    text: str


@dataclass(frozen=True)
class FunctionCallPart:
    """A model `functionCall` part (sent whole in one chunk, as the API does)."""

    name: str
    args: dict
    id: str | None = None


Part = Union[TextPart, FunctionCallPart]


@dataclass(frozen=True)
class Reply:
    """One model answer: its parts, usage numbers, finish reason, and where (if anywhere) the stream stalls."""

    parts: tuple[Part, ...]
    usage: dict = field(default_factory=lambda: dict(DEFAULT_USAGE))
    finish_reason: str = "STOP"
    stall_after: int | None = None


@dataclass(frozen=True)
class HttpError:
    """Answer with this HTTP status and a Google-style error body (`{"error": {code, message, status}}`)."""

    status: int
    message: str = "An internal error has occurred (fake)."
    status_name: str | None = None

    def body(self) -> dict:
        return {"error": {"code": self.status, "message": self.message, "status": self.status_name or _STATUS_NAMES.get(self.status, "UNKNOWN")}}


class _Hang:
    """Never answer: the request blocks until the server stops."""

    def __repr__(self) -> str:
        return "HANG"


HANG = _Hang()
Outcome = Union[Reply, HttpError, _Hang]


def text(value: str) -> TextPart:
    """A text part."""
    return TextPart(value)


def function_call(name: str, args: dict | None = None) -> FunctionCallPart:
    """A functionCall part calling `name` (the function name as declared, such as `observe` or `mcp_dev_observe`)."""
    return FunctionCallPart(name=name, args=dict(args or {}))


def reply(*parts: Part, usage: dict | None = None, finish_reason: str = "STOP", stall_after: int | None = None) -> Reply:
    """A model answer made of `parts`, with `usage` merged over the default numbers."""
    return Reply(parts=tuple(parts), usage={**DEFAULT_USAGE, **(usage or {})}, finish_reason=finish_reason, stall_after=stall_after)


@dataclass(frozen=True)
class FunctionResponse:
    """A `functionResponse` part the CLI sent back."""

    name: str
    id: str | None
    response: dict

    @property
    def text(self) -> str:
        """The response flattened to text (MCP results arrive as `{"content": [...]}` or `{"output": ...}`)."""
        return _flatten(self.response)

    @property
    def is_error(self) -> bool:
        return "error" in self.response


@dataclass
class GeminiRequest:
    """One request the fake received, with helpers for scripts."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    model: str = ""
    rpc: str = ""  # streamGenerateContent, generateContent, countTokens, ...
    turn: int | None = None  # index into the script; None for side requests and other paths
    outcome: str = ""

    @property
    def tools(self) -> list[str]:
        """Names of the functions declared in this request."""
        names = []
        for tool in self.body.get("tools") or []:
            if isinstance(tool, dict):
                names.extend(str(f.get("name", "")) for f in tool.get("functionDeclarations") or [] if isinstance(f, dict))
        return names

    def tool_named(self, short_name: str) -> str:
        """The declared function whose name is `short_name` or ends in `_short_name` / `__short_name`."""
        for name in self.tools:
            if name == short_name or name.endswith((f"__{short_name}", f"_{short_name}")):
                return name
        raise LookupError(f"no function named {short_name!r} declared; declared: {self.tools}")

    @property
    def contents(self) -> list[dict]:
        items = self.body.get("contents")
        return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []

    def function_responses(self) -> list[FunctionResponse]:
        """The functionResponse parts of the last content (the answers to the previous turn's calls)."""
        if not self.contents:
            return []
        found = []
        for part in self.contents[-1].get("parts") or []:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(response, dict):
                found.append(FunctionResponse(str(response.get("name", "")), response.get("id"), dict(response.get("response") or {})))
        return found

    def last_user_text(self) -> str:
        """The text parts of the last `user` content."""
        for content in reversed(self.contents):
            if content.get("role") == "user":
                return "\n".join(str(p["text"]) for p in content.get("parts") or [] if isinstance(p, dict) and "text" in p)
        return ""


def _flatten(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_flatten(item) for item in value)
    if isinstance(value, dict):
        if "text" in value and isinstance(value["text"], str):
            return value["text"]
        return "\n".join(_flatten(item) for key, item in value.items() if key in ("content", "output", "error", "llmContent"))
    return ""


Turn = Callable[[GeminiRequest], Outcome]


def _chunks(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def _usage(usage: dict) -> dict:
    total = usage["promptTokenCount"] + usage["candidatesTokenCount"] + usage.get("thoughtsTokenCount", 0)
    return {**{k: v for k, v in usage.items() if v or k in ("promptTokenCount", "candidatesTokenCount")}, "totalTokenCount": total}


def stream_chunks(model_reply: Reply, *, model_version: str, response_id: str) -> list[dict]:
    """The JSON chunks of one streamed answer: text in pieces, each function call whole, usage and finish reason last."""
    chunks: list[dict] = []
    for part in model_reply.parts:
        if isinstance(part, TextPart):
            pieces = [{"text": piece} for piece in _chunks(part.text, 40)]
        else:
            call: dict[str, Any] = {"name": part.name, "args": part.args}
            if part.id is not None:
                call["id"] = part.id
            pieces = [{"functionCall": call}]
        for piece in pieces:
            chunks.append({"candidates": [{"content": {"role": "model", "parts": [piece]}, "index": 0}]})
    if not chunks:
        chunks.append({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "index": 0}]})
    chunks[-1]["candidates"][0]["finishReason"] = model_reply.finish_reason
    for chunk in chunks:
        chunk["modelVersion"] = model_version
        chunk["responseId"] = response_id
    chunks[-1]["usageMetadata"] = _usage(model_reply.usage)
    return chunks


def response_json(model_reply: Reply, *, model_version: str, response_id: str) -> dict:
    """The non-streaming generateContent body of one answer."""
    parts: list[dict] = []
    for part in model_reply.parts:
        parts.append({"text": part.text} if isinstance(part, TextPart) else {"functionCall": {"name": part.name, "args": part.args}})
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": model_reply.finish_reason, "index": 0}],
        "usageMetadata": _usage(model_reply.usage),
        "modelVersion": model_version,
        "responseId": response_id,
    }


class FakeGemini(ScriptedFake[GeminiRequest]):
    """A scripted Gemini API on a free 127.0.0.1 port, served from a background thread.

    Args:
        script: One turn per agent-loop request, in order.
        after_script: Answer for agent-loop requests once the script is used up.
        model_version: The `modelVersion` reported in answers (the CLI's JSON output does not echo it).
        side_reply: Text answered to side requests (no functions declared).
        api_key: When set, the only key accepted; any other request gets a 400 API_KEY_INVALID.
    """

    thread_name = "fake-gemini"

    def __init__(
        self,
        script: Sequence[Turn],
        *,
        after_script: Turn | None = None,
        model_version: str = DEFAULT_MODEL_VERSION,
        side_reply: str = "Fake side answer",
        api_key: str | None = None,
    ) -> None:
        super().__init__(script, after_script or (lambda _request: reply(text("Done."))))
        self.model_version = model_version
        self.side_reply = side_reply
        self.api_key = api_key

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT` (the SDK appends `/v1beta/models/...`)."""
        return f"http://127.0.0.1:{self.port}"

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    def script_failed(self, turn: int, error: Exception) -> Outcome:
        return HttpError(500, f"the fake's script failed at turn {turn}: {error}")

    def authorized(self, headers: dict[str, str], query: dict[str, list[str]]) -> bool:
        if self.api_key is None:
            return True
        lowered = {key.lower(): value for key, value in headers.items()}
        return lowered.get("x-goog-api-key") == self.api_key or query.get("key") == [self.api_key]


def _make_handler(fake: FakeGemini) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
            pass  # requests are recorded in fake.requests instead of stderr

        def _send_json(self, status: int, body: dict) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json; charset=UTF-8")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            fake.record(GeminiRequest("GET", self.path, dict(self.headers), {}, outcome="404"))
            self._send_json(404, HttpError(404, f"no route {self.path} (fake)").body())

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_unparseable": raw.decode("utf-8", "replace")}
            url = urlsplit(self.path)
            request = GeminiRequest("POST", self.path, dict(self.headers), body)
            fake.record(request)
            route = _ROUTE.match(url.path)
            if route is None:
                request.outcome = "404"
                self._send_json(404, HttpError(404, f"no route {url.path} (fake)").body())
                return
            request.model, request.rpc = route["model"], route["method"]
            if not fake.authorized(request.headers, parse_qs(url.query)):
                request.outcome = "bad key"
                self._send_json(400, HttpError(400, "API key not valid. Please pass a valid API key. (fake)").body())
                return
            if request.rpc == "countTokens":
                request.outcome = "countTokens"
                self._send_json(200, {"totalTokens": 100})
                return
            if request.rpc not in ("streamGenerateContent", "generateContent"):
                request.outcome = "404"
                self._send_json(404, HttpError(404, f"method {request.rpc} not faked").body())
                return
            if request.tools:
                outcome = fake.next_outcome(request)
            else:
                outcome = reply(text(fake.side_reply), usage={"promptTokenCount": 10, "candidatesTokenCount": 3})
                request.outcome = "side"
            self._answer(request, outcome)

        def _answer(self, request: GeminiRequest, outcome: Outcome) -> None:
            if isinstance(outcome, _Hang):
                request.outcome = "hang"
                fake.hold()  # the connection stays open without a byte until the fake stops
                self.close_connection = True
                return
            if isinstance(outcome, HttpError):
                request.outcome = request.outcome or f"http {outcome.status}"
                self._send_json(outcome.status, outcome.body())
                return
            response_id = uuid.uuid4().hex[:22]
            if request.rpc == "generateContent":
                request.outcome = request.outcome or "reply"
                self._send_json(200, response_json(outcome, model_version=fake.model_version, response_id=response_id))
                return
            chunks = stream_chunks(outcome, model_version=fake.model_version, response_id=response_id)
            if outcome.stall_after is not None:
                chunks = chunks[: outcome.stall_after]
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            try:
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk, separators=(',', ':'))}\r\n\r\n".encode())
                    self.wfile.flush()
                if outcome.stall_after is not None:
                    request.outcome = "stalled"
                    fake.hold()  # the stream stays open, silent, until the fake stops
                else:
                    request.outcome = request.outcome or "reply"
            except (BrokenPipeError, ConnectionResetError):
                request.outcome = request.outcome or "client gone"
            self.close_connection = True

    return Handler

