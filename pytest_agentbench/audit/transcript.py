"""Claude Code stream-json lines -> a typed Transcript (shared by the harness, replay and tests).

Read as a stream and kept small: a tool result is kept as a bounded excerpt with its full length
and the line it arrived on, and the substrings the audit asks about (`watch`: failure patterns)
are looked for in the full text while it streams past, so a 200 MB transcript never sits in
memory and the full text is read back from the file only when someone asks for it.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from pytest_agentbench.errors import TranscriptError

# Assistant messages that Claude Code makes up itself (API errors) carry this model name;
# it is not the model that ran, so it never becomes the observed model.
SYNTHETIC_MODEL = "<synthetic>"

# Inputs with at most this many keys are shared between equal calls (see `_Builder._shared_input`).
_SHARED_INPUT_KEYS = 4

# The watched_hits of a result with none (one shared object, not one per call).
_NO_HITS: frozenset[str] = frozenset()

#: The `subtype` of the `system` events in which this project's agents report what they did beyond
#: Claude Code's events (agentbench-agent: recoveries, retries, no-change, self-undo, the ending).
AGENT_REPORT_SUBTYPE = "agentbench_report"

#: How much of a tool result a Transcript keeps; the rest stays in the file (`read_result_text`).
#: Enough for a stumble's detail (300 characters) and the text report's line; the HTML timeline
#: reads a cut result back whole. More only multiplies by the number of calls: 28,000 observe
#: calls keeping 4,000 characters each held 112 MB.
RESULT_EXCERPT_CHARS = 300

# The token counters of `result.usage`; the other keys there are nested or not counts.
USAGE_COUNTERS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


@dataclass(frozen=True)
class McpServerStatus:
    """One MCP server's connection status as the init event reports it."""

    name: str
    status: str


