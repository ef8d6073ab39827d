"""Tests for the verdict rules, checks, stumbles and metrics (audit/verdict.py)."""

from __future__ import annotations

import dataclasses
import signal
from pathlib import Path

import pytest

from pytest_agentbench.audit.verdict import audit_run
from pytest_agentbench.records.audit import Verdict
from pytest_agentbench.records.run import ProcessOutcome, ScreenSnapshot
from pytest_agentbench.device.uiautomator import UiNode
from pytest_agentbench.suite import Suite
from pytest_agentbench.audit.transcript import (
    AgentReport,
    InitEvent,
    PermissionDenial,
    ResultEvent,
    ToolCall,
    Transcript,
    UnparseableLine,
)

from auditfakes import (  # noqa: F401  (shared with the other audit-input tests)
    APP,
    DEVICE_AWARE,
    GOOD_SCREEN,
    LIST_DEVICES,
    OBSERVE,
    OK_PROCESS,
    REPLY,
    SET_TOOL_ENABLED,
    TAP,
    call,
    init_event,
    make_run,
    make_suite,
    node,
    result_event,
    run_audit,
    transcript,
)


def test_a_clean_run_passes_with_every_check_recorded() -> None:
    audit = run_audit()
    assert audit.verdict.status == "passed"
    assert audit.verdict.reasons == ()
    assert [(c.kind, c.passed) for c in audit.checks] == [("device-use", True), ("answer", True), ("screen", True)]
    screen_check = audit.checks[2]
    assert screen_check.expected == "Expected count: 3"
    assert screen_check.seen == "Counter | Expected count: 3"


@pytest.mark.parametrize(
    ("process", "reason"),
    [
        (ProcessOutcome(exit_code=None, timed_out=True, signal=None, wall_clock_seconds=600), "timed out after claude.timeoutSeconds=600s"),
        (ProcessOutcome(exit_code=1, timed_out=False, signal=None, wall_clock_seconds=3), "exited with code 1"),
        (ProcessOutcome(exit_code=1, timed_out=False, signal=None, wall_clock_seconds=3,
                        last_stderr_line="AGENTBENCH_OPENAI_BASE_URL is not set: point it at your server"),
         "the agent exited with code 1: AGENTBENCH_OPENAI_BASE_URL is not set: point it at your server"),
        (ProcessOutcome(exit_code=None, timed_out=False, signal=signal.SIGKILL, wall_clock_seconds=3), "killed by SIGKILL"),
        (ProcessOutcome(exit_code=-9, timed_out=False, signal=9, wall_clock_seconds=3), "killed by SIGKILL"),
        (ProcessOutcome(exit_code=None, timed_out=False, signal=None, wall_clock_seconds=3), "exit status is unknown"),
        (ProcessOutcome(exit_code=None, timed_out=False, signal=signal.SIGTERM, wall_clock_seconds=30,
                        stopped_because="no output for 30 s (claude.idleTimeoutSeconds)"), "no output for 30 s (claude.idleTimeoutSeconds)"),
    ],
    ids=[
        "a timeout is incomplete",
        "a non-zero exit is incomplete",
        "a non-zero exit names the agent's last stderr line",
        "a kill by signal is incomplete",
        "a kill by signal with a negative exit code names the signal",
        "an unknown exit status is incomplete",
        "a silent agent the harness ended is incomplete with the reason",
    ],
)
def test_process_problems_make_the_run_incomplete(process: ProcessOutcome, reason: str) -> None:
    audit = run_audit(process=process)
    assert audit.verdict.status == "incomplete"
    assert any(reason in r for r in audit.verdict.reasons), audit.verdict.reasons


@pytest.mark.parametrize(
    ("signum", "exit_code"), [(signal.SIGTERM, None), (signal.SIGKILL, None), (None, 143)], ids=["TERM", "KILL", "exit-143"]
)
def test_an_agent_ended_after_its_result_event_is_a_finished_run(signum: int | None, exit_code: int | None) -> None:
    lingered = ProcessOutcome(exit_code=exit_code, timed_out=False, signal=signum, wall_clock_seconds=9, ended_after_result=True)
    assert run_audit(process=lingered).verdict == run_audit().verdict
    # The result event still decides how it ended: an error result stays incomplete.
    budget = transcript(result=result_event(subtype="error_max_budget_usd", is_error=True))
    assert run_audit(process=lingered, stream=budget).verdict.reasons == run_audit(stream=budget).verdict.reasons


