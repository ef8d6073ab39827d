"""Tests for transcript.py: real Claude Code transcripts and broken streams -> typed Transcript."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_agentbench.errors import TranscriptError
from pytest_agentbench.audit.transcript import (
    McpServerStatus,
    PermissionDenial,
    Transcript,
    parse_file,
    parse_lines,
    short_tool_name,
    tool_result_text,
)

DATA = Path(__file__).parents[1] / "data" / "claude-code-stream"
DONE = "Done.\nEXPECTED_COUNT: 3"
OBSERVED = '{"result":"device dev0: 3 objects seen"}'
FULL_USAGE = {"input_tokens": 2000, "output_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
HALF_USAGE = {"input_tokens": 1000, "output_tokens": 50, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
ZERO_USAGE = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
WRITE_DENIAL = PermissionDenial(
    tool_name="Write",
    tool_use_id="toolu_fake_ffcfc3706ffa416b9f47",
    tool_input={"file_path": "/tmp/agentbench-example/work/write_not_allowed/denied_write.txt", "content": "x"},
)
API_ERROR_TEXT = (
    "API Error: 500 scripted internal error. This is a server-side issue, usually temporary — try again in a "
    "moment. If it persists, check your inference gateway (127.0.0.1:8765)."
)

# file -> (tool calls as (name, is_error, result_text), final_text, result subtype, result is_error,
#          num_turns, usage, cost, denials, mcp statuses, version, errors, api_error_status, line_count)
CASES = {
    "ok_quiet": (
        [("mcp__dev__observe", False, OBSERVED)], DONE, "success", False, 2, FULL_USAGE, 0.0075, (), "connected",
        "2.1.197", (), None, 6,
    ),
    "ok_v2.1.332": (
        [("ToolSearch", False, "[tool_reference]\n[tool_reference]"), ("mcp__dev__observe", False, OBSERVED)],
        DONE, "success", False, 3, {**FULL_USAGE, "input_tokens": 3000, "output_tokens": 150}, 0.01125, (),
        "connected", "2.1.332", (), None, 8,
    ),
    "text_only": ([], DONE, "success", False, 1, HALF_USAGE, 0.00375, (), "connected", "2.1.197", (), None, 3),
    "thinking": (
        [("mcp__dev__observe", False, OBSERVED)], DONE, "success", False, 2, FULL_USAGE, 0.0075, (), "connected",
        "2.1.197", (), None, 11,
    ),
    "toolerror": (
        [("mcp__dev__observe", True, "Error executing tool observe: device 'broken' is not reachable (known: dev0, dev1, dev2)")],
        DONE, "success", False, 2, FULL_USAGE, 0.0075, (), "connected", "2.1.197", (), None, 6,
    ),
    "budget": (
        [("mcp__dev__observe", False, None)], None, "error_max_budget_usd", True, 1, ZERO_USAGE, 0.00375, (),
        "connected", "2.1.197", ("Reached maximum budget ($0.0001)",), None, 4,
    ),
    "maxturns": (
        [("mcp__dev__observe", False, OBSERVED)], None, "error_max_turns", True, 2, HALF_USAGE, 0.00375, (),
        "connected", "2.1.197", ("Reached maximum number of turns (1)",), None, 5,
    ),
    "bash_disallowed": (
        [(
            "Bash", True,
            "<tool_use_error>Error: No such tool available: Bash. Bash exists but is not enabled in this context. "
            "Use one of the available tools instead.</tool_use_error>",
        )],
        DONE, "success", False, 2, FULL_USAGE, 0.0075, (), "connected", "2.1.197", (), None, 6,
    ),
    "write_not_allowed": (
        [(
            "Write", True,
            "Claude requested permissions to write to /tmp/agentbench-example/work/write_not_allowed/denied_write.txt, "
            "but you haven't granted it yet.",
        )],
        DONE, "success", False, 2, FULL_USAGE, 0.0075, (WRITE_DENIAL,), "connected", "2.1.197", (), None, 6,
    ),
    "apierror": ([], API_ERROR_TEXT, "success", True, 1, ZERO_USAGE, 0.0, (), "connected", "2.1.197", (), 500, 4),
    "mcp_fail": (
        [("mcp__dev__observe", True, "<tool_use_error>Error: No such tool available: mcp__dev__observe</tool_use_error>")],
        DONE, "success", False, 2, FULL_USAGE, 0.0075, (), "failed", "2.1.197", (), None, 6,
    ),
    "mcp_slow": (
        [(
            "mcp__dev__observe", True,
            "<tool_use_error>Error: No such tool available: mcp__dev__observe. The MCP server 'dev' is still "
            "connecting. Call WaitForMcpServers to wait for it, then try again.</tool_use_error>",
        )],
        DONE, "success", False, 2, FULL_USAGE, 0.0075, (), "pending", "2.1.197", (), None, 6,
    ),
    "mcp_slow_blocking": (
        [("mcp__dev__observe", False, OBSERVED)], DONE, "success", False, 2, FULL_USAGE, 0.0075, (), "connected",
        "2.1.197", (), None, 6,
    ),
}


def test_every_reference_transcript_has_a_case():
    assert {path.stem for path in DATA.glob("*.jsonl")} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_transcript(name):
    (calls, final_text, subtype, is_error, num_turns, usage, cost, denials, mcp_status, version, errors,
     api_status, line_count) = CASES[name]
    transcript = parse_file(DATA / f"{name}.jsonl")

    assert transcript.unparseable == ()
    assert transcript.line_count == line_count
    assert [(call.name, call.is_error, call.result_text) for call in transcript.tool_calls] == calls
    assert all(call.id.startswith("toolu_") for call in transcript.tool_calls)
    assert transcript.final_text == final_text
    assert transcript.init.claude_code_version == version
    assert transcript.init.mcp_servers == (McpServerStatus("dev", mcp_status),)
    assert transcript.init.model == "claude-sonnet-4-5"
    assert transcript.observed_model == "claude-sonnet-4-5"
    result = transcript.result
    assert (result.subtype, result.is_error, result.num_turns) == (subtype, is_error, num_turns)
    assert result.usage == usage
    assert result.total_cost_usd == pytest.approx(cost)
    assert result.permission_denials == denials
    assert result.errors == errors
    assert result.api_error_status == api_status
    assert result.result == (final_text if subtype == "success" else None)


def test_init_lists_mcp_tools_and_session():
    init = parse_file(DATA / "ok_quiet.jsonl").init
    assert init.session_id == "4640149b-acf6-44a5-a36a-dadadc071c4d"
    assert init.cwd == "/tmp/agentbench-example/work/ok_quiet"
    assert "mcp__dev__observe" in init.tools and "Bash" not in init.tools


def test_tool_call_input_is_kept():
    call = parse_file(DATA / "ok_quiet.jsonl").tool_calls[0]
    assert call.input == {"device": "dev0"}


INIT = '{"type":"system","subtype":"init","model":"m-init","session_id":"s"}'
TEXT = '{"type":"assistant","message":{"id":"a","model":"m-run","content":[{"type":"text","text":"hi"}]}}'
RESULT = '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"hi"}'


@pytest.mark.parametrize(
    "lines, expected",
    [
        # (input lines, [(line_number, reason prefix)])
        ([INIT + "\n", "not json\n", RESULT + "\n"], [(2, "invalid JSON")]),
        ([INIT + "\n", "[1, 2]\n", RESULT + "\n"], [(2, "a JSON list")]),
        ([INIT + "\n", '"text"\n', RESULT + "\n"], [(2, "a JSON str")]),
        ([INIT + "\n", '{"subtype": "init"}\n', RESULT + "\n"], [(2, "an object without a string 'type'")]),
        ([INIT + "\n", '{"type": 3}\n'], [(2, "an object without a string 'type'")]),
        ([INIT + "\n", TEXT + "\n", RESULT[:30]], [(3, "truncated last line")]),
        ([INIT + "\n", "\n", "   \n", RESULT + "\n"], []),
        ([INIT.encode() + b"\n", b"\xff\xfe\n", RESULT.encode() + b"\n"], [(2, "not UTF-8")]),
        # Lines without endings (a list from splitlines) are not "truncated": nothing says they were cut.
        ([INIT, "oops", RESULT], [(2, "invalid JSON")]),
        ([INIT, RESULT, "oops"], [(3, "invalid JSON")]),
    ],
)
def test_unparseable_lines_are_recorded_not_raised(lines, expected):
    transcript = parse_lines(lines)
    assert [line.line_number for line in transcript.unparseable] == [number for number, _ in expected]
    for line, (_, reason_prefix) in zip(transcript.unparseable, expected):
        assert line.reason.startswith(reason_prefix), line.reason
    assert transcript.line_count == len(lines)
    assert transcript.init is not None


def test_unparseable_line_keeps_its_text():
    transcript = parse_lines([INIT + "\n", "garbage here\n"])
    assert transcript.unparseable[0].text == "garbage here"
    assert transcript.unparseable[0].reason.startswith("invalid JSON")


def test_observed_model_prefers_assistant_messages_over_init():
    assert parse_lines([INIT, TEXT, RESULT]).observed_model == "m-run"
    assert parse_lines([INIT, RESULT]).observed_model == "m-init"


def test_synthetic_model_is_not_observed():
    synthetic = '{"type":"assistant","message":{"id":"x","model":"<synthetic>","content":[{"type":"text","text":"API Error"}]}}'
    assert parse_lines([INIT, synthetic, RESULT]).observed_model == "m-init"


def _assistant(message_id: str, *blocks: dict) -> str:
    return json.dumps({"type": "assistant", "message": {"id": message_id, "model": "m", "content": list(blocks)}})


@pytest.mark.parametrize(
    "events, final_text",
    [
        # The last message is the answer only when it made no tool call.
        ([_assistant("a", {"type": "text", "text": "Let me look."}), _assistant("a", {"type": "tool_use", "id": "t", "name": "x", "input": {}})], None),
        ([_assistant("a", {"type": "text", "text": "one"}), _assistant("a", {"type": "text", "text": "two"})], "one\ntwo"),
        ([_assistant("a", {"type": "text", "text": "old"}), _assistant("b", {"type": "thinking", "thinking": "hm"})], None),
        ([_assistant("a", {"type": "tool_use", "id": "t", "name": "x", "input": {}}), _assistant("b", {"type": "text", "text": "new"})], "new"),
        ([], None),
    ],
)
def test_final_text_is_the_last_messages_text(events, final_text):
    assert parse_lines(events).final_text == final_text


def test_tool_result_without_matching_call_is_ignored_and_missing_result_stays_none():
    call = _assistant("a", {"type": "tool_use", "id": "t1", "name": "mcp__s__observe", "input": {"device": "d"}})
    stray = json.dumps({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "zz", "content": "x"}]}})
    transcript = parse_lines([call, stray])
    assert [(c.id, c.result_text, c.is_error) for c in transcript.tool_calls] == [("t1", None, False)]


@pytest.mark.parametrize(
    "content, text",
    [
        ("plain", "plain"),
        ([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "a\nb"),
        ([{"type": "tool_reference", "tool_name": "x"}], "[tool_reference]"),
        (None, ""),
        ({"weird": 1}, '{"weird": 1}'),
    ],
)
def test_tool_result_text(content, text):
    assert tool_result_text(content) == text


@pytest.mark.parametrize(
    "name, short",
    [
        ("mcp__agentbench__observe", "observe"),
        ("mcp__auto-mobile__tapOn", "tapOn"),
        ("Bash", "Bash"),
        ("mcp__server_only", "mcp__server_only"),
        ("mcp__srv__", "mcp__srv__"),
    ],
)
def test_short_tool_name(name, short):
    assert short_tool_name(name) == short


def test_parse_file_missing_raises_transcript_error(tmp_path):
    with pytest.raises(TranscriptError, match="cannot read transcript"):
        parse_file(tmp_path / "claude.jsonl")


def test_parse_lines_reads_a_generator_once():
    consumed = []

    def lines():
        for line in (INIT, TEXT, RESULT):
            consumed.append(line)
            yield line

    transcript = parse_lines(lines())
    assert isinstance(transcript, Transcript)
    assert consumed == [INIT, TEXT, RESULT]
    assert transcript.result.result == "hi"


def test_agent_reports_are_read_and_other_system_events_ignored() -> None:
    lines = [
        json.dumps({"type": "system", "subtype": "init", "mcp_servers": [{"name": "agentbench", "status": "connected"}]}),
        json.dumps({"type": "system", "subtype": "api_retry", "attempt": 1}),
        json.dumps({"type": "system", "subtype": "agentbench_report", "kind": "recovery", "turn": 3,
                    "message": "recovered a tap call", "format": "unterminated-json", "session_id": "s", "uuid": "u"}),
        json.dumps({"type": "system", "subtype": "agentbench_report", "kind": "episode-end", "message": "done",
                    "ending": "task_complete"}),
    ]
    parsed = parse_lines(lines)
    assert parsed.unparseable == ()
    assert [(r.kind, r.turn, r.message, r.data) for r in parsed.reports] == [
        ("recovery", 3, "recovered a tap call", {"format": "unterminated-json"}),
        ("episode-end", None, "done", {"ending": "task_complete"}),
    ]


# ----------------------------------------------------------------------------- big results stay small


def _big_result_stream(text: str) -> list[str]:
    return [
        json.dumps({"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "mcp__s__observe", "input": {}}]}}),
        json.dumps({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": text}]}]}}),
    ]


def test_a_long_result_is_kept_as_an_excerpt_with_its_length_and_line(tmp_path):
    from pytest_agentbench.audit.transcript import RESULT_EXCERPT_CHARS, read_result_text

    text = "x" * 100_000 + " FATAL EXCEPTION " + "y" * 50_000
    path = tmp_path / "claude.jsonl"
    path.write_text("\n".join(_big_result_stream(text)) + "\n", encoding="utf-8")
    (call,) = parse_file(path, watch=("FATAL EXCEPTION", "never there")).tool_calls
    assert len(call.result_text) == RESULT_EXCERPT_CHARS and call.result_text == text[:RESULT_EXCERPT_CHARS]
    assert (call.result_chars, call.result_line, call.result_truncated) == (len(text), 2, True)
    # Watched substrings are answered from the full text, beyond the excerpt.
    assert call.contains("FATAL EXCEPTION") and not call.contains("never there")
    with pytest.raises(ValueError, match="was not watched while parsing"):
        call.contains("yyyy")
    assert read_result_text(path, call) == text


def test_a_short_result_is_kept_whole_and_answers_any_substring():
    (call,) = parse_lines(_big_result_stream("short text")).tool_calls
    assert (call.result_text, call.result_chars, call.result_truncated) == ("short text", 10, False)
    assert call.contains("text") and not call.contains("other")


def test_a_failure_pattern_far_beyond_the_excerpt_is_still_a_stumble(tmp_path):
    from pytest_agentbench.audit.verdict import stumbles_of, watched_patterns

    suite = SimpleNamespace(failure_patterns=("ANR in",), ignored_failure_patterns=("expected ANR",))
    path = tmp_path / "claude.jsonl"
    path.write_text("\n".join(_big_result_stream("." * 200_000 + "ANR in com.example")) + "\n", encoding="utf-8")
    (stumble,) = stumbles_of(suite, parse_file(path, watch=watched_patterns(suite)))
    assert stumble.kind == "failure-pattern" and stumble.detail.startswith("'ANR in' in result:")
    path.write_text("\n".join(_big_result_stream("." * 200_000 + "ANR in com.example (expected ANR)")) + "\n", encoding="utf-8")
    assert stumbles_of(suite, parse_file(path, watch=watched_patterns(suite))) == []


def _result(subtype: str, text: str | None = None) -> str:
    return json.dumps({"type": "result", "subtype": subtype, "is_error": subtype != "success", "result": text})


def _text(message_id: str, text: str) -> str:
    return json.dumps({"type": "assistant", "message": {"id": message_id, "model": "m", "content": [{"type": "text", "text": text}]}})


def test_the_first_result_event_is_the_result_and_the_answer_stands_as_it_was_then() -> None:
    # issue 19 D: an error_max_turns result followed by a success one passed, because the last counted.
    transcript = parse_lines([_text("m1", "I ran out of turns."), _result("error_max_turns"),
                              _text("m2", "EXPECTED_COUNT: 3"), _result("success", "EXPECTED_COUNT: 3")])
    assert transcript.result is not None and transcript.result.subtype == "error_max_turns"
    assert [later.subtype for later in transcript.later_results] == ["success"]
    assert transcript.final_text == "I ran out of turns."


def test_a_single_result_has_no_later_results() -> None:
    transcript = parse_lines([_text("m1", "Done."), _result("success", "Done.")])
    assert transcript.result.subtype == "success" and transcript.later_results == ()
    assert transcript.final_text == "Done."


def _calls_stream(inputs: list[dict]) -> list[str]:
    lines = []
    for number, tool_input in enumerate(inputs):
        lines.append(json.dumps({"type": "assistant", "message": {"id": f"m{number}", "content": [
            {"type": "tool_use", "id": f"t{number}", "name": "mcp__s__tap", "input": tool_input}]}}))
        lines.append(json.dumps({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": f"t{number}", "content": "ok"}]}}))
    return lines


def test_equal_small_inputs_share_one_dict_and_keep_their_own_types():
    inputs = [{"device": "d", "index": 1}, {"device": "d", "index": 1}, {"device": "d", "index": True},
              {"device": "d", "index": 1.0}, {"device": "d", "index": "1"}, {"device": "d", "index": [1]}]
    calls = parse_lines(_calls_stream(inputs)).tool_calls
    assert [call.input for call in calls] == inputs
    # 1, True, 1.0 and "1" are different inputs (the relay cross-check compares them by value and type).
    assert [type(call.input["index"]) for call in calls] == [int, int, bool, float, str, list]
    assert calls[0].input is calls[1].input
    assert calls[0].input is not calls[2].input and calls[0].input is not calls[3].input


@pytest.mark.parametrize("raw", [
    pytest.param(b'{"type": "system", "subtype": "x"}\n', id="bytes"),
    pytest.param('{"type": "system"}  \n', id="str-trailing-space"),
    pytest.param(b'  {"type": "system"}\r\n', id="leading-space-crlf"),
    pytest.param('\ufeff{"type": "system"}\n'.encode(), id="utf8-bom-bytes"),
    pytest.param(b'{"type": "system"} x\n', id="extra-data"),
    pytest.param(b'{"type": "sys', id="cut-off"),
    pytest.param(b'[1, 2]\n', id="not-an-object"),
    pytest.param(b'{"type": "s\xff"}\n', id="not-utf8"),
    pytest.param('\ufeff{"type": "system"}\n', id="bom-in-a-str"),
])
def test_a_line_is_read_as_json_loads_reads_it(raw):
    # The parser skips json.loads' per-line encoding detection; what it accepts and how it words a
    # failure must stay json.loads' own.
    from pytest_agentbench.audit.transcript import _loads

    try:
        expected = ("value", json.loads(raw))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        expected = ("error", type(exc), getattr(exc, "msg", None), getattr(exc, "pos", None))
    try:
        actual = ("value", _loads(raw))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        actual = ("error", type(exc), getattr(exc, "msg", None), getattr(exc, "pos", None))
    assert actual == expected


def test_the_excerpt_still_gives_a_stumble_its_whole_detail():
    # A tool error's detail is cut at 300 characters by the audit; the excerpt must not cut it sooner.
    from pytest_agentbench.audit.transcript import RESULT_EXCERPT_CHARS
    from pytest_agentbench.audit.verdict import _DETAIL_CHARS

    assert RESULT_EXCERPT_CHARS >= _DETAIL_CHARS


def test_the_timeline_gives_back_every_line_as_it_was_added():
    from pytest_agentbench.audit.transcript import LineEvent, Timeline

    events = [LineEvent(1, "init"), LineEvent(2, "assistant", opened=("a", "b")), LineEvent(3, "user", answered=("b",)),
              LineEvent(5, "user", answered=("a",)), LineEvent(6, "made-up"), LineEvent(7, "result")]
    timeline = Timeline(events)
    assert list(timeline) == events and len(timeline) == 6
    assert timeline[1] == events[1] and timeline[-1] == events[-1] and timeline[2:4] == events[2:4]
    assert timeline == events and timeline != events[:-1]
    with pytest.raises(IndexError):
        timeline[6]


def test_results_answer_the_latest_waiting_call_of_their_id_then_the_latest_call() -> None:
    # Two calls share an id while both wait: the first result answers the later call, the second
    # the earlier; a third result (no call of the id waits) replaces the later call's result, and
    # a result for an id never opened is dropped.
    def use(message_id: str, call_id: str, command: str) -> dict:
        return {"type": "assistant", "message": {"id": message_id, "content": [
            {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}]}}

    def result(call_id: str, text: str) -> dict:
        return {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": call_id, "content": text}]}}

    lines = [use("m1", "t1", "first"), use("m2", "t1", "second"), use("m3", "t2", "other"),
             result("t1", "one"), result("t1", "two"), result("t2", "three"), result("t1", "four"), result("t9", "nobody")]
    transcript = parse_lines(json.dumps(line) + "\n" for line in lines)
    assert [(call.input["command"], call.result_text, call.result_line) for call in transcript.tool_calls] == [
        ("first", "two", 5), ("second", "four", 7), ("other", "three", 6)]