@dataclass(frozen=True)
class InitEvent:
    """The `system/init` event: what the agent started with."""

    session_id: str | None
    model: str | None
    claude_code_version: str | None
    cwd: str | None
    tools: tuple[str, ...]
    mcp_servers: tuple[McpServerStatus, ...]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool_use block and the tool_result that answered it.

    Attributes:
        result_text: The result's text, or its first `RESULT_EXCERPT_CHARS` characters when it is
            longer; None when no tool_result came.
        result_chars: The full result's length (set from `result_text` when not given).
        result_line: The 1-based transcript line that carried the result, if parsed from a file.
        use_line: The 1-based transcript line that carried the tool_use (with `result_line` and the
            timing sidecar it gives the call's duration).
        watched_hits: Which of the parse's `watch` substrings occur in the full result.
        watched: The substrings the parse looked for (so `contains` can tell "no" from "not asked").
    """

    id: str
    name: str
    input: dict
    result_text: str | None
    is_error: bool
    result_chars: int = -1
    result_line: int | None = None
    watched_hits: frozenset[str] = frozenset()
    watched: frozenset[str] = frozenset()
    use_line: int | None = None

    def __post_init__(self) -> None:
        if self.result_chars < 0:
            object.__setattr__(self, "result_chars", len(self.result_text) if self.result_text is not None else 0)

    @property
    def result_truncated(self) -> bool:
        """True when `result_text` holds only the start of a longer result."""
        return self.result_text is not None and self.result_chars > len(self.result_text)

    def contains(self, text: str) -> bool:
        """Whether the full result contains `text` (a substring, case-sensitive).

        Raises:
            ValueError: The result was cut and `text` was not watched while parsing, so the
                answer would be a guess; parse with `watch=` including it.
        """
        if self.result_text is None:
            return False
        if not self.result_truncated:
            return text in self.result_text
        if text in self.watched:
            return text in self.watched_hits
        raise ValueError(f"the result of {self.id} was cut to {len(self.result_text)} characters and {text!r} was not watched while parsing")


@dataclass(frozen=True)
class PermissionDenial:
    """One entry of `result.permission_denials`."""

    tool_name: str
    tool_use_id: str | None
    tool_input: dict


@dataclass(frozen=True)
class ResultEvent:
    """The final `result` event."""

    subtype: str
    is_error: bool
    num_turns: int | None
    result: str | None
    total_cost_usd: float | None
    usage: dict[str, int]
    duration_ms: int | None
    api_error_status: int | None
    permission_denials: tuple[PermissionDenial, ...]
    errors: tuple[str, ...]


@dataclass(frozen=True)
class AgentReport:
    """One `system/agentbench_report` event: what an agent of this project reported (`kind`, sentence, turn, the rest, its line)."""

    kind: str
    message: str
    turn: int | None
    data: dict
    line: int | None = None


@dataclass(frozen=True)
class UnparseableLine:
    """A line that is not a stream-json event, with its 1-based number and why."""

    line_number: int
    text: str
    reason: str


class LineEvent(NamedTuple):
    """One event line's place in the run's timeline (what `audit.timing` needs, nothing more).

    A named tuple, not a dataclass: one is made per line, and a frozen dataclass's constructor
    costs several times as much.

    Attributes:
        line: Its 1-based line number (the key of the timing sidecar's rows).
        kind: `init`, `assistant`, `user`, `result`, or another event type as written.
        opened: Ids of the tool_use blocks it carries.
        answered: `tool_use_id`s of the tool_result blocks it carries.
    """

    line: int
    kind: str
    opened: tuple[str, ...] = ()
    answered: tuple[str, ...] = ()


class Timeline(Sequence[LineEvent]):
    """Every event line in stream order, stored in flat arrays (a LineEvent is made when asked for).

    A run of 36,000 small tool calls has 73,000 lines; as LineEvent tuples they held 11 MB, here
    about 2.5 MB: a line number, a kind code and two offsets per line, and one reference per id.
    """

    __slots__ = ("_lines", "_kinds", "_kind_names", "_kind_codes", "_opened_end", "_answered_end", "_ids")

    def __init__(self, events: Iterable[LineEvent] = ()) -> None:
        self._lines = array("q")
        self._kinds = bytearray()
        self._kind_names: list[str] = []
        self._kind_codes: dict[str, int] = {}
        self._opened_end = array("q")
        self._answered_end = array("q")
        self._ids: list[str] = []
        for event in events:
            self.append(event.line, event.kind, event.opened, event.answered)

    def append(self, line: int, kind: str, opened: tuple[str, ...] = (), answered: tuple[str, ...] = ()) -> None:
        code = self._kind_codes.get(kind)
        if code is None:
            if len(self._kind_names) == 255:  # a stream of made-up event types: kinds past 255 share a name
                kind = "other"
                code = self._kind_codes.setdefault(kind, len(self._kind_names))
                if code == len(self._kind_names):
                    self._kind_names.append(kind)
            else:
                code = self._kind_codes[kind] = len(self._kind_names)
                self._kind_names.append(kind)
        self._lines.append(line)
        self._kinds.append(code)
        self._ids.extend(opened)
        self._opened_end.append(len(self._ids))
        self._ids.extend(answered)
        self._answered_end.append(len(self._ids))

    def __len__(self) -> int:
        return len(self._lines)

    def _event(self, index: int) -> LineEvent:
        start = self._answered_end[index - 1] if index else 0
        opened_end, answered_end = self._opened_end[index], self._answered_end[index]
        return LineEvent(self._lines[index], self._kind_names[self._kinds[index]],
                         tuple(self._ids[start:opened_end]), tuple(self._ids[opened_end:answered_end]))

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self._event(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("timeline index out of range")
        return self._event(index)

    def __iter__(self) -> Iterator[LineEvent]:
        return (self._event(index) for index in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(mine == theirs for mine, theirs in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Timeline({len(self)} lines)"


@dataclass(frozen=True)
class Transcript:
    """Everything the audit needs from one agent run's stdout."""

    init: InitEvent | None
    tool_calls: tuple[ToolCall, ...]
    final_text: str | None
    result: ResultEvent | None
    unparseable: tuple[UnparseableLine, ...]
    line_count: int
    observed_model: str | None
    reports: tuple[AgentReport, ...] = ()
    #: Every event line in stream order, for the time split.
    timeline: Sequence[LineEvent] = ()
    #: Result events after the first (`result` is the first: it decides; an error among these also counts).
    later_results: tuple[ResultEvent, ...] = ()


@lru_cache(maxsize=1024)  # the audit asks once per call; a run has a handful of names
def short_tool_name(name: str) -> str:
    """Drop the `mcp__<server>__` prefix of an MCP tool name.

    Args:
        name: A full tool name such as `mcp__agentbench__observe`, or a built-in name (`Bash`).

    Returns:
        The tool's own name (`observe`); built-in names come back unchanged.
    """
    if name.startswith("mcp__"):
        server_and_tool = name[len("mcp__"):]
        _, separator, tool = server_and_tool.partition("__")
        if separator and tool:
            return tool
    return name


def tool_result_text(content: Any) -> str:
    """Flatten a tool_result `content` (a string or a list of blocks) into text.

    Args:
        content: The `content` of a tool_result block as Claude Code writes it.

    Returns:
        The string itself, or the text blocks joined by newlines (other blocks such as
        `tool_reference` or images are named by their type in brackets so they are not lost).
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict):
                parts.append(f"[{block.get('type', 'block')}]")
            else:
                parts.append(str(block))
        return "\n".join(parts)
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False)


class _PendingCall(NamedTuple):
    """A tool_use whose result has not arrived yet."""

    id: str
    name: str
    input: dict[str, Any]
    use_line: int

    def unanswered(self, watch: frozenset[str]) -> ToolCall:
        return ToolCall(id=self.id, name=self.name, input=self.input, result_text=None, is_error=False,
                        result_chars=0, watched=watch, use_line=self.use_line)


@dataclass
class _Builder:
    """Mutable state while the stream is read; frozen into a Transcript at the end."""

    watch: frozenset[str] = frozenset()
    line_number: int = 0
    init: InitEvent | None = None
    # Every tool_use block, in stream order: an id used twice is two calls (a later call must not
    # hide an earlier one), and `audit.crosscheck` names the reuse.
    calls: list[ToolCall | _PendingCall] = field(default_factory=list)
    # Per id, the indexes in `calls` of its calls still waiting for a result (a result finds its
    # call without a scan). An id leaves once answered: a map of every call held 5 MB at the
    # peak of a run of 36,000 calls, for the rare result that answers an answered id.
    waiting: dict[str, list[int]] = field(default_factory=dict)
    # The latest index per id, over `calls[:latest_upto]`: built only when such a rare result comes.
    latest: dict[str, int] = field(default_factory=dict)
    latest_upto: int = 0
    # One string object per distinct tool name: 28,000 calls share a handful.
    names: dict[str, str] = field(default_factory=dict)
    inputs: dict[tuple[tuple[str, type, Any], ...], dict[str, Any]] = field(default_factory=dict)
    # One int object per distinct result length: a long run's results fall in a narrow range
    # (28,000 observe answers of 4-6 KB have 2,000 lengths), and each int past 256 is 32 bytes.
    result_sizes: dict[int, int] = field(default_factory=dict)
    result: ResultEvent | None = None
    later_results: list[ResultEvent] = field(default_factory=list)
    # The final answer as it stood at the first result event (what came after it does not count).
    text_at_result: str | None = None
    unparseable: list[UnparseableLine] = field(default_factory=list)
    reports: list[AgentReport] = field(default_factory=list)
    assistant_model: str | None = None
    # Claude Code splits one API message into one event per content block, all with the
    # same message id; the final answer is the text of the last message if it made no call.
    last_message_id: object = None
    last_message_texts: list[str] = field(default_factory=list)
    last_message_has_tool_use: bool = False
    timeline: Timeline = field(default_factory=Timeline)

    def add_event(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        opened: tuple[str, ...] = ()
        answered: tuple[str, ...] = ()
        if kind == "system" and event.get("subtype") == "init":
            kind = "init"
            if self.init is None:
                self.init = _init_event(event)
        elif kind == "system" and event.get("subtype") == AGENT_REPORT_SUBTYPE:
            self.reports.append(_agent_report(event, self.line_number))
        elif kind == "assistant":
            opened = self._add_assistant(event)
        elif kind == "user":
            answered = self._add_user(event)
        elif kind == "result":
            if self.result is None:
                self.result = _result_event(event)
                self.text_at_result = self._final_text()
            else:
                self.later_results.append(_result_event(event))
        self.timeline.append(self.line_number, kind, opened, answered)

    def _add_assistant(self, event: dict[str, Any]) -> tuple[str, ...]:
        message = event.get("message")
        if not isinstance(message, dict):
            return ()
        model = message.get("model")
        if self.assistant_model is None and isinstance(model, str) and model and model != SYNTHETIC_MODEL:
            self.assistant_model = model
        message_id = message.get("id")
        if message_id is None or message_id != self.last_message_id:
            self.last_message_id = message_id if message_id is not None else object()
            self.last_message_texts = []
            self.last_message_has_tool_use = False
        opened = []
        for block in _blocks(message.get("content")):
            block_type = block.get("type")
            if block_type == "text":
                self.last_message_texts.append(str(block.get("text", "")))
            elif block_type == "tool_use":
                self.last_message_has_tool_use = True
                call_id = str(block.get("id", f"#{len(self.calls)}"))
                tool_input = block.get("input")
                name = str(block.get("name", ""))
                self.waiting.setdefault(call_id, []).append(len(self.calls))
                self.calls.append(_PendingCall(
                    call_id,
                    self.names.setdefault(name, name),
                    self._shared_input(tool_input) if isinstance(tool_input, dict) else {},
                    self.line_number,
                ))
                opened.append(call_id)
        return tuple(opened)

    def _add_user(self, event: dict[str, Any]) -> tuple[str, ...]:
        message = event.get("message")
        if not isinstance(message, dict):
            return ()
        answered = []
        for block in _blocks(message.get("content")):
            if block.get("type") != "tool_result":
                continue
            call_id = str(block.get("tool_use_id"))
            index = self._call_for_result(call_id)
            if index is None:
                continue
            text = tool_result_text(block.get("content"))
            hits = frozenset(pattern for pattern in self.watch if pattern and pattern in text) if self.watch else _NO_HITS
            call = self.calls[index]
            size = len(text)
            # The ToolCall is made once, when its result arrives (a frozen dataclass costs more to
            # build than the rest of the event on a run of many small results).
            self.calls[index] = ToolCall(
                id=call.id, name=call.name, input=call.input,
                result_text=text[:RESULT_EXCERPT_CHARS], is_error=block.get("is_error") is True,
                result_chars=self.result_sizes.setdefault(size, size), result_line=self.line_number,
                watched_hits=hits or _NO_HITS, watched=self.watch, use_line=call.use_line,
            )
            answered.append(self.calls[index].id)  # the call's own string, not a second copy per result
        return tuple(answered)

    def _shared_input(self, tool_input: dict[str, Any]) -> dict[str, Any]:
        # Agents repeat the same small inputs ({"device": ...} on every observe): equal inputs of
        # scalar values share one dict, so a long run holds one per distinct input, not per call.
        if len(tool_input) > _SHARED_INPUT_KEYS:
            return tool_input
        try:
            # The value's type is part of the key: 1, 1.0 and True are equal in Python but are
            # different inputs (the relay cross-check compares them).
            key = tuple((name, type(value), value) for name, value in tool_input.items())
            return self.inputs.setdefault(key, tool_input)
        except TypeError:  # a list or dict value: not hashable, kept as it is
            return tool_input

    def _call_for_result(self, call_id: str) -> int | None:
        # The latest call with this id still waiting for its result; else the latest with the id.
        waiting = self.waiting.get(call_id)
        if waiting:
            index = waiting.pop()
            if not waiting:
                del self.waiting[call_id]
            return index
        for index in range(self.latest_upto, len(self.calls)):
            self.latest[self.calls[index].id] = index
        self.latest_upto = len(self.calls)
        return self.latest.get(call_id)

    def _final_text(self) -> str | None:
        if self.last_message_texts and not self.last_message_has_tool_use:
            return "\n".join(self.last_message_texts)
        return None

    def build(self, line_count: int) -> Transcript:
        final_text = self.text_at_result if self.result is not None else self._final_text()
        observed_model = self.assistant_model or (self.init.model if self.init else None)
        return Transcript(
            init=self.init,
            tool_calls=tuple(call.unanswered(self.watch) if isinstance(call, _PendingCall) else call for call in self.calls),
            final_text=final_text,
            result=self.result,
            unparseable=tuple(self.unparseable),
            line_count=line_count,
            observed_model=observed_model,
            reports=tuple(self.reports),
            timeline=self.timeline,
            later_results=tuple(self.later_results),
        )


def _blocks(content: Any) -> Iterator[dict[str, Any]]:
    if isinstance(content, list):
        yield from (block for block in content if isinstance(block, dict))


def _optional_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _optional_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _init_event(event: dict[str, Any]) -> InitEvent:
    servers = []
    for server in event.get("mcp_servers") or []:
        if isinstance(server, dict):
            servers.append(McpServerStatus(name=str(server.get("name", "")), status=str(server.get("status", ""))))
    tools = event.get("tools") or []
    return InitEvent(
        session_id=_optional_str(event.get("session_id")),
        model=_optional_str(event.get("model")),
        claude_code_version=_optional_str(event.get("claude_code_version")),
        cwd=_optional_str(event.get("cwd")),
        tools=tuple(str(tool) for tool in tools if isinstance(tool, str)),
        mcp_servers=tuple(servers),
    )


_REPORT_ENVELOPE = frozenset({"type", "subtype", "kind", "message", "turn", "session_id", "uuid"})


def _agent_report(event: dict[str, Any], line: int | None = None) -> AgentReport:
    return AgentReport(
        kind=str(event.get("kind", "")),
        message=str(event.get("message", "")),
        turn=_optional_int(event.get("turn")),
        data={key: value for key, value in event.items() if key not in _REPORT_ENVELOPE},
        line=line,
    )


def _result_event(event: dict[str, Any]) -> ResultEvent:
    usage_in = event.get("usage") if isinstance(event.get("usage"), dict) else {}
    usage = {key: usage_in[key] for key in USAGE_COUNTERS if _optional_int(usage_in.get(key)) is not None}
    denials = []
    for denial in event.get("permission_denials") or []:
        if isinstance(denial, dict):
            tool_input = denial.get("tool_input")
            denials.append(
                PermissionDenial(
                    tool_name=str(denial.get("tool_name", "")),
                    tool_use_id=_optional_str(denial.get("tool_use_id")),
                    tool_input=tool_input if isinstance(tool_input, dict) else {},
                )
            )
    cost = event.get("total_cost_usd")
    return ResultEvent(
        subtype=str(event.get("subtype", "")),
        is_error=event.get("is_error") is True,
        num_turns=_optional_int(event.get("num_turns")),
        result=_optional_str(event.get("result")),
        total_cost_usd=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
        usage=usage,
        duration_ms=_optional_int(event.get("duration_ms")),
        api_error_status=_optional_int(event.get("api_error_status")),
        permission_denials=tuple(denials),
        errors=tuple(str(error) for error in event.get("errors") or []),
    )


_DECODER = json.JSONDecoder()
_WHITESPACE = json.decoder.WHITESPACE


def _loads(raw: str | bytes) -> Any:
    """`json.loads` for one stream-json line, without its per-call encoding detection.

    Claude Code writes UTF-8; a UTF-8 byte-order mark is dropped as `json.loads` drops it, and the
    errors are json.loads' own (UnicodeDecodeError, JSONDecodeError with its message and column).
    """
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    if text.startswith("\ufeff"):
        if not isinstance(raw, bytes):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        text = text[1:]
    start = _WHITESPACE.match(text, 0).end()
    value, end = _DECODER.raw_decode(text, start)
    end = _WHITESPACE.match(text, end).end()
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


def _event_problem(value: Any) -> str:
    """Why a parsed JSON value is not a stream-json event ("" when it is one)."""
    if not isinstance(value, dict):
        return f"a JSON {type(value).__name__}, not an event object"
    if not isinstance(value.get("type"), str):
        return "an object without a string 'type'"
    return ""


def _shown(raw: str | bytes) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return text.strip()


def parse_lines(lines: Iterable[str | bytes], *, watch: Iterable[str] = ()) -> Transcript:
    """Read Claude Code stream-json (2.1.197 shapes) in one pass.

    Lines that are not events (invalid JSON, a JSON value that is not an object, an object
    without a `type`, a cut-off last line, bytes that are not UTF-8) are recorded in
    `unparseable` with their 1-based number; nothing is raised. Blank lines are skipped.

    Args:
        lines: The transcript's lines, with or without their line endings (a file object works).
        watch: Substrings to look for in every tool result while it streams past (the suite's
            failure patterns), so the audit can ask about them after the text is dropped.

    Returns:
        The typed transcript.
    """
    builder = _Builder(watch=frozenset(watch))
    line_number = 0
    saw_newline = False
    # One failed line is held back: only once the stream ends do we know it was the last
    # line, and a last line without its newline is a transcript cut off mid-write.
    pending_failure: tuple[int, str, str, bool] | None = None
    for raw in lines:
        line_number += 1
        if pending_failure is not None:
            builder.unparseable.append(UnparseableLine(*pending_failure[:3]))
            pending_failure = None
        has_newline = raw.endswith(b"\n" if isinstance(raw, bytes) else "\n")
        saw_newline = saw_newline or has_newline
        # json.loads takes the bytes and the surrounding whitespace as they are: no decoded or
        # stripped copy of a multi-megabyte line is made on the common path.
        try:
            value = _loads(raw)
        except UnicodeDecodeError as exc:
            builder.unparseable.append(UnparseableLine(line_number, repr(raw[:200]), f"not UTF-8: {exc.reason}"))
            continue
        except json.JSONDecodeError as exc:
            text = _shown(raw)
            if text:
                pending_failure = (line_number, text, f"invalid JSON: {exc.msg} at column {exc.colno}", has_newline)
            continue
        problem = _event_problem(value)
        if problem:
            pending_failure = (line_number, _shown(raw), problem, has_newline)
            continue
        builder.line_number = line_number
        builder.add_event(value)
    if pending_failure is not None:
        number, text, reason, has_newline = pending_failure
        if saw_newline and not has_newline and reason.startswith("invalid JSON"):
            reason = f"truncated last line ({reason})"
        builder.unparseable.append(UnparseableLine(number, text, reason))
    return builder.build(line_count=line_number)


def parse_file(path: str | Path, *, watch: Iterable[str] = ()) -> Transcript:
    """Parse a transcript file (for example a run's `claude.jsonl`) as a stream.

    Args:
        path: The file to read.
        watch: Substrings to look for in every full tool result (see `parse_lines`).

    Returns:
        The typed transcript.

    Raises:
        TranscriptError: The file cannot be opened.
    """
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise TranscriptError(f"cannot read transcript {path}: {exc.strerror}; was the agent started?") from exc
    with handle:
        return parse_lines(handle, watch=watch)


def read_result_text(path: str | Path, call: ToolCall) -> str | None:
    """The full text of a call's result, read back from the transcript file (for a cut excerpt).

    Args:
        path: The transcript the call was parsed from.
        call: A call parsed from it (its `result_line` says where to look).

    Returns:
        The full result text, or None when the call has no result or the line is not there.
    """
    if call.result_line is None:
        return call.result_text
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == call.result_line:
                event = json.loads(raw)
                for block in _blocks((event.get("message") or {}).get("content")):
                    if block.get("type") == "tool_result" and str(block.get("tool_use_id")) == call.id:
                        return tool_result_text(block.get("content"))
                return None
    return None