@pytest.mark.parametrize(
    ("init", "reason"),
    [
        (None, "no init event"),
        (init_event(("agentbench", "failed")), "MCP server 'agentbench' was failed, not connected"),
        (init_event(("agentbench", "pending")), "MCP server 'agentbench' was pending, not connected"),
        (init_event(("agentbench", "connected"), ("other", "failed")), "MCP server 'other' was failed"),
        (dataclasses.replace(init_event(), mcp_servers=()), "lists no MCP server"),
    ],
    ids=[
        "a stream without init is incomplete",
        "a failed MCP server is incomplete",
        "a pending MCP server is incomplete",
        "every MCP server must be connected",
        "an init without MCP servers is incomplete",
    ],
)
def test_mcp_not_connected_makes_the_run_incomplete(init: InitEvent | None, reason: str) -> None:
    audit = run_audit(stream=transcript(init=init))
    assert audit.verdict.status == "incomplete"
    assert any(reason in r for r in audit.verdict.reasons), audit.verdict.reasons


@pytest.mark.parametrize(
    ("result", "reason"),
    [
        (None, "ended without a result event"),
        (result_event("error_max_budget_usd", is_error=True, result=None, errors=("Reached maximum budget ($0.0001)",)),
         "ended in error_max_budget_usd: Reached maximum budget"),
        (result_event("error_max_turns", is_error=True, result=None), "ended in error_max_turns"),
        (result_event(is_error=True, result="API Error: 500 Internal Server Error", api_error_status=500),
         "API error (HTTP 500): API Error: 500"),
        (result_event(is_error=True, result="Credit balance is too low"), "API error: Credit balance is too low"),
    ],
    ids=[
        "a missing result is incomplete",
        "a budget stop is incomplete",
        "a turn limit is incomplete",
        "success with is_error is an API error",
        "an API error without a status is still incomplete",
    ],
)
def test_a_missing_or_error_result_makes_the_run_incomplete(result: ResultEvent | None, reason: str) -> None:
    audit = run_audit(stream=transcript(result=result))
    assert audit.verdict.status == "incomplete"
    assert any(reason in r for r in audit.verdict.reasons), audit.verdict.reasons


@pytest.mark.parametrize(
    "unparseable",
    [
        (UnparseableLine(3, '{"type": "assist', "invalid JSON"),),
        (UnparseableLine(2, "garbage", "invalid JSON"), UnparseableLine(7, "[]", "not a JSON object")),
    ],
    ids=["one truncated line is incomplete", "several garbage lines are incomplete"],
)
def test_unparseable_lines_make_the_run_incomplete(unparseable: tuple[UnparseableLine, ...]) -> None:
    audit = run_audit(stream=transcript(unparseable=unparseable))
    assert audit.verdict.status == "incomplete"
    first = unparseable[0]
    count = len(unparseable)
    assert f"{count} stream line{'s' if count > 1 else ''} did not parse (first at line {first.line_number}" in audit.verdict.reasons[0]


def test_incomplete_wins_over_failed_checks() -> None:
    audit = run_audit(
        stream=transcript(final_text="no idea", result=None, tool_calls=()),
        screen=ScreenSnapshot(nodes=(), unavailable_reason=None),
    )
    assert audit.verdict.status == "incomplete"
    assert audit.verdict.reasons == ("the stream ended without a result event",)
    assert not any(c.passed for c in audit.checks), "failed checks are still recorded for the report"


@pytest.mark.parametrize(
    ("calls", "device_used", "seen"),
    [
        ((call(OBSERVE),), True, "observe (ok)"),
        ((call(OBSERVE, "device offline", is_error=True), call(TAP, "tapped", id="t2")), True, "observe (error), tapOn (ok)"),
        ((call(LIST_DEVICES, "emulator-5554"), call(SET_TOOL_ENABLED, "ok", id="t2")), False, "no call to a device-aware tool"),
        ((call(OBSERVE, "device offline", is_error=True),), False, "observe (error)"),
        ((call(OBSERVE, None),), False, "observe (no result)"),
        ((), False, "no call to a device-aware tool"),
    ],
    ids=[
        "one successful device-aware call is enough",
        "an error then a success counts",
        "listDevices and setToolEnabled do not count",
        "an error result does not count",
        "a call without a result does not count",
        "no tool call at all fails",
    ],
)
def test_device_use_rule(calls: tuple[ToolCall, ...], device_used: bool, seen: str) -> None:
    audit = run_audit(stream=transcript(tool_calls=calls))
    check = audit.checks[0]
    assert (check.kind, check.passed, check.seen) == ("device-use", device_used, seen)
    assert audit.verdict.status == ("passed" if device_used else "failed")
    if not device_used:
        assert audit.verdict.reasons == (f"no successful call to a device-aware tool ({seen})",)


