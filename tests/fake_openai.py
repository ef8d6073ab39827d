"""Scripted replies -> a fake OpenAI-compatible chat completions server on loopback (tool_calls, content, reasoning, usage, errors).

Scripts are keyed by the request's `model`, so one server serves many scenarios at once (a suite
picks its scenario with `claude.model`). Each request takes the next turn of its model's script.
A turn is built with the helpers below; `index_of("Wi-Fi")` stands for the index of the element
whose line shows that text in the latest screen the agent sent, so scripts survive layout changes.

Usage::

    with FakeOpenAI({"wifi-good": [call("tap", index=index_of("Network & internet")),
                                   call("task_complete", answer="WIFI: on")]}) as api:
        env["AGENTBENCH_OPENAI_BASE_URL"] = api.base_url
    api.requests_for("wifi-good")      # every request body, in order
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_USAGE = {"prompt_tokens": 1000, "completion_tokens": 20}
_SCREEN_MARK = "The screen now:\n"
_LINE = re.compile(r"^(?P<index>\d+) \S+ (?P<rest>.*)$")


@dataclass(frozen=True)
class IndexOf:
    """An element index resolved at answer time from the latest screen in the request (by a quoted text on its line)."""

    text: str
    nth: int = 0
    as_text: bool = False


def index_of(text: str, nth: int = 0, *, as_text: bool = False) -> IndexOf:
    """The index of the (nth) element whose line shows `"text"` in the latest screen sent (`as_text`: as the string "2")."""
    return IndexOf(text, nth, as_text)


@dataclass(frozen=True)
class Turn:
    """One scripted answer.

    Attributes:
        content: `message.content` (None = null).
        reasoning: `message.reasoning` (vLLM's reasoning parser field).
        tool_calls: (name, arguments) pairs; arguments may hold IndexOf values, or be a raw string.
        status: An HTTP error status to answer with instead (with `error` as its message).
        delay_s: Seconds to wait before answering (a timeout test sleeps past the client's timeout).
        usage: The usage block.
        until_thinking_off: Answer `empty` (and do not advance) while the request leaves thinking on.
        finish_reason: The choice's finish reason (default `tool_calls` with calls, else `stop`).
        trickle_s: Send the body in small pieces over this many seconds (each read is quick, the whole is slow).
        headers: Extra response headers (`Retry-After`).
    """

    content: str | None = None
    reasoning: str | None = None
    tool_calls: tuple[tuple[str, Any], ...] = ()
    status: int | None = None
    error: str = ""
    delay_s: float = 0.0
    usage: Mapping[str, int] | None = field(default_factory=lambda: dict(DEFAULT_USAGE))
    until_thinking_off: bool = False
    finish_reason: str | None = None
    trickle_s: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


def call(name: str, arguments: Any = None, /, **kwargs: Any) -> Turn:
    """A reply with one native tool call (`arguments` a dict, or a raw string sent as is)."""
    return Turn(tool_calls=((name, arguments if arguments is not None else kwargs),))


def content(text: str | None, *, reasoning: str | None = None) -> Turn:
    """A reply with only content (and optional reasoning), no tool call."""
    return Turn(content=text, reasoning=reasoning)


def empty(reasoning: str = "Let me think about the screen. The switch") -> Turn:
    """A reply with no content and no tool call: a `<think>` block that never closed."""
    return Turn(content=None, reasoning=reasoning, usage={"prompt_tokens": 1000, "completion_tokens": 512})


def empty_until_thinking_off(then: Turn) -> Turn:
    """Empty while thinking is on; `then` once the request carries enable_thinking=false."""
    return Turn(content=then.content, reasoning=then.reasoning, tool_calls=then.tool_calls, until_thinking_off=True)


def http_error(status: int, message: str = "scripted error") -> Turn:
    """An HTTP error answer."""
    return Turn(status=status, error=message)


def delayed(seconds: float, then: Turn) -> Turn:
    """`then`, after a delay."""
    return Turn(content=then.content, reasoning=then.reasoning, tool_calls=then.tool_calls, status=then.status,
                error=then.error, delay_s=seconds)


def with_(turn: Turn, **changes: Any) -> Turn:
    """A turn with some fields changed (`with_(call("back"), usage=None)`: no usage block)."""
    from dataclasses import replace

    return replace(turn, **changes)


def rate_limited(retry_after_s: float, message: str = "Rate limit reached") -> Turn:
    """A 429 with a Retry-After header (seconds)."""
    return Turn(status=429, error=message, headers={"Retry-After": f"{retry_after_s:g}"})


def thinking_disabled(body: Mapping[str, Any]) -> bool:
    """Whether a request turns the chat template's thinking off."""
    kwargs = body.get("chat_template_kwargs") or {}
    return kwargs.get("enable_thinking") is False


def latest_screen(body: Mapping[str, Any]) -> str:
    """The latest element list the agent sent (from the user or tool messages)."""
    for message in reversed(body.get("messages") or []):
        text = message.get("content") or ""
        if isinstance(text, str) and _SCREEN_MARK in text:
            return text.rsplit(_SCREEN_MARK, 1)[1]
    return ""


def resolve_index(screen: str, wanted: IndexOf) -> int:
    """The index of the element whose line shows `"text"` (ValueError if none: the scenario is wrong)."""
    found = [int(m.group("index")) for line in screen.splitlines() if (m := _LINE.match(line)) and f'"{wanted.text}"' in m.group("rest")]
    if len(found) <= wanted.nth:
        raise ValueError(f"no element shows {wanted.text!r} in the latest screen:\n{screen}")
    return found[wanted.nth]


def _resolve(value: Any, screen: str) -> Any:
    if isinstance(value, IndexOf):
        index = resolve_index(screen, value)
        return str(index) if value.as_text else index
    if isinstance(value, dict):
        return {key: _resolve(item, screen) for key, item in value.items()}
    return value


class FakeOpenAI:
    """The server: start() it (or use it as a context manager), read `requests`, stop() it."""

    def __init__(self, scripts: Mapping[str, list[Turn]], *, served_model: Callable[[str], str] | None = None,
                 strict: Mapping[str, frozenset[str]] | None = None) -> None:
        self.scripts = {model: list(turns) for model, turns in scripts.items()}
        self._positions = {model: 0 for model in scripts}
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._served_model = served_model or (lambda model: model)
        # model -> request keys a strict OpenAI-compatible endpoint refuses with a 400 naming them.
        self.strict = {model: frozenset(keys) for model, keys in (strict or {}).items()}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1`."""
        assert self._server is not None, "start the fake server first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def requests_for(self, model: str) -> list[dict[str, Any]]:
        """The request bodies one scenario sent, in order."""
        with self._lock:
            return [body for body in self.requests if body.get("model") == model]

    def start(self) -> FakeOpenAI:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def next_turn(self, body: dict[str, Any], headers: dict[str, str]) -> Turn:
        """Record a request and pick its answer (advancing the script unless the turn waits for thinking off)."""
        model = str(body.get("model"))
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            script = self.scripts.get(model)
            if script is None:
                return http_error(404, f"The model `{model}` does not exist.")
            refused = sorted(key for key in self.strict.get(model, ()) if key in body)
            if refused:
                return http_error(400, f"Unrecognized request argument supplied: {refused[0]}")
            position = self._positions[model]
            if position >= len(script):
                return http_error(500, f"the script for {model} has no turn {position + 1}")
            turn = script[position]
            if turn.until_thinking_off and not thinking_disabled(body):
                return empty()
            self._positions[model] = position + 1
            return turn

    def completion(self, body: dict[str, Any], turn: Turn) -> dict[str, Any]:
        """The chat completion JSON for a turn."""
        screen = latest_screen(body)
        tool_calls = []
        for name, arguments in turn.tool_calls:
            encoded = arguments if isinstance(arguments, str) else json.dumps(_resolve(arguments, screen))
            tool_calls.append({"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                               "function": {"name": name, "arguments": encoded}})
        text = turn.content
        if text is not None:
            # "{index_of:Wi-Fi}" in a scripted text: a call written into content, with a live index.
            text = re.sub(r"\{index_of:([^}]+)\}", lambda m: str(resolve_index(screen, IndexOf(m.group(1)))), text)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if turn.reasoning is not None:
            message["reasoning"] = turn.reasoning
        if tool_calls:
            message["tool_calls"] = tool_calls
        finish = turn.finish_reason or ("tool_calls" if tool_calls else "stop")
        answer: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self._served_model(str(body.get("model"))),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if turn.usage is not None:
            usage = dict(turn.usage)
            usage["total_tokens"] = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
            answer["usage"] = usage
        return answer


def _make_handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
            pass

        def _send(self, status: int, body: dict[str, Any], turn: Turn | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (turn.headers if turn is not None else {}).items():
                self.send_header(key, value)
            self.end_headers()
            try:
                if turn is not None and turn.trickle_s:
                    # A body trickled in pieces: no single read waits long, the whole takes trickle_s.
                    pieces = 20
                    size = max(1, len(data) // pieces + 1)
                    for start in range(0, len(data), size):
                        self.wfile.write(data[start : start + size])
                        self.wfile.flush()
                        time.sleep(turn.trickle_s / pieces)
                else:
                    self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            turn = fake.next_turn(body, {key.lower(): value for key, value in self.headers.items()})
            if turn.delay_s:
                time.sleep(turn.delay_s)
            if turn.status is not None:
                self._send(turn.status, {"error": {"message": turn.error, "type": "scripted", "code": turn.status}}, turn)
                return
            try:
                answer = fake.completion(body, turn)
            except ValueError as exc:
                self._send(500, {"error": {"message": str(exc)}})
                return
            self._send(200, answer, turn)

    return Handler
