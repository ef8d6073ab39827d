"""The demo suites' checks (issue 28, I) -> a screen entry of several lines is one check of them together; a tool the suite denies fails the run when the relay carried a call to it."""

from __future__ import annotations

import dataclasses

import pytest
from auditfakes import APP, make_run, make_suite, node, transcript

from pytest_agentbench.audit.verdict import audit_run, disallowed_tool_check, screen_checks
from pytest_agentbench.device.uiautomator import screen_includes
from pytest_agentbench.records.run import ScreenSnapshot
from pytest_agentbench.run.relaylog import RelayCall, RelayLog

REPRODUCED = "Expected count: 3\nDisplayed count: 0\nStatus: Bug triggered: UI did not update"


def screen(*texts: str, package: str = APP) -> ScreenSnapshot:
    return ScreenSnapshot(nodes=tuple(node(text, package=package) for text in texts))


@pytest.mark.parametrize(
    ("texts", "passes"),
    [
        (("Expected count: 3", "Displayed count: 0", "Status: Bug triggered: UI did not update"), True),
        # The lines may come in any order and among other texts, each from its own node.
        (("Status: Bug triggered: UI did not update", "Add Item", "Displayed count: 0", "Expected count: 3"), True),
        # The switch left off: every add shows.
        (("Expected count: 3", "Displayed count: 3", "Status: Updated"), False),
        # The bug turned on for the last tap only.
        (("Expected count: 3", "Displayed count: 2", "Status: Bug triggered: UI did not update"), False),
        # The fresh screen: "Displayed count: 0" alone is not the reproduced state.
        (("Expected count: 0", "Displayed count: 0", "Status: Idle"), False),
        # Each line still stands alone: 30 is not 3.
        (("Expected count: 30", "Displayed count: 0", "Status: Bug triggered: UI did not update"), False),
    ],
    ids=["reproduced", "any order", "bug left off", "bug on for the last tap", "fresh", "30 is not 3"],
)
def test_an_entry_of_several_lines_needs_every_line_on_the_one_screen(texts: tuple[str, ...], passes: bool) -> None:
    suite = make_suite(screen_includes=(REPRODUCED,))
    (check,) = screen_checks(suite, screen(*texts))
    assert check.passed is passes
    assert screen_includes(texts, REPRODUCED) is passes


def test_a_failed_entry_of_several_lines_names_each_line() -> None:
    suite = make_suite(screen_includes=(REPRODUCED,))
    audit = audit_run(make_run(suite, screen=screen("Expected count: 3", "Displayed count: 3", "Status: Updated")), transcript())
    assert audit.verdict.reasons == (
        "screen check failed: expected 'Expected count: 3', 'Displayed count: 0' and 'Status: Bug triggered: UI did not update' "
        "together; app texts on screen: Expected count: 3 | Displayed count: 3 | Status: Updated",)


def test_a_one_line_entry_is_judged_as_before() -> None:
    assert screen_includes(["Expected count: 3"], "Expected count: 3")
    assert not screen_includes(["Expected count: 3"], "")
    assert not screen_includes(["Expected count: 3"], "\n\n")


# ----------------------------------------------------------------------------- claude.disallowedTools


def relayed(tool: str, server: str = "agentbench") -> RelayCall:
    return RelayCall(server=server, tool=tool, arguments={"url": "automobile://playground/demos/ux/details"}, request_id=1, status="ok")


def denying(*rules: str):
    suite = make_suite()
    return dataclasses.replace(suite, claude=dataclasses.replace(suite.claude, disallowed_tools=rules))


@pytest.mark.parametrize(
    ("rules", "calls", "passed"),
    [
        (("openLink", "navigateTo", "executePlan"), ("observe", "tapOn"), True),
        (("openLink", "navigateTo", "executePlan"), ("observe", "openLink", "tapOn"), False),
        (("mcp__agentbench__openLink",), ("openLink",), False),
        (("mcp__agentbench",), ("observe",), False),
        (("mcp__agentbench__*",), ("observe",), False),
        (("mcp__other",), ("observe",), True),
        # A content rule and a built-in name never name an MCP call.
        (("Bash(adb *)", "WebFetch"), ("observe", "openLink"), True),
    ],
    ids=["other tools", "a denied tool", "a full name", "a whole server", "a server's every tool", "another server",
         "content rules and built-ins"],
)
def test_a_call_the_relay_carried_to_a_denied_tool_fails(rules: tuple[str, ...], calls: tuple[str, ...], passed: bool) -> None:
    check = disallowed_tool_check(denying(*rules), [relayed(tool) for tool in calls])
    assert check is not None and check.passed is passed and check.name == "disallowedTools"


def test_a_suite_that_denies_nothing_has_no_such_check_and_a_deep_link_fails_the_run() -> None:
    assert disallowed_tool_check(make_suite(), [relayed("openLink")]) is None
    suite = denying("openLink", "navigateTo", "executePlan")
    relay = RelayLog(declared_servers=("agentbench",), calls=(relayed("openLink"), relayed("observe")), connections=1)
    audit = audit_run(make_run(suite, relay_log="relay.jsonl"), transcript(tool_calls=()), relay)
    assert audit.verdict.status == "failed"
    assert audit.verdict.reasons == ("a tool the suite denies (claude.disallowedTools): the run called "
                                     'mcp__agentbench__openLink({"url": "automobile://playground/demos/ux/details"})',)
    # A run saved before the relay has no record of what ran: no such check.
    assert "disallowed-tool" not in {check.kind for check in audit_run(make_run(suite), transcript()).checks}
