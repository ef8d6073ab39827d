"""Raw model outputs -> tool calls (tool_parse): GLM-4.5, the seed's unterminated call, fenced JSON, JSON with text; never raises."""

from __future__ import annotations

import json

import pytest

from pytest_agentbench.agents.model.executor import TOOL_NAMES, TOOL_SCHEMAS
from pytest_agentbench.agents.model.tool_parse import BadCall, complete_json, parse_reply, recover_from_text, split_thinking, strip_reasoning

# (id, content, expected calls as (name, arguments JSON), expected recovered_from, expected content)
TEXT_CASES = [
    ("glm45", "<tool_call>tap\n<arg_key>index</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
     [("tap", '{"index": 3}')], "glm45", ""),
    ("glm45-text-before", "I will open the network settings.\n<tool_call>tap\n<arg_key>index</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
     [("tap", '{"index": 1}')], "glm45", "I will open the network settings."),
    ("glm45-string-stays-raw", "<tool_call>type_text\n<arg_key>text</arg_key>\n<arg_value>0042</arg_value>\n</tool_call>",
     [("type_text", '{"text": "0042"}')], "glm45", ""),
    ("glm45-no-close-tag", "<tool_call>tap\n<arg_key>index</arg_key>\n<arg_value>2",
     [("tap", '{"index": 2}')], "glm45", ""),
    ("glm47-no-newline", "<tool_call>swipe<arg_key>direction</arg_key><arg_value>up</arg_value></tool_call>",
     [("swipe", '{"direction": "up"}')], "glm45", ""),
    ("glm45-no-args", "<tool_call>back</tool_call>", [("back", "{}")], "glm45", ""),
    ("glm45-think-prefix", "<think>The switch is off.</think><tool_call>tap\n<arg_key>index</arg_key>\n<arg_value>1</arg_value></tool_call>",
     [("tap", '{"index": 1}')], "glm45", ""),
    ("glm45-chinese", "我来打开设置。\n<tool_call>open_app\n<arg_key>package</arg_key>\n<arg_value>com.android.settings</arg_value></tool_call>",
     [("open_app", '{"package": "com.android.settings"}')], "glm45", "我来打开设置。"),
    ("seed-unterminated", '[tap]\n{"tool": "tap", "parameters": {"index": 1}',
     [("tap", '{"index": 1}')], "unterminated-json", ""),
    ("unterminated-open-string", '{"name": "task_complete", "arguments": {"answer": "WIFI: on',
     [("task_complete", '{"answer": "WIFI: on"}')], "unterminated-json", ""),
    ("fenced-json", 'Next step:\n```json\n{"name": "tap", "arguments": {"index": 4}}\n```',
     [("tap", '{"index": 4}')], "fenced-json", "Next step:"),
    ("fenced-unterminated", '```json\n{"name": "tap", "arguments": {"index": 4}\n```',
     [("tap", '{"index": 4}')], "unterminated-json", ""),
    ("json-trailing-text", '{"name": "tap", "arguments": {"index": 5}} This opens Internet.',
     [("tap", '{"index": 5}')], "json-in-text", ""),
    ("json-text-before", 'Tapping Internet: {"name": "tap", "arguments": {"index": 5}}',
     [("tap", '{"index": 5}')], "json-in-text", "Tapping Internet:"),
    ("json-string-arguments", '{"name": "tap", "arguments": "{\\"index\\": 6}"}',
     [("tap", '{"index": 6}')], "json-in-text", ""),
    ("json-flat", '{"name": "swipe", "direction": "down"}', [("swipe", '{"direction": "down"}')], "json-in-text", ""),
    ("openai-shape-in-text", '{"type": "function", "function": {"name": "home", "arguments": {}}}',
     [("home", "{}")], "json-in-text", ""),
    # Hermes/Qwen3 markup (vLLM without --tool-call-parser hermes): named, and cut out of the content.
    ("hermes", 'I will open it.\n<tool_call>\n{"name": "tap", "arguments": {"index": 1}}\n</tool_call>',
     [("tap", '{"index": 1}')], "hermes", "I will open it."),
    ("hermes-prose-after", '<tool_call>{"name": "back", "arguments": {}}</tool_call>\nGoing back.',
     [("back", "{}")], "hermes", "Going back."),
    ("hermes-unclosed", '<tool_call>\n{"name": "tap", "arguments": {"index": 2}',
     [("tap", '{"index": 2}')], "hermes", ""),
    ("hermes-two", '<tool_call>{"name": "back", "arguments": {}}</tool_call>\n<tool_call>{"name": "home", "arguments": {}}</tool_call>',
     [("back", "{}"), ("home", "{}")], "hermes", ""),
    # Inside <tool_call> markup an unknown tool is still a call: the executor answers "no such tool".
    ("unknown-tool-glm", "<tool_call>format_disk\n<arg_key>x</arg_key><arg_value>1</arg_value></tool_call>",
     [("format_disk", '{"x": 1}')], "glm45", ""),
    ("unknown-tool-hermes", 'Clicking.\n<tool_call>{"name": "click", "arguments": {"index": 2}}</tool_call>',
     [("click", '{"index": 2}')], "hermes", "Clicking."),
]


@pytest.mark.parametrize(("content", "calls", "recovered", "prose"), [case[1:] for case in TEXT_CASES], ids=[case[0] for case in TEXT_CASES])
def test_calls_written_into_the_text_are_recovered_and_flagged(content: str, calls: list, recovered: str, prose: str) -> None:
    reply = parse_reply(content, [], TOOL_NAMES, TOOL_SCHEMAS)
    assert [(call.name, call.arguments) for call in reply.calls] == [(name, json.loads(args)) for name, args in calls]
    assert {call.recovered_from for call in reply.calls} == {recovered}
    assert all(call.raw for call in reply.calls), "a recovery keeps an excerpt of what it read"
    assert reply.content == prose