@pytest.mark.parametrize(
    ("reply", "status"),
    [
        ("Done.\nEXPECTED_COUNT: 3", "passed"),
        ("Done.\nEXPECTED_COUNT: 30", "failed"),
        ("Done.\nEXPECTED_COUNT: 3.5", "failed"),
        ("Done.\nEXPECTED_COUNT: 3,000", "failed"),
        ("EXPECTED_COUNT: 3\nI could not verify this on the device.", "failed"),
        ("Done.\nexpected_count: `3`.", "passed"),
    ],
    ids=[
        "the expected final line passes",
        "a different count fails",
        "a decimal fails",
        "a thousands separator fails",
        "a disclaimer after the line fails",
        "case, backticks and a trailing period are ignored",
    ],
)
def test_answer_rule_decides_the_verdict(reply: str, status: str) -> None:
    audit = run_audit(stream=transcript(final_text=reply))
    assert audit.verdict.status == status
    answer = audit.checks[1]
    assert answer.kind == "answer" and answer.expected == "EXPECTED_COUNT: 3"
    assert answer.seen.endswith(reply.splitlines()[-1])
    if status == "failed":
        assert audit.verdict.reasons[0].startswith("answer check failed: expected 'EXPECTED_COUNT: 3'; the reply ended with:")


ALL_CODES = "\n".join(f"CODE_{n}: {n}" for n in range(100000, 101000)) + "\nEXPECTED_COUNT: 3"


@pytest.mark.parametrize(
    ("reply", "status", "reason"),
    [
        ("x" * 7980 + "\nEXPECTED_COUNT: 3", "passed", None),
        (ALL_CODES, "failed", "answer check failed: the final answer is 20,017 characters, over the 8,000-character limit"),
    ],
    ids=["just-under-the-limit", "a-dump-of-candidates"],
)
def test_a_final_answer_over_the_size_limit_fails_every_answer_check(reply: str, status: str, reason: str | None) -> None:
    audit = run_audit(stream=transcript(final_text=reply))
    assert audit.verdict.status == status, audit.verdict.reasons
    if reason:
        assert audit.verdict.reasons[0].startswith(reason), audit.verdict.reasons
        assert [c.name for c in audit.checks if not c.passed] == ["answer-size", "answer"]


@pytest.mark.parametrize(
    ("first", "later", "status", "reason"),
    [
        ("error_max_turns", "success", "incomplete", "the run ended in error_max_turns"),
        ("success", "error_max_turns", "incomplete", "a later result event ended in error_max_turns"),
        ("success", "success", "passed", None),
    ],
    ids=["error-then-success", "success-then-error", "success-twice"],
)
def test_the_first_result_decides_and_any_error_result_is_incomplete(first: str, later: str, status: str,
                                                                     reason: str | None) -> None:
    stream = transcript(result=result_event(first, is_error=first != "success"),
                        later_results=(result_event(later, is_error=later != "success"),))
    audit = run_audit(stream=stream)
    assert audit.verdict.status == status, audit.verdict.reasons
    if reason:
        assert any(r.startswith(reason) for r in audit.verdict.reasons), audit.verdict.reasons


def test_answer_falls_back_to_the_result_text() -> None:
    audit = run_audit(stream=transcript(final_text=None))
    assert audit.checks[1].passed


def test_answer_check_in_japanese_needs_a_standalone_word() -> None:
    suite = make_suite(answer_includes=("完了",))
    assert run_audit(suite=suite, stream=transcript(final_text="状態: 完了")).verdict.status == "passed"
    assert run_audit(suite=suite, stream=transcript(final_text="状態: 未完了")).verdict.status == "failed"


@pytest.mark.parametrize(
    ("nodes", "passed"),
    [
        ((node("Expected count: 3"),), True),
        ((node(content_desc="Expected count: 3"),), True),
        ((node("Expected count: 3", package="com.android.systemui"),), False),
        ((node(resource_id="Expected count: 3"),), False),
        ((node("expected count: 3"),), False),
        ((node("Expected count: 30"),), False),
        ((), False),
        # issue 19 D: what the agent typed into a field is not what the app shows.
        ((node("Expected count: 3", class_name="android.widget.EditText"),), False),
        ((node("Expected count: 3", class_name="androidx.compose.ui.platform.ComposeView.TextField"),), False),
        ((node("Expected count: 3", class_name="android.widget.EditText"), node("Expected count: 3")), True),
        ((node("Email", content_desc="Expected count: 3", class_name="android.widget.EditText"),), True),
    ],
    ids=[
        "the app's text passes",
        "the app's content-desc passes",
        "another package's window does not count",
        "a resource id does not count",
        "the screen is case-sensitive",
        "a longer number fails",
        "an empty screen fails",
        "text typed into an EditText does not count",
        "text typed into a text field does not count",
        "the app's own text beside the field counts",
        "an editable field's content-desc (the app's label) counts",
    ],
)
def test_screen_rule(nodes: tuple[UiNode, ...], passed: bool) -> None:
    audit = run_audit(screen=ScreenSnapshot(nodes=nodes, unavailable_reason=None))
    screen = audit.checks[2]
    assert (screen.kind, screen.passed) == ("screen", passed)
    assert audit.verdict.status == ("passed" if passed else "failed")
    if not passed:
        assert audit.verdict.reasons[0].startswith("screen check failed: expected 'Expected count: 3'; app texts on screen:")


