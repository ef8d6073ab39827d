"""The relay's framing rules (run/relay_frames.py): bytes -> one canonical message or a refusal naming the rule, and lines cut anywhere -> the same lines."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.run.relay_frames import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_DEPTH,
    PARSE_ERROR,
    LineFramer,
    Message,
    Oversized,
    Refusal,
    encode,
    read_message,
)

CALL = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "observe", "arguments": {"a": 1}}}


def _line(message: object, **dumps: object) -> bytes:
    return json.dumps(message, **dumps).encode("utf-8")


def _deep(depth: int) -> object:
    value: object = 0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(("line", "kind", "body"), [
    (_line(CALL), "request", CALL),
    (_line(CALL) + b"\r", "request", CALL),  # CRLF framing: the CR is JSON whitespace
    (b"\r\t " + _line(CALL).replace(b", ", b",\r"), "request", CALL),
    (_line({**CALL, "extra": 1, "params": {"name": "observe"}}), "request", {**{k: v for k, v in CALL.items()}, "params": {"name": "observe"}}),
    (_line({**CALL, "params": {"name": "observe", "arguments": None, "_meta": {"progressToken": "p"}}}), "request",
     {**CALL, "params": {"name": "observe", "arguments": None, "_meta": {"progressToken": "p"}}}),
    (_line({"jsonrpc": "2.0", "id": "x", "method": "ping"}), "request", {"jsonrpc": "2.0", "id": "x", "method": "ping"}),
    (_line({"jsonrpc": "2.0", "method": "notifications/initialized"}), "notification", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
    (_line({"jsonrpc": "2.0", "id": 3, "result": {"roots": []}}), "response", {"jsonrpc": "2.0", "id": 3, "result": {"roots": []}}),
    (_line({**CALL, "params": {"name": "t\u2028x", "arguments": {"s": "\u2028\u0085\U0001F600"}}}, ensure_ascii=False), "request",
     {**CALL, "params": {"name": "t\u2028x", "arguments": {"s": "\u2028\u0085\U0001F600"}}}),
    (_line({**CALL, "params": {"name": "deep", "arguments": {"d": _deep(MAX_DEPTH - 3)}}}), "request",
     {**CALL, "params": {"name": "deep", "arguments": {"d": _deep(MAX_DEPTH - 3)}}}),
], ids=["lf", "crlf", "cr-whitespace", "unknown-keys-dropped", "meta-and-null-arguments", "ping", "notification", "response",
        "line-separators-in-strings", "deep-enough"])
def test_a_valid_message_becomes_its_canonical_form(line: bytes, kind: str, body: dict) -> None:
    message = read_message(line, limit=1 << 20, from_agent=True)
    assert isinstance(message, Message) and message.kind == kind and message.body == body


@pytest.mark.parametrize(("line", "code", "fragment", "reply_id"), [
    (_line(CALL) + b"\r" + _line(CALL), PARSE_ERROR, "not one JSON value (Extra data", None),
    (_line(CALL).replace(b"observe", b"obs\xffrve"), PARSE_ERROR, "not UTF-8 (byte", None),
    (b"\xef\xbb\xbf" + _line(CALL), PARSE_ERROR, "BOM", None),
    (_line(CALL).replace(b'"a": 1', b'"a": NaN'), PARSE_ERROR, "NaN is not JSON", None),
    (_line(CALL).replace(b'"a": 1', b'"a": 1e999'), PARSE_ERROR, "out of range", None),
    (_line(CALL).replace(b'"a": 1', b'"a": "\\udc00"'), PARSE_ERROR, "lone UTF-16 surrogate", None),
    (_line({**CALL, "params": {"name": "d", "arguments": {"d": _deep(MAX_DEPTH)}}}), PARSE_ERROR, f"more than {MAX_DEPTH} levels", None),
    (b"[" * 5000 + b"]" * 5000, PARSE_ERROR, "nested too deeply", None),
    (_line([CALL]), INVALID_REQUEST, "batch", None),
    (b'"text"', INVALID_REQUEST, "not a JSON-RPC object", None),
    (_line({**CALL, "jsonrpc": "1.0"}), INVALID_REQUEST, "not JSON-RPC 2.0", 4),
    (_line({**CALL, "id": 4.0}), INVALID_REQUEST, "must be a string or an integer", None),
    (_line({**CALL, "id": True}), INVALID_REQUEST, "must be a string or an integer", None),
    (_line({**CALL, "id": None}), INVALID_REQUEST, "must be a string or an integer", None),
    (_line({**CALL, "params": [1]}), INVALID_REQUEST, "`params` is not an object", 4),
    (_line({**CALL, "result": {}}), INVALID_REQUEST, "both a `method` and a `result`", 4),
    (_line({**CALL, "params": {"name": 5}}), INVALID_PARAMS, "string `name`", 4),
    (_line({**CALL, "params": {"name": "x", "arguments": "a=1"}}), INVALID_PARAMS, "`arguments` must be an object", 4),
    (_line({**CALL, "params": {"name": "x", "_meta": {"progressToken": False}}}), INVALID_PARAMS, "progressToken", 4),
    (_line({**CALL, "params": {"name": "x", "task": {"ttl": 1}}}), INVALID_PARAMS, "only name, arguments and _meta", 4),
    (_line({**CALL, "id": {"a": 1}}), INVALID_REQUEST, "must be a string or an integer", None),
    (_line({"jsonrpc": "2.0", "id": 1}), INVALID_REQUEST, "exactly one of `result` and `error`", None),
], ids=["cr-joined", "invalid-utf8", "bom", "nan", "overflow", "lone-surrogate", "too-deep", "recursion", "batch", "not-object",
        "jsonrpc-1", "float-id", "bool-id", "null-id", "params-array", "method-and-result", "name-not-string", "arguments-not-object",
        "bool-progress-token", "extra-param", "object-id", "neither-result-nor-error"])
def test_a_line_the_server_could_read_another_way_is_refused_naming_the_rule(line: bytes, code: int, fragment: str, reply_id: object) -> None:
    refusal = read_message(line, limit=1 << 20, from_agent=True)
    assert isinstance(refusal, Refusal) and refusal.code == code and fragment in refusal.reason, refusal
    assert refusal.reply and refusal.reply_id == reply_id


@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [1]},  # a notification: never answered
    {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "shell"}},  # a call without an id
    {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}},  # a response
], ids=["bad-notification", "call-without-id", "response-with-both"])
def test_a_refused_notification_or_response_gets_no_reply(message: dict) -> None:
    refusal = read_message(_line(message), limit=1 << 20, from_agent=True)
    assert isinstance(refusal, Refusal) and not refusal.reply


def test_size_blank_lines_and_the_server_side() -> None:
    assert read_message(b" \t\r", limit=10, from_agent=True) is None
    too_big = read_message(Oversized(11), limit=10, from_agent=True)
    assert isinstance(too_big, Refusal) and too_big.code == INVALID_REQUEST and "11 bytes, more than the relay's limit of 10" in too_big.reason
    # A server's answer may nest deeply and name no tools/call rules: it is only parsed and re-framed.
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "\u2028"}], "deep": _deep(100)}}
    assert read_message(_line(answer), limit=1 << 20, from_agent=False) == Message("response", answer)


def test_the_canonical_line_is_one_ascii_line_every_reader_splits_the_same() -> None:
    body = {**CALL, "params": {"name": "x", "arguments": {"s": "a\rb\nc\u2028d\u0085e\x0bf\x1cg\U0001F600"}}}
    data = encode(body)
    assert data.isascii() and data.endswith(b"\n") and data.count(b"\n") == 1 and b"\r" not in data
    assert len(data.decode().splitlines()) == 1 and json.loads(data) == body


_chunks = st.lists(st.binary(max_size=12) | st.sampled_from([b"\n", b"\r\n", b"\r", b"x" * 40]), max_size=12)


@settings(max_examples=200, derandomize=True, database=None)
@given(pieces=_chunks, cuts=st.lists(st.integers(0, 600), max_size=8))
def test_lines_cut_at_any_point_frame_the_same_as_split_on_lf_alone(pieces: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(pieces)
    framer = LineFramer(limit=32)
    framed: list[bytes | Oversized] = []
    points = sorted({min(cut, len(stream)) for cut in cuts})
    for start, end in zip([0, *points], [*points, len(stream)]):
        framed.extend(framer.feed(stream[start:end]))
    tail = framer.finish()
    expected = stream.split(b"\n")
    if expected[-1] == b"":
        expected.pop()
        assert tail is None
    else:
        framed.append(tail)
    assert framed == [line if len(line) <= 32 else Oversized(len(line)) for line in expected]
