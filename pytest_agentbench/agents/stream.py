"""Replay agent actions -> stream-json lines in the event shapes of Claude Code 2.1.197."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TextIO

from pytest_agentbench import __version__
from pytest_agentbench.audit.transcript import AGENT_REPORT_SUBTYPE

# Named so a transcript (and a baseline's claudeCodeVersion) can never be mistaken for Claude's.
REPLAY_VERSION = f"{__version__}-agentbench-replay"
DEFAULT_MODEL = "replay"
#: The model name on the replay's assistant messages: a script wrote them, not the requested
#: model, so the harness's observed model says so (the init event still echoes --model, as
#: Claude Code's does).
REPLAY_MODEL = "agentbench-replay"
#: Claude Code's model name on assistant messages it makes up itself (API errors).
SYNTHETIC_MODEL = "<synthetic>"


def _zero_usage_preliminary() -> dict[str, int]:
    return {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def _zero_usage_total(counts: dict[str, int] | None = None) -> dict[str, Any]:
    # The key order and nested keys of Claude Code 2.1.197's result.usage.
    counts = counts or {}
    return {
        "input_tokens": counts.get("input_tokens", 0),
        "cache_creation_input_tokens": counts.get("cache_creation_input_tokens", 0),
        "cache_read_input_tokens": counts.get("cache_read_input_tokens", 0),
        "output_tokens": counts.get("output_tokens", 0),
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
        "inference_geo": "",
        "iterations": [],
        "speed": "standard",
    }


def _timestamp() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _hex_id() -> str:
    return uuid.uuid4().hex[:20]


def mcp_tool_result_shape(content: list[dict[str, Any]], structured: dict | None, is_error: bool) -> tuple[Any, Any]:
    """Shape an MCP `tools/call` result as Claude Code puts it into a tool_result.

    Claude Code 2.1.197 sends structured content as compact JSON text, other results as their
    content blocks, and an error as its joined text; `tool_use_result` (the SDK-side copy)
    carries the structured content beside it, or `Error: <text>` for an error.

    Args:
        content: The result's content blocks as dicts (`{"type": "text", "text": ...}`).
        structured: The result's `structuredContent`, if any.
        is_error: The result's `isError`.

    Returns:
        `(tool_result content, tool_use_result)`.
    """
    if is_error:
        text = "\n".join(block.get("text", "") for block in content if block.get("type") == "text") or "Tool failed"
        return text, f"Error: {text}"
    if structured is not None:
        text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
        return text, {"content": text, "structuredContent": structured}
    return content, content


@dataclass
class StreamWriter:
    """Writes one JSON object per line and flushes, so the harness sees each event as it happens."""

    out: TextIO
    model: str = DEFAULT_MODEL
    session_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    started: float = field(default_factory=time.monotonic)
    turns: int = 0
    permission_denials: list[dict[str, Any]] = field(default_factory=list)
    #: What the init event names as the CLI version, and the model on assistant messages.
    version: str = REPLAY_VERSION
    assistant_model: str = REPLAY_MODEL
    api_key_source: str = "none"
    #: Token counts (result.usage counters) and the cost so far; None = no price is known.
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float | None = 0
    #: Milliseconds spent in model calls (`duration_api_ms`).
    api_ms: int = 0
    #: Why the stream ended in an error result (its text, else its first error, else its subtype); None otherwise.
    ended_with: str | None = None
    _message_id: str | None = None
    _id_tag: str = "replay"

    def _emit(self, event: dict[str, Any]) -> None:
        if event.get("type") == "result" and event.get("is_error"):
            self.ended_with = str(event.get("result") or next(iter(event.get("errors") or ()), "") or event.get("subtype") or "an error")
        self.out.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.out.flush()

    def init(self, *, cwd: str, tools: list[str], mcp_servers: list[dict[str, str]]) -> None:
        """The `system/init` event (always the first line); the run's duration counts from here."""
        # Claude's duration_ms measures the query, not process and MCP startup.
        self.started = time.monotonic()
        self._emit(
            {
                "type": "system",
                "subtype": "init",
                "cwd": cwd,
                "session_id": self.session_id,
                "tools": tools,
                "mcp_servers": mcp_servers,
                "model": self.model,
                "permissionMode": "default",
                "slash_commands": [],
                "apiKeySource": self.api_key_source,
                "claude_code_version": self.version,
                "output_style": "default",
                "agents": [],
                "skills": [],
                "plugins": [],
                "analytics_disabled": True,
                "product_feedback_disabled": True,
                "uuid": str(uuid.uuid4()),
                "memory_paths": {},
                "fast_mode_state": "off",
            }
        )

    def _assistant(self, block: dict[str, Any], extra: dict[str, Any] | None = None, *, model: str | None = None) -> None:
        event = {
            "type": "assistant",
            "message": {
                "id": self._message_id,
                "type": "message",
                "role": "assistant",
                "model": model or self.assistant_model,
                "content": [block],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": _zero_usage_preliminary(),
                "context_management": None,
            },
            "parent_tool_use_id": None,
            "session_id": self.session_id,
            "uuid": str(uuid.uuid4()),
            "request_id": f"req_{self._id_tag}_{_hex_id()}",
        }
        event.update(extra or {})
        self._emit(event)

    def begin_turn(self) -> None:
        """Start a new assistant message (one model turn); counts toward `num_turns`."""
        self.turns += 1
        self._message_id = f"msg_{self._id_tag}_{_hex_id()}"

    def thinking(self, text: str) -> None:
        """An assistant thinking block in the current turn (the model's reasoning, as Claude writes it)."""
        self._assistant({"type": "thinking", "thinking": text, "signature": ""})

    def report(self, kind: str, message: str, **data: Any) -> None:
        """A `system` event of this project's own (AGENT_REPORT_SUBTYPE): what the agent did or saw.

        Args:
            kind: What happened (`recovery`, `retry`, `no-change`, `self-undo`, ...).
            message: One sentence for a reader.
            **data: More fields, JSON-serialisable.
        """
        self._emit(
            {
                "type": "system",
                "subtype": AGENT_REPORT_SUBTYPE,
                "kind": kind,
                "turn": self.turns,
                "message": message,
                **data,
                "session_id": self.session_id,
                "uuid": str(uuid.uuid4()),
            }
        )

    def text(self, text: str) -> None:
        """An assistant text block in the current turn."""
        self._assistant({"type": "text", "text": text})

    def tool_use(self, name: str, tool_input: dict[str, Any], *, server: str | None) -> str:
        """An assistant tool_use block in the current turn; returns its `toolu_...` id."""
        tool_use_id = f"toolu_{self._id_tag}_{_hex_id()}"
        extra = None
        if name.startswith("mcp__"):
            meta: dict[str, Any] = {"id": tool_use_id, "display_name": _display_name(name)}
            if server is not None:
                meta["server_display_name"] = server
            extra = {"tool_use_meta": [meta]}
        self._assistant({"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}, extra)
        return tool_use_id

    def tool_result(self, tool_use_id: str, content: Any, tool_use_result: Any, *, is_error: bool) -> None:
        """The `user` event answering a tool_use (`is_error` only present when true, as Claude writes it)."""
        block: dict[str, Any] = {"tool_use_id": tool_use_id, "type": "tool_result", "content": content}
        if is_error:
            block["is_error"] = True
        self._emit(
            {
                "type": "user",
                "message": {"role": "user", "content": [block]},
                "parent_tool_use_id": None,
                "session_id": self.session_id,
                "uuid": str(uuid.uuid4()),
                "timestamp": _timestamp(),
                "tool_use_result": tool_use_result,
            }
        )

    def deny(self, tool_use_id: str, name: str, tool_input: dict[str, Any]) -> None:
        """A permission denial: the tool is outside `--allowedTools` (recorded for the result event)."""
        message = f"Claude requested permissions to use {name}, but you haven't granted it yet."
        self.tool_result(tool_use_id, message, f"Error: {message}", is_error=True)
        self.permission_denials.append({"tool_name": name, "tool_use_id": tool_use_id, "tool_input": tool_input})

    def no_such_tool(self, tool_use_id: str, name: str) -> None:
        """The tool is disallowed or its server is not connected: Claude never saw it."""
        message = f"Error: No such tool available: {name}"
        self.tool_result(tool_use_id, f"<tool_use_error>{message}</tool_use_error>", message, is_error=True)

    def _duration_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def _money(self) -> dict[str, Any]:
        # Claude always writes total_cost_usd; an agent that cannot price its tokens leaves it out.
        return {} if self.cost_usd is None else {"total_cost_usd": self.cost_usd}

    def result_success(self, final_text: str) -> None:
        """The closing `result` event of a run that answered."""
        self._emit(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "api_error_status": None,
                "duration_ms": self._duration_ms(),
                "duration_api_ms": self.api_ms,
                "ttft_ms": 0,
                "ttft_stream_ms": 0,
                "time_to_request_ms": 0,
                "num_turns": self.turns,
                "result": final_text,
                "stop_reason": "end_turn",
                "session_id": self.session_id,
                **self._money(),
                "usage": _zero_usage_total(self.usage),
                "modelUsage": {},
                "permission_denials": self.permission_denials,
                "terminal_reason": "completed",
                "fast_mode_state": "off",
                "uuid": str(uuid.uuid4()),
            }
        )

    def result_max_turns(self, max_turns: int) -> None:
        """The `error_max_turns` result: the next turn would exceed `--max-turns`."""
        self._emit(
            {
                "type": "result",
                "subtype": "error_max_turns",
                "duration_ms": self._duration_ms(),
                "duration_api_ms": self.api_ms,
                "is_error": True,
                "num_turns": self.turns + 1,
                "stop_reason": "tool_use",
                "session_id": self.session_id,
                **self._money(),
                "usage": _zero_usage_total(self.usage),
                "modelUsage": {},
                "permission_denials": self.permission_denials,
                "terminal_reason": "max_turns",
                "fast_mode_state": "off",
                "uuid": str(uuid.uuid4()),
                "errors": [f"Reached maximum number of turns ({max_turns})"],
            }
        )

    def result_max_budget(self, budget_usd: float) -> None:
        """The `error_max_budget_usd` result: the cost so far reached `--max-budget-usd`."""
        self._emit(
            {
                "type": "result",
                "subtype": "error_max_budget_usd",
                "duration_ms": self._duration_ms(),
                "duration_api_ms": self.api_ms,
                "is_error": True,
                "num_turns": self.turns,
                "stop_reason": "tool_use",
                "session_id": self.session_id,
                **self._money(),
                "usage": _zero_usage_total(self.usage),
                "modelUsage": {},
                "permission_denials": self.permission_denials,
                "fast_mode_state": "off",
                "uuid": str(uuid.uuid4()),
                "errors": [f"Reached maximum budget (${budget_usd:g})"],
            }
        )

    def new_message(self) -> None:
        """Start another assistant message in the same turn (the final answer gets one of its own)."""
        self._message_id = f"msg_{self._id_tag}_{_hex_id()}"

    def result_error_during_execution(self, error: str) -> None:
        """The `error_during_execution` result: the agent could not go on (its MCP server stopped answering)."""
        self._emit(
            {
                "type": "result",
                "subtype": "error_during_execution",
                "duration_ms": self._duration_ms(),
                "duration_api_ms": self.api_ms,
                "is_error": True,
                "num_turns": self.turns,
                "stop_reason": None,
                "session_id": self.session_id,
                **self._money(),
                "usage": _zero_usage_total(self.usage),
                "modelUsage": {},
                "permission_denials": self.permission_denials,
                "fast_mode_state": "off",
                "uuid": str(uuid.uuid4()),
                "errors": [error],
            }
        )

    def result_api_error(self, message: str, status: int | None) -> None:
        """An API error, as Claude Code ends on one: a synthetic assistant text, then `success` with `is_error`.

        Args:
            message: The text (`API Error: 500 ...`); it becomes the result text the audit quotes.
            status: The HTTP status, or None when no response came (connection error, timeout).
        """
        if self._message_id is None:
            self.begin_turn()
        self._assistant({"type": "text", "text": message}, {"error": "api_error"}, model=SYNTHETIC_MODEL)
        self._emit(
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "api_error_status": status,
                "duration_ms": self._duration_ms(),
                "duration_api_ms": self.api_ms,
                "num_turns": self.turns,
                "result": message,
                "stop_reason": "stop_sequence",
                "session_id": self.session_id,
                **self._money(),
                "usage": _zero_usage_total(self.usage),
                "modelUsage": {},
                "permission_denials": self.permission_denials,
                "terminal_reason": "completed",
                "fast_mode_state": "off",
                "uuid": str(uuid.uuid4()),
            }
        )


def _display_name(full_name: str) -> str:
    # Claude shows an MCP tool by its own name with the first letter capitalised ("Observe").
    short = full_name.rsplit("__", 1)[-1]
    return short[:1].upper() + short[1:]


def write_summary(stream_json: str, output_format: str, stdout: TextIO) -> None:
    """Print what Claude's `text` and `json` output formats print: only the outcome, the last (result) event."""
    result = json.loads(stream_json.strip().splitlines()[-1])
    if output_format == "json":
        stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    elif result.get("subtype") == "success":
        stdout.write(f"{result.get('result', '')}\n")
    else:
        stdout.write(f"Error: {'; '.join(result.get('errors', [])) or result.get('subtype')}\n")