def test_failed_screen_check_shows_the_app_texts_that_were_on_screen() -> None:
    nodes = (node("Counter"), node("Expected count: 2"), node("12:00", package="com.android.systemui"))
    audit = run_audit(screen=ScreenSnapshot(nodes=nodes, unavailable_reason=None))
    assert audit.checks[2].seen == "Counter | Expected count: 2"


@pytest.mark.parametrize(
    ("screen", "seen"),
    [
        (ScreenSnapshot(nodes=None, unavailable_reason="another session claimed the device during the run"),
         "another session claimed the device during the run"),
        (ScreenSnapshot(nodes=None, unavailable_reason=None), "the screen could not be read"),
        (None, "the screen was not captured"),
    ],
    ids=[
        "a screen not read because someone else claimed the device fails",
        "an unreadable screen fails",
        "a missing screen fails a suite with screen checks",
    ],
)
def test_unavailable_screen_fails_the_screen_check(screen: ScreenSnapshot | None, seen: str) -> None:
    audit = run_audit(screen=screen)
    assert audit.verdict.status == "failed"
    assert audit.checks[2].seen == seen
    assert seen in audit.verdict.reasons[0]


def test_suite_without_screen_checks_needs_no_screen() -> None:
    audit = run_audit(suite=make_suite(screen_includes=()), screen=None)
    assert audit.verdict.status == "passed"
    assert [c.kind for c in audit.checks] == ["device-use", "answer"]


def test_every_failed_check_is_a_reason() -> None:
    audit = run_audit(
        stream=transcript(tool_calls=(call(LIST_DEVICES),), final_text="EXPECTED_COUNT: 4"),
        screen=ScreenSnapshot(nodes=(node("Expected count: 4"),), unavailable_reason=None),
    )
    assert audit.verdict.status == "failed"
    assert [r.split(" ")[0] for r in audit.verdict.reasons] == ["no", "answer", "screen"]


@pytest.mark.parametrize(
    ("calls", "patterns", "ignored", "denials", "stumbles"),
    [
        ((call(OBSERVE, "device offline", is_error=True), call(OBSERVE, "ok", id="t2")), (), (), (),
         [("tool-error", "observe", "device offline")]),
        ((call(OBSERVE, "Element not found: Save"),), ("not found",), (), (),
         [("failure-pattern", "observe", "'not found' in result: Element not found: Save")]),
        ((call(OBSERVE, "Element not found: Save"),), ("not found",), ("Save",), (), []),
        ((call(OBSERVE, "Element NOT FOUND"),), ("not found",), (), (), []),
        ((call(OBSERVE, "boom: not found", is_error=True),), ("not found",), (), (),
         [("tool-error", "observe", "boom: not found")]),
        ((call(OBSERVE),), (), (), (PermissionDenial("Write", "toolu_1", {"file_path": "/tmp/x"}),),
         [("permission-denial", "Write", '{"file_path": "/tmp/x"}')]),
    ],
    ids=[
        "an error result is a stumble",
        "a failure pattern in a result is a stumble",
        "an ignored pattern in the same result cancels it",
        "failure patterns are case-sensitive",
        "an error result is one stumble, not also a pattern match",
        "a permission denial is a stumble",
    ],
)
def test_stumbles_are_reported_but_never_scored(calls, patterns, ignored, denials, stumbles) -> None:
    suite = make_suite(failure_patterns=patterns, ignored_failure_patterns=ignored)
    stream = transcript(tool_calls=calls, result=result_event(denials=denials))
    audit = run_audit(suite=suite, stream=stream)
    assert [(s.kind, s.tool, s.detail) for s in audit.stumbles] == stumbles
    assert audit.metrics["stumbles"] == len(stumbles)
    expected_status = "passed" if any(c.name == OBSERVE and not c.is_error for c in calls) else "failed"
    assert audit.verdict.status == expected_status


