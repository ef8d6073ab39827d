"""The agent's stdout pipe -> claude.jsonl written as it arrives, a timing sidecar, and what the runner watches (last output, the result event, tool calls so far).

A reader thread copies every chunk to the transcript file the moment it arrives (a crash of
pytest or of the agent keeps everything streamed so far) and stamps each completed line with its
arrival time in `claude.timing.jsonl`. It looks at lines only as far as it must, without parsing
the stream: the event type (from the head of the line), and in assistant lines the number of
`tool_use` blocks. The audit, not this module, reads the transcript properly.

Sidecar format (`claude.timing.jsonl`), one JSON value per line:

    {"format": "agentbench-stream-timing", "version": 2, "clock": "...", "row": "...", "modelCallRow": "..."}
    [1, 0.8421]
    [2, 2.1030]
    {"modelCall": 1, "line": 2, "startSeconds": 1.853, "durationSeconds": 0.25, "promptTokens": 1000, ...}

Each list row is `[line number in claude.jsonl (1-based, as the transcript parser counts), seconds
from the agent's start (time.monotonic) to the moment the line's last byte arrived]`. An agent
that reports its model calls (agentbench-agent's `model-call` reports) gets an object row after
each report's own row: the call's number, the report's line, when the call started on this
clock (the report's arrival minus the call's duration), its duration, tokens (null: unknown),
finish reason and retries (each `{status, wait_s, error}`). Version 1 sidecars have no object
rows; `read_arrivals` reads both versions and skips object rows.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import IO

TIMING_FORMAT = "agentbench-stream-timing"
TIMING_VERSION = 2
TIMING_HEADER = {
    "format": TIMING_FORMAT,
    "version": TIMING_VERSION,
    "clock": "seconds since the agent process was started (time.monotonic)",
    "row": "[line number in claude.jsonl, arrival seconds of the line's last byte]",
    "modelCallRow": "{modelCall, line, startSeconds, durationSeconds, promptTokens, completionTokens, finishReason, retries}"
                    " after an agent's model-call report",
}

_CHUNK = 1 << 16
# Only this much of a line is kept to learn its type; a line longer than _KEEP is not kept
# whole (tool results can be megabytes), so its tool_use blocks are not counted live.
_HEAD = 256
_KEEP = 1 << 20
_TYPE_FIRST = re.compile(rb'\s*\{\s*"type"\s*:\s*"([A-Za-z_]+)"')
# A tool_use content block. Inside a JSON string quotes are escaped, so this only matches the
# stream's own structure, never text an agent or a tool wrote.
_TOOL_USE = re.compile(rb'"type"\s*:\s*"tool_use"')
# An agent's model-call report (`audit.transcript.AGENT_REPORT_SUBTYPE`, kind `model-call`; this
# stage sits below the audit, so the names are spelled here). Only a line that has both is parsed.
_AGENT_REPORT = re.compile(rb'"subtype"\s*:\s*"agentbench_report"')
_MODEL_CALL = re.compile(rb'"kind"\s*:\s*"model-call"')
# Signals go to the main thread, where pytest and the runner handle them.
_MAIN_THREAD_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def block_main_thread_signals() -> None:
    """Block SIGINT/SIGTERM/SIGHUP in the calling (non-main) thread, so the kernel delivers them to the main thread."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _MAIN_THREAD_SIGNALS)


