"""Builders of audit inputs for the tests: a Suite, tool calls, transcripts, a Run with its screen and process, and audit_run over them."""

from __future__ import annotations

import dataclasses
from pathlib import Path


from pytest_agentbench.audit.verdict import audit_run
from pytest_agentbench.records.run import ProcessOutcome, Run, ScreenSnapshot
from pytest_agentbench.device.uiautomator import UiNode
from pytest_agentbench.suite import AppSpec, ClaudeSpec, PreflightSpec, Suite, VerifySpec
from pytest_agentbench.audit.transcript import (
    InitEvent,
    McpServerStatus,
    PermissionDenial,
    ResultEvent,
    ToolCall,
    Transcript,
)

APP = "dev.agentbench.counter"
OBSERVE = "mcp__agentbench__observe"
TAP = "mcp__agentbench__tapOn"
LIST_DEVICES = "mcp__agentbench__listDevices"
SET_TOOL_ENABLED = "mcp__agentbench__setToolEnabled"
DEVICE_AWARE = frozenset({OBSERVE, TAP})
REPLY = "I added three items.\nEXPECTED_COUNT: 3"


def make_suite(
    *,
    answer_includes: tuple[str, ...] = ("EXPECTED_COUNT: 3",),
    screen_includes: tuple[str, ...] = ("Expected count: 3",),
    failure_patterns: tuple[str, ...] = (),
    ignored_failure_patterns: tuple[str, ...] = (),
) -> Suite:
    return Suite(
        path=Path("/suites/counter.yml"),
        name="counter",
        line=0,
        platform="android",
        prompt_path=Path("/prompts/counter.txt"),
        prompt_text="Add three items.",
        app=AppSpec(package_name=APP, apk_path=None),
        preflight=PreflightSpec(
            clear_app_data=True, shared_preferences={}, launch_uri=None, settle_seconds=0.0, start_screen_includes=()
        ),
        claude=ClaudeSpec(
            model=None,
            append_system_prompt=None,
            allowed_tools=None,
            disallowed_tools=(),
            max_budget_usd=None,
            timeout_seconds=600,
        ),
        verify=VerifySpec(answer_includes=answer_includes, screen_includes=screen_includes),
        failure_patterns=failure_patterns,
        ignored_failure_patterns=ignored_failure_patterns,
        baseline=None,
        baseline_tool_sequence=(),
        raw={},
    )


def node(text: str = "", *, content_desc: str = "", package: str = APP, resource_id: str = "",
         class_name: str = "android.widget.TextView") -> UiNode:
    return UiNode(
        index=0,
        text=text,
        content_desc=content_desc,
        resource_id=resource_id,
        class_name=class_name,
        package=package,
        checkable=False,
        checked=False,
        clickable=False,
        enabled=True,
        focusable=False,
        focused=False,
        scrollable=False,
        long_clickable=False,
        selected=False,
        password=False,
        bounds=(0, 0, 100, 50),
    )


def call(name: str = OBSERVE, result: str | None = "3 items", *, is_error: bool = False, id: str = "t1") -> ToolCall:
    return ToolCall(id=id, name=name, input={"device": "emulator-5554"}, result_text=result, is_error=is_error)


def result_event(
    subtype: str = "success",
    *,
    is_error: bool = False,
    result: str | None = REPLY,
    api_error_status: int | None = None,
    errors: tuple[str, ...] = (),
    denials: tuple[PermissionDenial, ...] = (),
) -> ResultEvent:
    return ResultEvent(
        subtype=subtype,
        is_error=is_error,
        num_turns=4,
        result=result,
        total_cost_usd=0.0123,
        usage={
            "input_tokens": 1200,
            "output_tokens": 80,
            "cache_creation_input_tokens": 300,
            "cache_read_input_tokens": 900,
        },
        duration_ms=4200,
        api_error_status=api_error_status,
        permission_denials=denials,
        errors=errors,
    )


def init_event(*statuses: tuple[str, str]) -> InitEvent:
    servers = statuses or (("agentbench", "connected"),)
    return InitEvent(
        session_id="s1",
        model="claude-sonnet-4-5",
        claude_code_version="2.1.197",
        cwd="/tmp/run",
        tools=(OBSERVE, TAP, LIST_DEVICES),
        mcp_servers=tuple(McpServerStatus(name, status) for name, status in servers),
    )


def transcript(**changes: object) -> Transcript:
    base = Transcript(
        init=init_event(),
        tool_calls=(call(OBSERVE, id="t1"), call(TAP, "tapped", id="t2"), call(OBSERVE, "Expected count: 3", id="t3")),
        final_text=REPLY,
        result=result_event(),
        unparseable=(),
        line_count=9,
        observed_model="claude-sonnet-4-5",
    )
    return dataclasses.replace(base, **changes)


OK_PROCESS = ProcessOutcome(exit_code=0, timed_out=False, signal=None, wall_clock_seconds=4.25)
GOOD_SCREEN = ScreenSnapshot(nodes=(node("Counter"), node("Expected count: 3")), unavailable_reason=None)


def make_run(
    suite: Suite,
    *,
    process: ProcessOutcome = OK_PROCESS,
    screen: ScreenSnapshot | None = GOOD_SCREEN,
    device_aware_tools: frozenset[str] = DEVICE_AWARE,
    **extra: object,
) -> Run:
    return Run(suite=suite, run_dir=Path("/runs/x"), process=process, screen=screen,
               device_aware_tools=device_aware_tools, **extra)  # type: ignore[arg-type]


def run_audit(
    *,
    suite: Suite | None = None,
    stream: Transcript | None = None,
    process: ProcessOutcome = OK_PROCESS,
    screen: ScreenSnapshot | None = GOOD_SCREEN,
):
    return audit_run(make_run(suite or make_suite(), process=process, screen=screen), stream or transcript())