def test_metrics_and_tool_sequence() -> None:
    calls = (
        call(LIST_DEVICES, "emulator-5554", id="t0"),
        call(OBSERVE, id="t1"),
        call(TAP, "no such element", is_error=True, id="t2"),
        call(OBSERVE, id="t3"),
        call("ToolSearch", "found", id="t4"),
    )
    audit = run_audit(stream=transcript(tool_calls=calls))
    assert audit.metrics == {
        "toolCalls": 5,
        "mcpCalls": 4,
        "deviceAwareCalls": 3,
        "turns": 4,
        "inputTokens": 1200,
        "outputTokens": 80,
        "cacheCreationInputTokens": 300,
        "cacheReadInputTokens": 900,
        "costUsd": 0.0123,
        "wallClockSeconds": 4.25,
        "stumbles": 1,
        "recoveries": 0,
        "toolCounts": {"listDevices": 1, "observe": 2, "tapOn": 1, "ToolSearch": 1},
    }
    assert audit.tool_sequence == ("listDevices", "observe", "tapOn", "observe", "ToolSearch")


def test_metrics_of_a_run_without_result_are_zero() -> None:
    audit = run_audit(stream=transcript(result=None, tool_calls=()))
    assert {k: audit.metrics[k] for k in ("turns", "inputTokens", "costUsd", "toolCalls")} == {
        "turns": 0,
        "inputTokens": 0,
        "costUsd": 0.0,
        "toolCalls": 0,
    }


def test_audit_values_are_frozen() -> None:
    audit = run_audit()
    with pytest.raises(dataclasses.FrozenInstanceError):
        audit.verdict = None  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        audit.checks[0].passed = False  # type: ignore[misc]


REAL_STREAMS = Path(__file__).parents[1] / "data" / "claude-code-stream"


@pytest.mark.parametrize(
    ("stream_file", "exit_code", "status", "reason_or_stumble"),
    [
        ("ok_quiet.jsonl", 0, "passed", None),
        ("ok_v2.1.332.jsonl", 0, "passed", None),
        ("thinking.jsonl", 0, "passed", None),
        ("mcp_slow_blocking.jsonl", 0, "passed", None),
        ("toolerror.jsonl", 0, "failed", "no successful call to a device-aware tool"),
        ("text_only.jsonl", 0, "failed", "no successful call to a device-aware tool"),
        ("write_not_allowed.jsonl", 0, "failed", "permission-denial"),
        ("bash_disallowed.jsonl", 0, "failed", "tool-error"),
        ("budget.jsonl", 1, "incomplete", "the run ended in error_max_budget_usd"),
        ("maxturns.jsonl", 1, "incomplete", "the run ended in error_max_turns"),
        ("apierror.jsonl", 1, "incomplete", "the run ended in an API error (HTTP 500)"),
        ("mcp_fail.jsonl", 0, "incomplete", "MCP server 'dev' was failed, not connected"),
        ("mcp_slow.jsonl", 0, "incomplete", "MCP server 'dev' was pending, not connected"),
    ],
    ids=[
        "a real happy path passes",
        "a newer CLI deferring tools behind ToolSearch passes",
        "thinking blocks do not disturb a pass",
        "a slow MCP server waited for passes",
        "a real run whose only device call errored fails",
        "a real answer without touching the device fails",
        "a real permission denial is a stumble",
        "a real disallowed Bash call is a tool error stumble",
        "a real budget stop is incomplete",
        "a real turn limit is incomplete",
        "a real API 500 is incomplete",
        "a real failed MCP server is incomplete",
        "a real pending MCP server is incomplete",
    ],
)
def test_verdicts_of_real_claude_code_transcripts(
    stream_file: str, exit_code: int, status: str, reason_or_stumble: str | None
) -> None:
    from pytest_agentbench.audit.transcript import parse_file

    stream = parse_file(REAL_STREAMS / stream_file)
    run = make_run(
        make_suite(screen_includes=("Expected count: 3",)),
        process=ProcessOutcome(exit_code=exit_code, timed_out=False, signal=None, wall_clock_seconds=2.0),
        device_aware_tools=frozenset({"mcp__dev__observe"}),
    )
    audit = audit_run(run, stream)
    assert audit.verdict.status == status, audit.verdict.reasons
    if reason_or_stumble in {"permission-denial", "tool-error"}:
        assert reason_or_stumble in [s.kind for s in audit.stumbles]
    elif reason_or_stumble is not None:
        # A claim only the stream makes is quoted as the agent's: "the agent's stream says ...".
        assert any(r.startswith(reason_or_stumble) or r.startswith(f"the agent's stream says {reason_or_stumble}")
                   for r in audit.verdict.reasons), audit.verdict.reasons


