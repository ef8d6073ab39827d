"""The stream recorder: a pipe -> claude.jsonl byte for byte, one timing row per line, the event types and tool_use counts it watches; the sidecar reader."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from pytest_agentbench.run.stream import TIMING_HEADER, StreamRecorder, model_call_row, read_arrivals, read_model_calls

INIT = b'{"type":"system","subtype":"init","session_id":"s"}\n'
TWO_CALLS = (b'{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"a","name":"x","input":{}},'
             b'{"type": "tool_use", "id": "b", "name": "y", "input": {"text": "\\"type\\": \\"tool_use\\""}}]}}\n')
# Claude Code 2.1.332 writes the result event with `type` last.
RESULT_TYPE_LAST = b'{"duration_api_ms":123,"stop_reason":"end_turn","subtype":"success","type":"result"}\n'
TOOL_RESULT = b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a","content":"\\"type\\":\\"tool_use\\""}]}}\n'


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def record(tmp_path: Path, chunks: list[tuple[float, bytes]]) -> tuple[StreamRecorder, bytes, dict[int, float] | None]:
    """Feed chunks (at their clock times) through a real pipe and finish."""
    read_fd, write_fd = os.pipe()
    clock = Clock()
    transcript, timing = tmp_path / "claude.jsonl", tmp_path / "claude.timing.jsonl"
    recorder = StreamRecorder(read_fd, transcript, timing, started=100.0, clock=clock).start()
    for at, data in chunks:
        # Let the reader take each chunk at its own time: wait until it counted the bytes.
        expected = recorder.bytes + len(data)
        clock.now = 100.0 + at
        os.write(write_fd, data)
        deadline = time.monotonic() + 30
        while recorder.bytes < expected:
            assert time.monotonic() < deadline, "the recorder never read the chunk"
            time.sleep(0.001)
    os.close(write_fd)
    assert recorder.finish(5.0)
    assert recorder.error is None
    return recorder, transcript.read_bytes(), read_arrivals(timing)


def test_lines_split_across_chunks_are_timed_when_they_end(tmp_path: Path) -> None:
    line = TWO_CALLS
    recorder, data, arrivals = record(tmp_path, [(0.5, INIT + line[:10]), (1.0, line[10:40]), (2.0, line[40:] + RESULT_TYPE_LAST)])
    assert data == INIT + TWO_CALLS + RESULT_TYPE_LAST
    assert arrivals == {1: 0.5, 2: 2.0, 3: 2.0}
    assert recorder.lines == 3
    # Two tool_use blocks; the quoted "type": "tool_use" inside an input string is not one.
    assert recorder.tool_calls == 2
    assert recorder.result_at == 2.0
    assert recorder.last_output_at == 2.0


def test_tool_results_quoting_tool_use_are_not_counted(tmp_path: Path) -> None:
    recorder, _, _ = record(tmp_path, [(0.1, TOOL_RESULT * 3)])
    assert recorder.tool_calls == 0 and recorder.lines == 3


@pytest.mark.parametrize(
    ("stream", "result_line"),
    [
        (INIT + RESULT_TYPE_LAST, 2),
        (INIT + b'{"type": "result", "subtype": "success"}\n', 2),
        (INIT + b'{"result": "text", "type": "assistant"}\n', None),
        (INIT + b'not json with "type":"result" in it\n', None),
    ],
    ids=["type-last", "type-first-spaced", "result-key-is-not-the-type", "garbage"],
)
def test_the_result_event_is_recognised_by_its_type(tmp_path: Path, stream: bytes, result_line: int | None) -> None:
    recorder, _, arrivals = record(tmp_path, [(1.5, stream)])
    assert recorder.result_at == (arrivals[result_line] if result_line else None)


def test_a_last_line_without_newline_is_still_a_line(tmp_path: Path) -> None:
    recorder, data, arrivals = record(tmp_path, [(0.2, INIT), (0.7, b'{"type":"result","sub')])
    assert data.endswith(b'"sub') and recorder.lines == 2
    assert arrivals == {1: 0.2, 2: 0.7}
    assert recorder.result_at == 0.7


def test_a_huge_line_is_copied_whole_but_not_kept(tmp_path: Path) -> None:
    huge = b'{"type":"user","message":{"content":"' + b"x" * 3_000_000 + b'"}}\n'
    recorder, data, arrivals = record(tmp_path, [(0.1, INIT), (0.3, huge[:1_500_000]), (0.9, huge[1_500_000:] + TWO_CALLS)])
    assert data == INIT + huge + TWO_CALLS
    assert arrivals == {1: 0.1, 2: 0.9, 3: 0.9}
    assert recorder.tool_calls == 2
    assert len(recorder._line) == 0


def test_the_sidecar_starts_with_its_header(tmp_path: Path) -> None:
    record(tmp_path, [(0.1, INIT)])
    lines = (tmp_path / "claude.timing.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == TIMING_HEADER
    assert lines[1:] == ["[1,0.1]"]


def test_an_empty_stream_has_no_rows(tmp_path: Path) -> None:
    recorder, data, arrivals = record(tmp_path, [])
    assert data == b"" and arrivals == {} and recorder.last_output_at is None


def test_finish_stops_reading_a_pipe_someone_keeps_open(tmp_path: Path) -> None:
    read_fd, write_fd = os.pipe()
    recorder = StreamRecorder(read_fd, tmp_path / "claude.jsonl", None, started=0.0).start()
    try:
        os.write(write_fd, INIT)
        assert recorder.finish(0.3) is False
        assert (tmp_path / "claude.jsonl").read_bytes() == INIT
    finally:
        os.close(write_fd)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (json.dumps(TIMING_HEADER) + "\n[1,0.5]\n[2,1.25]\n", {1: 0.5, 2: 1.25}),
        (json.dumps(TIMING_HEADER) + "\n[1,0.5]\n[2,1.2", {1: 0.5}),
        (json.dumps(TIMING_HEADER) + '\n[1,0.5]\n{"x": 1}\n["2", 1]\n[3, true]\n[4, 2]\n', {1: 0.5, 4: 2.0}),
        ('{"format": "something-else"}\n[1,0.5]\n', None),
        ("", None),
    ],
    ids=["rows", "cut-mid-row", "foreign-rows-skipped", "not-a-sidecar", "empty-file"],
)
def test_read_arrivals(tmp_path: Path, text: str, expected: dict | None) -> None:
    path = tmp_path / "claude.timing.jsonl"
    path.write_text(text, encoding="utf-8")
    assert read_arrivals(path) == expected


def test_read_arrivals_without_a_sidecar(tmp_path: Path) -> None:
    assert read_arrivals(tmp_path / "claude.timing.jsonl") is None


def _model_call(call: int, duration_ms: int, **data: object) -> bytes:
    """A model-call report line as agentbench-agent writes it (agents/stream.py StreamWriter.report)."""
    event = {"type": "system", "subtype": "agentbench_report", "kind": "model-call", "turn": call, "message": f"model call {call}",
             "call": call, "started_at": "2026-12-01T00:00:00.000Z", "duration_ms": duration_ms, **data, "session_id": "s", "uuid": "u"}
    return json.dumps(event).encode() + b"\n"


def test_each_model_call_report_gets_a_row_of_its_own_after_its_arrival(tmp_path: Path) -> None:
    first = _model_call(1, 250, prompt_tokens=1000, completion_tokens=20, finish_reason="tool_calls",
                        retries=[{"status": 429, "wait_s": 0.2, "error": "slow down"}])
    unknown = _model_call(2, 4000, prompt_tokens=None, completion_tokens=None, finish_reason="length", retries=[])
    # A report of another kind, and a tool result quoting a model-call report, get no row.
    other = b'{"type":"system","subtype":"agentbench_report","kind":"recovery","message":"m"}\n'
    quoted = b'{"type":"user","message":{"content":"\\"subtype\\": \\"agentbench_report\\", \\"kind\\": \\"model-call\\""}}\n'
    recorder, _, arrivals = record(tmp_path, [(0.5, INIT), (1.0, first), (1.2, other + quoted), (6.0, unknown)])
    assert arrivals == {1: 0.5, 2: 1.0, 3: 1.2, 4: 1.2, 5: 6.0} and recorder.lines == 5
    calls = read_model_calls(tmp_path / "claude.timing.jsonl")
    assert calls == [
        {"modelCall": 1, "line": 2, "startSeconds": 0.75, "durationSeconds": 0.25, "promptTokens": 1000, "completionTokens": 20,
         "finishReason": "tool_calls", "retries": [{"status": 429, "wait_s": 0.2, "error": "slow down"}]},
        {"modelCall": 2, "line": 5, "startSeconds": 2.0, "durationSeconds": 4.0, "promptTokens": None, "completionTokens": None,
         "finishReason": "length", "retries": []},
    ]
    rows = (tmp_path / "claude.timing.jsonl").read_text(encoding="utf-8").splitlines()
    assert rows[2] == "[2,1.0]" and json.loads(rows[3])["modelCall"] == 1


def test_a_version_1_sidecar_has_arrivals_and_no_model_calls(tmp_path: Path) -> None:
    old = tmp_path / "claude.timing.jsonl"
    old.write_text(json.dumps({"format": "agentbench-stream-timing", "version": 1}) + "\n[1,0.5]\n", encoding="utf-8")
    assert read_arrivals(old) == {1: 0.5} and read_model_calls(old) == []
    assert read_model_calls(tmp_path / "missing.jsonl") is None


def test_the_recorder_spells_the_transcript_parsers_report_subtype() -> None:
    from pytest_agentbench.audit.timing import MODEL_CALL_REPORT
    from pytest_agentbench.audit.transcript import AGENT_REPORT_SUBTYPE

    line = json.dumps({"type": "system", "subtype": AGENT_REPORT_SUBTYPE, "kind": MODEL_CALL_REPORT, "duration_ms": 1}).encode()
    assert model_call_row(line, 1, 1.0) is not None
