"""A transcript's timeline + each line's arrival time -> where the agent's time went: startup, model, tools (per tool), after the result.

Pure: the arrivals come from the runner's timing sidecar (`run/stream.py` writes and reads it).
The split is a partition of the agent's wall clock, walked in arrival order:

* startup: from the agent's start to its `init` event (the CLI and its MCP servers starting);
  a stream without an init event has none, its first stretch is model time;
* tools: while at least one tool_use has no tool_result yet (parallel calls count once here;
  each call's own duration, tool_use to tool_result, goes into its tool's row);
* model: everything else before the `result` event: from the start (or init, or a tool result)
  to the next assistant event, and between the assistant events of one reply;
* after result: from the `result` event to the end of the process (a CLI that lingers).

An agent that reports each model call (agentbench-agent's `model-call` reports) gets the calls
listed too (`modelCalls`): when each started (seconds since the agent's start, from the report's
arrival minus its duration), how long it took, its tokens (None: unknown), finish reason, retries.
The timing sidecar carries the same rows for a reader of the sidecar alone (`run.stream`
writes one after each model-call report's arrival; `read_model_calls` reads them back).

The stretch after the last line up to the wall clock belongs to the state the run was in (a
hung tool call is tool time). So the four parts add up to the wall clock by construction.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.audit.transcript import AgentReport, LineEvent, short_tool_name

#: The report kind an agent writes after each model call (agents/model/agent.py).
MODEL_CALL_REPORT = "model-call"


@dataclass(frozen=True)
class ToolTime:
    """One tool's calls: how many, and how long the answered ones took (tool_use to tool_result)."""

    tool: str
    count: int
    total_seconds: float
    median_seconds: float | None
    unanswered: int


@dataclass(frozen=True)
class TimeSplit:
    """Where one run's agent time went; the four parts add up to `wall_clock_seconds`."""

    wall_clock_seconds: float
    startup_seconds: float
    model_seconds: float
    tool_seconds: float
    after_result_seconds: float
    tools: tuple[ToolTime, ...]
    model_calls: tuple[dict[str, Any], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The result.json shape (`timing.agent`)."""
        return {
            "wallClockSeconds": self.wall_clock_seconds,
            "startupSeconds": self.startup_seconds,
            "modelSeconds": self.model_seconds,
            "toolSeconds": self.tool_seconds,
            "afterResultSeconds": self.after_result_seconds,
            "tools": [
                {"tool": t.tool, "count": t.count, "totalSeconds": t.total_seconds,
                 "medianSeconds": t.median_seconds, "unanswered": t.unanswered}
                for t in self.tools
            ],
            **({"modelCalls": [dict(call) for call in self.model_calls]} if self.model_calls else {}),
        }


def time_split(
    timeline: Iterable[LineEvent],
    arrivals: Mapping[int, float] | None,
    *,
    wall_clock_seconds: float,
    tool_names: Mapping[str, str],
    reports: Iterable[AgentReport] = (),
) -> TimeSplit | None:
    """Split an agent run's wall clock by what it was waiting for.

    Args:
        timeline: The transcript's event lines in stream order (`Transcript.timeline`).
        arrivals: Line number -> seconds since the agent's start (the timing sidecar); None or
            empty for a run without one (older runs), which gets no split.
        wall_clock_seconds: The agent's wall clock (`ProcessOutcome.wall_clock_seconds`).
        tool_names: tool_use id -> full tool name (from `Transcript.tool_calls`).
        reports: The agent's reports (`Transcript.reports`); its `model-call` ones become `modelCalls`.

    Returns:
        The split, or None without arrival times.
    """
    if not arrivals:
        return None
    wall = max(0.0, float(wall_clock_seconds))
    events = [event for event in timeline if event.line in arrivals]
    buckets = {"startup": 0.0, "model": 0.0, "tools": 0.0, "after": 0.0}
    started_at: dict[str, float] = {}
    durations: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    in_startup = any(event.kind == "init" for event in events)
    result_seen = False
    previous = 0.0

    def bucket() -> str:
        if result_seen:
            return "after"
        if started_at:
            return "tools"
        return "startup" if in_startup else "model"

    for event in events:
        # Arrivals only grow; clamping keeps a damaged sidecar from making a part negative.
        now = min(max(arrivals[event.line], previous), wall)
        buckets[bucket()] += now - previous
        previous = now
        if event.kind == "init":
            in_startup = False
        for call_id in event.opened:
            name = short_tool_name(tool_names.get(call_id, "?"))
            counts[name] = counts.get(name, 0) + 1
            started_at.setdefault(call_id, now)
            in_startup = False
        for call_id in event.answered:
            if call_id in started_at:
                name = short_tool_name(tool_names.get(call_id, "?"))
                durations.setdefault(name, []).append(now - started_at.pop(call_id))
        if event.kind == "assistant":
            in_startup = False
        elif event.kind == "result":
            result_seen = True
    buckets[bucket()] += wall - previous
    unanswered: dict[str, int] = {}
    for call_id in started_at:
        name = short_tool_name(tool_names.get(call_id, "?"))
        unanswered[name] = unanswered.get(name, 0) + 1
    tools = tuple(
        ToolTime(
            tool=name,
            count=count,
            total_seconds=_round(sum(durations.get(name, ()))),
            median_seconds=_round(statistics.median(durations[name])) if durations.get(name) else None,
            unanswered=unanswered.get(name, 0),
        )
        for name, count in sorted(counts.items(), key=lambda item: (-sum(durations.get(item[0], ())), item[0]))
    )
    return TimeSplit(
        wall_clock_seconds=_round(wall),
        startup_seconds=_round(buckets["startup"]),
        model_seconds=_round(buckets["model"]),
        tool_seconds=_round(buckets["tools"]),
        after_result_seconds=_round(buckets["after"]),
        tools=tools,
        model_calls=model_calls(reports, arrivals),
    )


def model_calls(reports: Iterable[AgentReport], arrivals: Mapping[int, float] | None) -> tuple[dict[str, Any], ...]:
    """The agent's `model-call` reports -> one timing row per call (start from the report's arrival when timed)."""
    rows = []
    for report in reports:
        if report.kind != MODEL_CALL_REPORT:
            continue
        data = report.data
        duration = data.get("duration_ms")
        seconds = duration / 1000 if isinstance(duration, (int, float)) and not isinstance(duration, bool) else None
        arrived = arrivals.get(report.line) if arrivals and report.line is not None else None
        rows.append({
            "turn": report.turn,
            "startedAt": data.get("started_at"),
            "startSeconds": _round(max(arrived - seconds, 0.0)) if arrived is not None and seconds is not None else None,
            "durationSeconds": _round(seconds) if seconds is not None else None,
            "promptTokens": data.get("prompt_tokens"),
            "completionTokens": data.get("completion_tokens"),
            "finishReason": data.get("finish_reason"),
            "retries": list(data.get("retries") or []),
        })
    return tuple(rows)


def _round(value: float) -> float:
    return round(value, 3)