# Reports of agentbench-agent (transcript.AgentReport): repairs are "recovery" stumbles, a refused
# model call is a "tool-error" stumble, observations (no-change, self-undo, the ending) are neither.
@pytest.mark.parametrize(
    ("reports", "stumbles", "recoveries"),
    [
        ((), [], 0),
        ((AgentReport("recovery", "recovered a tap call (unterminated-json)", 3, {"tool": "tap"}),), [("recovery", "tap")], 1),
        ((AgentReport("retry", "the reply was empty", 1, {}),), [("recovery", "retry")], 1),
        ((AgentReport("action-error", "index 9 is not on the current screen", 2, {"tool": "tap"}),), [("tool-error", "tap")], 0),
        ((AgentReport("no-change", "tap changed nothing", 1, {"tool": "tap"}), AgentReport("self-undo", "undo", 4, {}),
          AgentReport("action", "tap(index=1)", 1, {"tool": "tap"}),
          AgentReport("episode-end", "done", 4, {"ending": "task_complete"})), [], 0),
        ((AgentReport("extra-call", "the reply made 2 calls", 1, {"tool": "back"}),), [("tool-error", "back")], 0),
        # The server's doing, not the model's: reported, never a stumble.
        ((AgentReport("api-retry", "HTTP 429", 1, {"status": 429}), AgentReport("parameter-dropped", "skip", 1, {}),
          AgentReport("model-call", "call 1", 1, {})), [], 0),
    ],
    ids=["none", "recovery", "retry", "refused-call", "observations-only", "extra-call", "server-side"],
)
def test_agent_reports_become_stumbles_and_the_recoveries_metric(reports, stumbles, recoveries) -> None:
    audit = run_audit(stream=transcript(reports=reports))
    assert [(stumble.kind, stumble.tool) for stumble in audit.stumbles] == stumbles
    assert (audit.metrics["recoveries"], audit.metrics["stumbles"]) == (recoveries, len(stumbles))
    assert audit.verdict.status == "passed", "reports are never scored"


# ----------------------------------------------------------------------------- the relay log as the evidence

from pytest_agentbench.run.bridgelog import BridgeConnect, BridgeLog  # noqa: E402
from pytest_agentbench.run.relaylog import RelayCall, RelayLog  # noqa: E402


def relayed(tool: str, status: str = "ok", **arguments: object) -> RelayCall:
    # The arguments `call()` gives its claims, unless told otherwise.
    return RelayCall(server="agentbench", tool=tool, arguments=arguments or dict(call().input), request_id=1, status=status)


# ---------------------------------------------------------------------------------------------
# Whose doing an incomplete run was (issue 21: incomplete must not be a place to hide)

_TIMEOUT = ProcessOutcome(exit_code=None, timed_out=True, signal=None, wall_clock_seconds=600)
# A confined run whose harness worked: the relay started the server once, the model bridge reached the model host.
_CONFINED = {"sandbox": {"mode": "on"}}
_RELAYED = {**_CONFINED, "relay_log": "relay.jsonl"}
_MODEL_REFUSED = BridgeLog(endpoints=("127.0.0.1:9",), connects=(
    BridgeConnect("127.0.0.1:9", "forward", True, None, 1, 1.0),
    BridgeConnect("127.0.0.1:9", "forward", False, "ECONNREFUSED: Connection refused", 1, 2.0)))