# Texts that are not calls: they stay content, nothing is raised, nothing is flagged.
NOT_CALLS = [
    ("plain", "I have turned Wi-Fi on.\nWIFI: on"),
    ("unknown-tool-json", '{"name": "rm_rf", "arguments": {}}'),
    ("json-not-a-call", '{"wifi": "on"}'),
    ("braces-only", "{{{{"),
    ("closing-mismatch", '{"name": "tap", "arguments": {"index": 1]'),
    ("binary-junk", "\x00\ufffd[{\udcff"),
    ("unclosed-think", "<think>I should tap the switch. {\"name\": \"tap\""),
    ("empty", ""),
]


@pytest.mark.parametrize("content", [case[1] for case in NOT_CALLS], ids=[case[0] for case in NOT_CALLS])
def test_text_that_is_not_a_call_stays_content_and_never_raises(content: str) -> None:
    reply = parse_reply(content, None, TOOL_NAMES, TOOL_SCHEMAS)
    assert reply.calls == ()
    assert reply.content == strip_reasoning(content).strip()


# Native tool_calls: well-formed ones are not flagged; repaired arguments are.
NATIVE_CASES = [
    ("well-formed", '{"index": 1}', {"index": 1}, None),
    ("empty-arguments", "", {}, None),
    ("cut-off", '{"index": 1', {"index": 1}, "arguments-repaired"),
    ("double-encoded", json.dumps('{"index": 2}'), {"index": 2}, "arguments-double-encoded"),
]


@pytest.mark.parametrize(("arguments", "expected", "recovered"), [case[1:] for case in NATIVE_CASES], ids=[case[0] for case in NATIVE_CASES])
def test_native_calls(arguments: str, expected: dict, recovered: str | None) -> None:
    entry = {"id": "call_1", "type": "function", "function": {"name": "tap", "arguments": arguments}}
    (call,) = parse_reply("ignored prose", [entry], TOOL_NAMES, TOOL_SCHEMAS).calls
    assert (call.name, call.arguments, call.recovered_from, call.id) == ("tap", expected, recovered, "call_1")


def test_native_call_with_undecodable_arguments_is_a_problem_sentence() -> None:
    entry = {"id": "call_1", "type": "function", "function": {"name": "tap", "arguments": "[1, 2]"}}
    reply = parse_reply(None, [entry], TOOL_NAMES, TOOL_SCHEMAS)
    assert reply.calls == ()
    assert reply.problems == ("the arguments of your tap call are not a JSON object: [1, 2]",)
    assert reply.bad_calls == (BadCall("call_1", "tap", reply.problems[0], "[1, 2]"),)


def test_an_undecodable_call_beside_a_valid_one_is_kept_as_a_bad_call() -> None:
    entries = [{"id": "call_1", "type": "function", "function": {"name": "tap", "arguments": '{"index": 1}'}},
               {"id": "call_2", "type": "function", "function": {"name": "back", "arguments": "not json"}}]
    reply = parse_reply(None, entries, TOOL_NAMES, TOOL_SCHEMAS)
    assert [call.name for call in reply.calls] == ["tap"]
    assert [(bad.id, bad.name) for bad in reply.bad_calls] == [("call_2", "back")]
    assert "not a JSON object: not json" in reply.bad_calls[0].sentence


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>The switch is off, so I", ("The switch is off, so I", "", True)),
        ("<think>Off.</think>Tapping it.", ("Off.", "Tapping it.", False)),
        ("the template opened it</think>Done.", ("the template opened it", "Done.", False)),
        ("<think>a</think>b<think>c", ("a\n\nc", "b", True)),
        ("no thinking", ("", "no thinking", False)),
        ("", ("", "", False)),
    ],
    ids=["unclosed", "closed", "closing-tag-only", "closed-then-unclosed", "none", "empty"],
)
def test_split_thinking(text: str, expected: tuple[str, str, bool]) -> None:
    assert split_thinking(text) == expected


def test_only_function_calls_are_taken() -> None:
    entries = [{"id": "x", "type": "code_interpreter"}, {"id": "y", "type": "function", "function": {"name": "back", "arguments": "{}"}}]
    assert [call.name for call in parse_reply(None, entries, TOOL_NAMES).calls] == ["back"]


@pytest.mark.parametrize(
    ("text", "completed"),
    [('{"a": {"b": 1}', '{"a": {"b": 1}}'), ('{"a": "x', '{"a": "x"}'), ('{"a": [1, 2', '{"a": [1, 2]}'),
     ('{"a": 1,', '{"a": 1}'), ('{"a": 1}', None), ('[1', None), ('{"a": 1]', None)],
    ids=["object", "string", "array", "dangling-comma", "balanced", "not-an-object", "mismatch"],
)
def test_complete_json(text: str, completed: str | None) -> None:
    assert complete_json(text) == completed


def test_recover_from_text_reports_instead_of_raising(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_agentbench.agents.model import tool_parse

    def explode(*args: object) -> None:
        raise RecursionError("deep")

    monkeypatch.setattr(tool_parse, "_tagged_calls", explode)
    reply = recover_from_text("<tool_call>tap", TOOL_NAMES)
    assert reply.calls == () and reply.content == "<tool_call>tap" and "RecursionError" in reply.problems[0]