class StreamRecorder:
    """Reads the agent's stdout in a thread: transcript file, timing sidecar, live counters.

    The counters are read by the runner's thread while this one writes them; each is a single
    attribute assignment, so a reader sees an old or a new value, never a torn one.

    Attributes:
        lines: Completed lines so far.
        bytes: Bytes received so far.
        tool_calls: `tool_use` blocks seen in assistant lines so far.
        last_output_at: Seconds since the start when the last byte arrived (None before any).
        result_at: Seconds since the start when the first `result` event arrived (None before).
    """

    def __init__(self, fd: int, transcript: Path, timing: Path | None, *, started: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """Prepare a recorder; `start()` begins reading.

        Args:
            fd: The read end of the agent's stdout pipe (the recorder closes it when done).
            transcript: Where the stream goes (`claude.jsonl`), created or truncated.
            timing: Where the timing sidecar goes, or None for none.
            started: The `clock()` value at the agent's start (the sidecar's zero).
            clock: The monotonic clock (tests pass their own).
        """
        self.lines = 0
        self.bytes = 0
        self.tool_calls = 0
        self.last_output_at: float | None = None
        self.result_at: float | None = None
        self.error: BaseException | None = None
        self._fd = fd
        self._transcript = transcript
        self._timing = timing
        self._started = started
        self._clock = clock
        self._line = bytearray()  # the current line's bytes so far (up to _KEEP)
        self._line_length = 0
        self._stop_at: float | None = None
        self._eof = False
        self._thread = threading.Thread(target=self._run, name="agentbench-stream", daemon=True)

    def start(self) -> StreamRecorder:
        self._thread.start()
        return self

    def finish(self, timeout_s: float) -> bool:
        """Read what is left and stop, within `timeout_s`.

        Normally the pipe reaches end of file as soon as the agent's group is gone. A process that
        left the group and kept the pipe open (a detached daemon) must not keep the run waiting:
        after `timeout_s` the recorder stops reading and closes its end.

        Returns:
            True when the stream ended (end of file), False when it was cut off.
        """
        self._stop_at = self._clock() + timeout_s
        self._thread.join(timeout_s + 1.0)
        return not self._thread.is_alive() and self._eof

    # ------------------------------------------------------------------ the thread

    def _run(self) -> None:
        block_main_thread_signals()
        try:
            with open(self._transcript, "wb", buffering=0) as out, self._open_timing() as timing:
                if timing is not None:
                    timing.write(json.dumps(TIMING_HEADER) + "\n")
                self._copy(out, timing)
        except BaseException as exc:  # noqa: BLE001 - reported to the runner, which owns the run
            self.error = exc
        finally:
            os.close(self._fd)

    def _open_timing(self) -> IO[str] | nullcontext:
        if self._timing is None:
            return nullcontext()
        return open(self._timing, "w", encoding="utf-8", buffering=1 << 16)

    def _copy(self, out: IO[bytes], timing: IO[str] | None) -> None:
        arrived = 0.0
        # poll, not select: a long session's descriptors can be numbered past select's 1024.
        poller = select.poll()
        poller.register(self._fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        while True:
            if self._stop_at is not None and self._clock() > self._stop_at:
                break
            if not poller.poll(100):
                continue
            data = os.read(self._fd, _CHUNK)
            if not data:
                self._eof = True
                break
            arrived = round(self._clock() - self._started, 4)
            view = memoryview(data)
            while view:
                written = out.write(view)
                view = view[written:]
            self.bytes += len(data)
            self.last_output_at = arrived
            self._scan(data, arrived, timing)
            if timing is not None:
                timing.flush()
        if self._line_length:
            # A last line without its newline (a truncated stream) is still a line.
            self._end_line(b"", arrived, timing)
            if timing is not None:
                timing.flush()

    def _scan(self, data: bytes, arrived: float, timing: IO[str] | None) -> None:
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                rest = data[start:]
                if rest:
                    self._keep(rest)
                return
            self._end_line(data[start:end], arrived, timing)
            start = end + 1

    def _keep(self, part: bytes) -> None:
        room = _KEEP + 1 - len(self._line)
        if room > 0:
            self._line += part[:room]
        self._line_length += len(part)

    def _end_line(self, tail: bytes, arrived: float, timing: IO[str] | None) -> None:
        if self._line_length:
            self._keep(tail)
            line, length = bytes(self._line), self._line_length
            self._line.clear()
            self._line_length = 0
        else:
            line, length = tail, len(tail)
        self.lines += 1
        if timing is not None:
            timing.write(f"[{self.lines},{arrived}]\n")
        kind = _event_type(line, whole=length <= _KEEP)
        if kind == "assistant" and length <= _KEEP:
            self.tool_calls += len(_TOOL_USE.findall(line))
        elif kind == "result" and self.result_at is None:
            self.result_at = arrived
        elif kind == "system" and length <= _KEEP and timing is not None and _MODEL_CALL.search(line) and _AGENT_REPORT.search(line):
            row = model_call_row(line, self.lines, arrived)
            if row is not None:
                timing.write(json.dumps(row) + "\n")


def _event_type(line: bytes, *, whole: bool) -> str | None:
    """The `type` of one stream line, cheaply: from its head when `type` comes first, else by parsing it if it was kept whole."""
    match = _TYPE_FIRST.match(line, 0, _HEAD)
    if match:
        return match.group(1).decode("ascii")
    if not whole or not line.strip():
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def model_call_row(line: bytes, number: int, arrived: float) -> dict[str, object] | None:
    """One model-call report line -> its sidecar row (None when the line is not such a report after all)."""
    try:
        report = json.loads(line)
    except ValueError:
        return None
    if not isinstance(report, dict) or report.get("subtype") != "agentbench_report" or report.get("kind") != "model-call":
        return None
    duration_ms = _number(report.get("duration_ms"))
    duration = None if duration_ms is None else round(duration_ms / 1000, 4)
    retries = report.get("retries")
    return {
        "modelCall": _count(report.get("call")),
        "line": number,
        "startSeconds": None if duration is None else round(max(arrived - duration, 0.0), 4),
        "durationSeconds": duration,
        "promptTokens": _count(report.get("prompt_tokens")),
        "completionTokens": _count(report.get("completion_tokens")),
        "finishReason": report.get("finish_reason") if isinstance(report.get("finish_reason"), str) else None,
        "retries": [retry for retry in retries if isinstance(retry, dict)] if isinstance(retries, list) else [],
    }


def read_model_calls(path: Path) -> list[dict[str, object]] | None:
    """A timing sidecar's model-call rows, in stream order; None when there is no sidecar (a version 1 one has none: [])."""
    try:
        handle = open(path, encoding="utf-8")
    except OSError:
        return None
    with handle:
        header = _json_or_none(handle.readline())
        if not isinstance(header, dict) or header.get("format") != TIMING_FORMAT:
            return None
        return [row for row in map(_json_or_none, handle) if isinstance(row, dict) and "modelCall" in row]


def read_arrivals(path: Path) -> dict[int, float] | None:
    """A timing sidecar -> line number -> arrival seconds; None when there is no sidecar.

    Rows that do not parse (the last row of a run that was killed mid-write) are skipped, so
    a damaged sidecar gives a split over the lines it does time; model-call rows are not arrivals
    (`read_model_calls` reads them).

    Args:
        path: The run's `claude.timing.jsonl`.

    Returns:
        The arrivals, or None when the file does not exist or is not a timing sidecar.
    """
    try:
        handle = open(path, encoding="utf-8")
    except OSError:
        return None
    arrivals: dict[int, float] = {}
    with handle:
        header = _json_or_none(handle.readline())
        if not isinstance(header, dict) or header.get("format") != TIMING_FORMAT:
            return None
        for text in handle:
            row = _json_or_none(text)
            if (isinstance(row, list) and len(row) == 2 and isinstance(row[0], int)
                    and isinstance(row[1], (int, float)) and not isinstance(row[1], bool)):
                arrivals[row[0]] = float(row[1])
    return arrivals


def _json_or_none(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None