@pytest.mark.parametrize(
    ("changes", "cause"),
    [
        ({"process": _TIMEOUT}, "agent"),
        ({"process": ProcessOutcome(exit_code=None, timed_out=False, signal=signal.SIGTERM, wall_clock_seconds=30,
                                    stopped_because="no output for 30 s (claude.idleTimeoutSeconds)")}, "agent"),
        ({"process": ProcessOutcome(exit_code=1, timed_out=False, signal=None, wall_clock_seconds=3)}, "agent"),
        ({"process": ProcessOutcome(exit_code=None, timed_out=False, signal=signal.SIGSEGV, wall_clock_seconds=3)}, "agent"),
        ({"stream": transcript(result=result_event("error_max_budget_usd", is_error=True, result=None))}, "agent"),
        ({"stream": transcript(result=result_event("error_max_turns", is_error=True, result=None))}, "agent"),
        ({"stream": transcript(result=None)}, "agent"),
        ({"stream": transcript(init=None)}, "agent"),
        ({"stream": transcript(unparseable=(UnparseableLine(3, "{", "invalid JSON"),))}, "agent"),
        ({"stream": transcript(later_results=(result_event("error_max_turns", is_error=True),))}, "agent"),
        # An API error the model bridge confirms (its last connection to the model host was refused).
        ({"stream": transcript(later_results=(result_event(is_error=True, api_error_status=529),)), "bridge": _MODEL_REFUSED,
          **_CONFINED, "bridge_log": "model-bridge.jsonl"}, "harness"),
        ({"process": ProcessOutcome(exit_code=None, timed_out=False, signal=None, wall_clock_seconds=0,
                                    stopped_because="the agent never started: no such program: claudex")}, "harness"),
        # The harness stops the group itself: an exit it cannot read is the agent's process not ending.
        ({"process": ProcessOutcome(exit_code=None, timed_out=False, signal=None, wall_clock_seconds=3)}, "agent"),
        # A server the harness's own probe could not start, which the stream reports failed.
        ({"stream": transcript(init=init_event(("agentbench", "failed"))), "probe_error": "agentbench-mcp: exited 1"}, "harness"),
        ({"stream": transcript(init=dataclasses.replace(init_event(), mcp_servers=())), "relay": "server-failed", **_RELAYED}, "harness"),
        ({"stream": transcript(result=result_event(is_error=True, result="API Error: 500", api_error_status=500)),
          "bridge": _MODEL_REFUSED, **_CONFINED, "bridge_log": "model-bridge.jsonl"}, "harness"),
        # Both kinds: the harness's wins, a broken harness proves nothing about the agent.
        ({"process": _TIMEOUT, "stream": transcript(init=init_event(("agentbench", "failed"))), "probe_error": "exited 1"}, "harness"),
        ({"device_lost": "emulator-5554 is no longer listed by adb", "relay": "started", **_RELAYED}, "harness"),
        ({"seal_problems": ("transcript.jsonl changed since the run was saved",), **_CONFINED}, "harness"),
        ({"probe_error": "tools/list timed out", "stream": transcript(tool_calls=())}, "harness"),
    ],
    ids=[
        "timeout", "no output", "non-zero exit", "crash by signal", "budget cap", "turn cap", "no result",
        "no init", "unparseable stream", "later error result", "later API error", "program never started", "exit status unknown", "server not connected",
        "no server in init", "model endpoint failing", "harness wins over agent", "device lost", "seals do not match",
        "tools not listed",
    ],
)
def test_every_incomplete_verdict_names_whose_doing_it_was(changes: dict, cause: str) -> None:
    changes = dict(changes)
    stream = changes.pop("stream", transcript())
    process = changes.pop("process", OK_PROCESS)
    bridge = changes.pop("bridge", None)
    relay = {"server-failed": RelayLog(declared_servers=("agentbench",), server_failures=("agentbench: could not start `x`",)),
             "started": RelayLog(declared_servers=("agentbench",), calls=(relayed("observe"),), connections=1,
                                 started={"agentbench": 1})}.get(changes.pop("relay", ""))
    audit = audit_run(make_run(make_suite(), process=process, **changes), stream, relay, bridge)
    assert audit.verdict.status == "incomplete", audit.verdict
    assert audit.verdict.cause == cause
    assert audit.verdict.to_json()["incompleteCause"] == cause
    assert Verdict.from_json(audit.verdict.to_json()) == audit.verdict


def test_passed_and_failed_verdicts_have_no_cause_and_old_documents_read_back_unchanged() -> None:
    assert run_audit().verdict.cause is None
    assert "incompleteCause" not in run_audit().verdict.to_json()
    old = {"status": "incomplete", "reasons": ["the agent timed out after claude.timeoutSeconds=600s"]}
    assert Verdict.from_json(old).cause is None and Verdict.from_json(old).to_json() == old
    with pytest.raises(ValueError, match="incompleteCause"):
        Verdict("passed", (), "agent")


def no_shell_suite() -> Suite:
    suite = make_suite()
    return dataclasses.replace(suite, verify=dataclasses.replace(suite.verify, no_shell=True))


def relay_log(*calls: RelayCall, **changes: object) -> RelayLog:
    return dataclasses.replace(RelayLog(declared_servers=("agentbench",), calls=calls, connections=1), **changes)


def audit_with_relay(relay: RelayLog | None, stream: Transcript | None = None, *, no_shell: bool = False):
    run = make_run(no_shell_suite() if no_shell else make_suite(), relay_log="relay.jsonl")
    return audit_run(run, stream or transcript(tool_calls=(call(OBSERVE, id="t1", result="ok"),)), relay)


def _call_with_input(name: str, id: str, **arguments: object) -> ToolCall:
    return ToolCall(id=id, name=name, input=dict(arguments), result_text="ok", is_error=False)


