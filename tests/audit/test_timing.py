"""Where the agent's time went (audit/timing.py): timeline + arrivals -> startup, model, tools, after result, per tool; from real stream shapes too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentbench.audit.timing import TimeSplit, ToolTime, time_split
from pytest_agentbench.audit.transcript import LineEvent, parse_file, parse_lines

INIT = LineEvent(1, "init")
NAMES = {"a": "mcp__agentbench__observe", "b": "mcp__agentbench__tapOn", "c": "mcp__agentbench__tapOn"}


def split(events: list[LineEvent], times: list[float], wall: float) -> TimeSplit | None:
    return time_split(events, dict(zip([event.line for event in events], times)), wall_clock_seconds=wall, tool_names=NAMES)


def parts(result: TimeSplit) -> tuple[float, float, float, float]:
    return (result.startup_seconds, result.model_seconds, result.tool_seconds, result.after_result_seconds)


CASES = [
    pytest.param(
        [INIT, LineEvent(2, "assistant", opened=("a",)), LineEvent(3, "user", answered=("a",)),
         LineEvent(4, "assistant"), LineEvent(5, "result")],
        [1.0, 3.0, 3.5, 6.0, 6.1], 7.0, (1.0, 4.6, 0.5, 0.9), id="one-call",
    ),
    pytest.param(
        # Two calls in one reply run side by side: 2 s of tool time, though the calls sum to 3 s.
        [INIT, LineEvent(2, "assistant", opened=("b", "c")), LineEvent(3, "user", answered=("b",)),
         LineEvent(4, "user", answered=("c",)), LineEvent(5, "assistant"), LineEvent(6, "result")],
        [0.5, 1.0, 2.0, 3.0, 4.0, 4.0], 4.0, (0.5, 1.5, 2.0, 0.0), id="parallel-calls",
    ),
    pytest.param(
        # No init event (a fake agent): the first stretch is model time.
        [LineEvent(1, "assistant"), LineEvent(2, "result")], [2.0, 2.5], 3.0, (0.0, 2.5, 0.0, 0.5), id="no-init",
    ),
    pytest.param(
        # A hung tool call: the agent was in the tool until the end.
        [INIT, LineEvent(2, "assistant", opened=("a",))], [1.0, 2.0], 10.0, (1.0, 1.0, 8.0, 0.0), id="hung-in-a-tool",
    ),
    pytest.param(
        # Silent after init until killed: the rest is waiting for the model.
        [INIT], [1.0], 5.0, (1.0, 4.0, 0.0, 0.0), id="silent-after-init",
    ),
    pytest.param(
        # Arrivals past the wall clock (a damaged sidecar) are clamped; the parts still add up.
        [INIT, LineEvent(2, "result")], [1.0, 9.0], 4.0, (1.0, 3.0, 0.0, 0.0), id="clamped",
    ),
]


@pytest.mark.parametrize(("events", "times", "wall", "expected"), CASES)
def test_split_partitions_the_wall_clock(events: list[LineEvent], times: list[float], wall: float, expected: tuple) -> None:
    result = split(events, times, wall)
    assert result is not None
    assert parts(result) == pytest.approx(expected)
    assert sum(parts(result)) == pytest.approx(wall)
    assert result.wall_clock_seconds == wall


def test_per_tool_count_total_median_and_unanswered() -> None:
    events = [
        INIT,
        LineEvent(2, "assistant", opened=("a",)), LineEvent(3, "user", answered=("a",)),
        LineEvent(4, "assistant", opened=("b",)), LineEvent(5, "user", answered=("b",)),
        LineEvent(6, "assistant", opened=("c",)),
    ]
    result = split(events, [0.0, 1.0, 1.5, 2.0, 4.0, 5.0], 6.0)
    assert result.tools == (
        ToolTime(tool="tapOn", count=2, total_seconds=2.0, median_seconds=2.0, unanswered=1),
        ToolTime(tool="observe", count=1, total_seconds=0.5, median_seconds=0.5, unanswered=0),
    )
    assert result.as_dict()["tools"][0] == {"tool": "tapOn", "count": 2, "totalSeconds": 2.0, "medianSeconds": 2.0, "unanswered": 1}


def test_a_result_for_an_unknown_call_is_ignored() -> None:
    result = split([INIT, LineEvent(2, "user", answered=("zzz",))], [1.0, 2.0], 3.0)
    assert result.tools == () and result.tool_seconds == 0.0


@pytest.mark.parametrize("arrivals", [None, {}], ids=["no-sidecar", "empty-sidecar"])
def test_without_arrivals_there_is_no_split(arrivals: dict | None) -> None:
    assert time_split([INIT], arrivals, wall_clock_seconds=3.0, tool_names={}) is None


def test_lines_the_sidecar_missed_are_merged_into_the_next_stretch() -> None:
    events = [INIT, LineEvent(2, "assistant", opened=("a",)), LineEvent(3, "user", answered=("a",)), LineEvent(4, "result")]
    result = time_split(events, {1: 1.0, 3: 2.0, 4: 3.0}, wall_clock_seconds=3.0, tool_names=NAMES)
    # The tool_use line has no time: its call is never seen open, so there is no tool time.
    assert parts(result) == pytest.approx((1.0, 2.0, 0.0, 0.0))


def test_the_timeline_of_a_real_claude_code_transcript() -> None:
    path = Path(__file__).parents[1] / "data" / "claude-code-stream"
    transcript = next(parse_file(p) for p in sorted(path.glob("*.jsonl")) if parse_file(p).tool_calls)
    kinds = [event.kind for event in transcript.timeline]
    assert kinds[0] == "init" and kinds[-1] == "result" and "assistant" in kinds and "user" in kinds
    opened = [call for event in transcript.timeline for call in event.opened]
    answered = [call for event in transcript.timeline for call in event.answered]
    assert opened == [call.id for call in transcript.tool_calls]
    assert set(answered) <= set(opened)
    arrivals = {event.line: float(index) for index, event in enumerate(transcript.timeline, start=1)}
    result = time_split(transcript.timeline, arrivals, wall_clock_seconds=len(arrivals) + 1.0,
                        tool_names={call.id: call.name for call in transcript.tool_calls})
    assert sum(parts(result)) == pytest.approx(len(arrivals) + 1.0)
    assert sum(tool.count for tool in result.tools) == len(transcript.tool_calls)


def test_timeline_line_numbers_skip_lines_that_are_not_events() -> None:
    lines = [
        json.dumps({"type": "system", "subtype": "init", "mcp_servers": []}) + "\n",
        "garbage\n",
        "\n",
        json.dumps({"type": "assistant", "message": {"id": "m", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]}}) + "\n",
        json.dumps({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}}) + "\n",
        json.dumps({"type": "system", "subtype": "init"}) + "\n",
    ]
    transcript = parse_lines(lines)
    assert transcript.timeline == (
        LineEvent(1, "init"), LineEvent(4, "assistant", opened=("t",)), LineEvent(5, "user", answered=("t",)), LineEvent(6, "init"),
    )


def test_model_call_reports_become_timing_rows() -> None:
    from pytest_agentbench.audit.timing import model_calls
    from pytest_agentbench.audit.transcript import AgentReport

    reports = [
        AgentReport("model-call", "call 1", 1, {"started_at": "2026-12-01T00:00:00.000Z", "duration_ms": 250, "prompt_tokens": 1000,
                                                "completion_tokens": 20, "finish_reason": "tool_calls", "retries": []}, line=3),
        AgentReport("action", "tap(index=1)", 1, {}, line=4),
        AgentReport("model-call", "call 2", 2, {"duration_ms": 4000, "prompt_tokens": None, "completion_tokens": None,
                                                "finish_reason": "length", "retries": [{"status": 429, "wait_s": 0.2}]}, line=9),
    ]
    rows = model_calls(reports, {3: 1.5, 9: 3.0})
    assert [(r["turn"], r["startSeconds"], r["durationSeconds"], r["promptTokens"], r["finishReason"]) for r in rows] == [
        (1, 1.25, 0.25, 1000, "tool_calls"), (2, 0.0, 4.0, None, "length")]
    assert rows[1]["retries"] == [{"status": 429, "wait_s": 0.2}]
    assert model_calls(reports, None)[0]["startSeconds"] is None