def test_tool_use_and_metrics_come_from_the_relay_log() -> None:
    stream = transcript(tool_calls=(call(OBSERVE, id="t1", result="ok"),))
    audit = audit_with_relay(relay_log(relayed("listDevices"), relayed("observe"), relayed("tapOn", "error")), stream)
    assert audit.verdict.status == "passed", audit.verdict
    assert audit.tool_sequence == ("listDevices", "observe", "tapOn")
    assert (audit.metrics["toolCalls"], audit.metrics["mcpCalls"], audit.metrics["deviceAwareCalls"]) == (3, 3, 2)
    # Tokens and cost stay the agent's own report.
    assert audit.metrics["inputTokens"] == stream.result.usage["input_tokens"]


def test_claimed_calls_without_relayed_ones_fail_device_use_and_the_transcript_check() -> None:
    audit = audit_with_relay(relay_log())
    assert audit.verdict.status == "failed"
    assert audit.verdict.reasons[0] == "no successful call to a device-aware tool (no call to a device-aware tool)"
    assert audit.verdict.reasons[1].startswith("the transcript does not match the relay log: mcp__agentbench__observe(")


def test_a_bash_admission_counts_against_no_shell_even_behind_a_reused_id() -> None:
    stream = transcript(tool_calls=(_call_with_input("Bash", "t1", command="adb shell id"), call(OBSERVE, id="t1", result="ok")))
    audit = audit_with_relay(relay_log(relayed("observe")), stream, no_shell=True)
    reasons = audit.verdict.reasons
    assert audit.verdict.status == "failed" and any(r.startswith("shell use (verify.noShell): the run called Bash(") for r in reasons)
    assert any("reuses the id of an earlier tool_use, Bash(" in r for r in reasons), reasons


def test_a_relayed_shell_call_fails_no_shell() -> None:
    run = make_run(no_shell_suite(), relay_log="relay.jsonl", shell_tools=frozenset({"mcp__agentbench__shell"}))
    audit = audit_run(run, transcript(tool_calls=()), relay_log(relayed("observe"), relayed("shell", command="id")))
    assert any(r.startswith("shell use (verify.noShell): the run called mcp__agentbench__shell(") for r in audit.verdict.reasons)


@pytest.mark.parametrize(("relay", "reason"), [
    (None, "the harness has no record of the MCP calls: the relay log relay.jsonl was not read"),
    (RelayLog(unavailable="the relay log relay.jsonl cannot be read: No such file or directory"),
     "the harness has no record of the MCP calls: the relay log relay.jsonl cannot be read: No such file or directory"),
    (RelayLog(declared_servers=("agentbench",), server_failures=("agentbench: could not start `x`",)),
     "the harness could not start the MCP server agentbench: could not start `x`"),
])
def test_a_run_without_usable_relay_evidence_is_incomplete(relay: RelayLog | None, reason: str) -> None:
    audit = audit_with_relay(relay)
    assert audit.verdict.status == "incomplete" and any(r.startswith(reason) for r in audit.verdict.reasons), audit.verdict


def test_a_run_saved_before_the_relay_is_audited_from_its_transcript() -> None:
    audit = run_audit()
    assert audit.verdict.status == "passed" and "transcript" not in {check.kind for check in audit.checks}


# Completion is required of an agent that reports its episode's end (issue 20): only task_complete passes.
@pytest.mark.parametrize(
    ("ending", "status", "reason"),
    [
        (None, "passed", None),
        ("task_complete", "passed", None),
        ("no_tool_call", "failed", "the model never called task_complete (the episode ended no_tool_call: said)"),
        ("empty_reply", "failed", "the model never called task_complete (the episode ended empty_reply: said)"),
        ("self_undo", "failed", "the model never called task_complete (the episode ended self_undo: said)"),
    ],
    ids=["claude-reports-none", "task-complete", "no-tool-call", "empty-reply", "self-undo"],
)
def test_completion_is_required_of_an_agent_that_reports_its_ending(ending: str | None, status: str, reason: str | None) -> None:
    reports = () if ending is None else (AgentReport("episode-end", "said", 3, {"ending": ending}),)
    audit = run_audit(stream=transcript(reports=reports))
    assert audit.verdict.status == status and (reason is None or audit.verdict.reasons == (reason,)), audit.verdict.reasons
    kinds = [check.kind for check in audit.checks]
    assert ("completion" in kinds) == (ending is not None)


def test_unknown_token_counts_are_none_in_the_metrics_not_zero() -> None:
    known = run_audit(stream=transcript(reports=()))
    assert known.metrics["inputTokens"] is not None
    unknown = run_audit(stream=transcript(reports=(AgentReport("usage-unknown", "no usage", 1, {}),)))
    keys = ("inputTokens", "outputTokens", "cacheCreationInputTokens", "cacheReadInputTokens")
    assert [unknown.metrics[key] for key in keys] == [None] * 4
