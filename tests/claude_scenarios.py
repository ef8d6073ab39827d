"""Scenario names -> scripted model turns for tests/fake_anthropic.py, playing an agent on the bug-repro task.

Each turn looks at the request Claude Code sends: the tools it offers (the built-in server's
`mcp__agentbench__observe` and `tapOn`, which take a `device`), the device serial the harness put
into the system prompt, and the tool results of the previous turn. A turn that sees something
unexpected raises `ScenarioError`; the fake then answers with a final "SCENARIO ERROR" text,
and `Scenario.problems` tells the test why (so a broken assumption never passes silently).

    scenario = SCENARIOS["solves"]()
    with FakeAnthropic(scenario.turns, after_script=scenario.after_script) as api: ...
    assert scenario.problems == []
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from fake_anthropic import HANG, MessagesRequest, Outcome, Turn, reply, text, tool_use

#: Usage big enough that one turn costs far more than a tiny `maxBudgetUsd` (a few dollars at
#: Sonnet prices), so Claude Code stops with `error_max_budget_usd` after the first turn.
BUDGET_BUSTING_USAGE = {"input_tokens": 2_000_000, "output_tokens": 200_000}

_SERIAL = re.compile(r"Use only the Android device with serial (\S+?);")
_COUNT = re.compile(r"(Expected|Displayed) count: (\d+)")


class ScenarioError(AssertionError):
    """A scripted turn saw a request it was not written for."""


@dataclass
class Scenario:
    """Turns for FakeAnthropic, plus what the turns noticed on the way.

    Attributes:
        turns: One per agent-loop request, in order.
        after_script: The answer once the turns are used up (by default a problem: a scenario must not run on).
        problems: Assumptions a turn found broken (empty when the CLI behaved as scripted).
        seen_results: The tool results each turn received, for the test's evidence checks.
    """

    turns: list[Turn]
    after_script: Turn
    problems: list[str] = field(default_factory=list)
    seen_results: list[list[tuple[str, bool]]] = field(default_factory=list)


def device_serial(request: MessagesRequest) -> str:
    """The serial the harness told the agent to use (its system-prompt sentence)."""
    system = request.body.get("system") or []
    blocks = [system] if isinstance(system, str) else [b.get("text", "") for b in system if isinstance(b, dict)]
    for block in blocks:
        found = _SERIAL.search(block)
        if found:
            return found.group(1)
    raise ScenarioError("the system prompt does not name the device serial")


def screen_counts(result_text: str) -> dict[str, str]:
    """`{"Expected": "3", "Displayed": "0"}` from a tool result showing the bug-repro screen."""
    return {kind: number for kind, number in _COUNT.findall(result_text)}


def _scripted(builders: list[Callable[[MessagesRequest], Outcome]]) -> Scenario:
    def ran_past(request: MessagesRequest) -> Outcome:
        scenario.problems.append(f"request {request.turn} came after the script's {len(builders)} turns")
        return reply(text("SCENARIO ERROR: ran past the script"))

    scenario = Scenario(turns=[], after_script=ran_past)

    def wrap(index: int, build: Callable[[MessagesRequest], Outcome]) -> Turn:
        def turn(request: MessagesRequest) -> Outcome:
            scenario.seen_results.append([(result.text, result.is_error) for result in request.tool_results()])
            try:
                return build(request)
            except (ScenarioError, LookupError) as problem:
                scenario.problems.append(f"turn {index}: {problem}")
                # A plain final answer ends the run at once (an HTTP error would be retried for
                # minutes, since the harness scrubs CLAUDE_CODE_MAX_RETRIES).
                return reply(text(f"SCENARIO ERROR at turn {index}: {problem}"))

        return turn

    scenario.turns = [wrap(index, build) for index, build in enumerate(builders)]
    return scenario


def _expect_tools(request: MessagesRequest) -> None:
    # The harness allows only the server's tools and always disallows Bash.
    for short in ("observe", "tapOn"):
        request.tool_named(short)
    if "Bash" in request.tools:
        raise ScenarioError(f"Bash is offered although the harness disallows it: {request.tools}")


def _last_result(request: MessagesRequest, *, error: bool = False) -> str:
    results = request.tool_results()
    if len(results) != 1:
        raise ScenarioError(f"expected one tool result, got {len(results)}: {results}; last messages: {_shape(request)}")
    (result,) = results
    if result.is_error != error:
        raise ScenarioError(f"expected a tool result with is_error={error}, got {result}")
    return result.text


def _shape(request: MessagesRequest) -> list:
    """Roles and block types of the last two messages (for a readable problem report)."""
    shape = []
    for message in (request.body.get("messages") or [])[-2:]:
        content = message.get("content")
        kinds = [b.get("type") for b in content if isinstance(b, dict)] if isinstance(content, list) else ["str"]
        shape.append((message.get("role"), kinds))
    return shape


def _call(short: str, **args: object) -> Callable[[MessagesRequest], Outcome]:
    def build(request: MessagesRequest) -> Outcome:
        _last_result(request)
        return reply(tool_use(request.tool_named(short), {**args, "device": device_serial(request)}))

    return build


def _first_observe(request: MessagesRequest) -> Outcome:
    _expect_tools(request)
    return reply(text("I'll look at the screen first."), tool_use(request.tool_named("observe"), {"device": device_serial(request)}))


def _enable_bug(request: MessagesRequest) -> Outcome:
    if "Bug Reproduction Demo" not in _last_result(request):
        raise ScenarioError("observe did not show the Bug Reproduction Demo screen")
    return reply(tool_use(request.tool_named("tapOn"), {"text": "Enable Bug", "device": device_serial(request)}))


def _answer_from_screen(request: MessagesRequest) -> Outcome:
    counts = screen_counts(_last_result(request))
    if set(counts) != {"Expected", "Displayed"}:
        raise ScenarioError(f"the last tool result shows no counts: {request.tool_results()}")
    return reply(
        text(
            "Enabled the bug and tapped Add Item three times; the displayed count did not follow.\n"
            f"EXPECTED_COUNT: {counts['Expected']}\nDISPLAYED_COUNT: {counts['Displayed']}"
        )
    )


def solves() -> Scenario:
    """observe, tapOn Enable Bug, tapOn Add Item x3, then the two lines read from the last result."""
    add = _call("tapOn", text="Add Item")
    return _scripted([_first_observe, _enable_bug, add, add, add, _answer_from_screen])


def answers_without_the_phone() -> Scenario:
    """The right final lines at once, without a single tool call."""

    def answer(request: MessagesRequest) -> Outcome:
        _expect_tools(request)
        return reply(text("EXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"))

    return _scripted([answer])


def recovers_from_a_tool_error() -> Scenario:
    """A typo (`tapOn text "Ad Item"`) gets an error sentence; the agent follows its hint and finishes."""

    def typo(request: MessagesRequest) -> Outcome:
        _last_result(request)
        return reply(tool_use(request.tool_named("tapOn"), {"text": "Ad Item", "device": device_serial(request)}))

    def follow_hint(request: MessagesRequest) -> Outcome:
        sentence = _last_result(request, error=True)
        hint = re.search(r"did you mean '([^']+)'", sentence)
        if hint is None:
            raise ScenarioError(f"the error sentence has no hint: {sentence!r}")
        return reply(text(f"Retrying with '{hint.group(1)}'."), tool_use(request.tool_named("tapOn"), {"text": hint.group(1), "device": device_serial(request)}))

    add = _call("tapOn", text="Add Item")
    return _scripted([_first_observe, _enable_bug, typo, follow_hint, add, add, _answer_from_screen])


def hangs() -> Scenario:
    """The API never answers the first agent request."""

    def hang(request: MessagesRequest) -> Outcome:
        _expect_tools(request)
        return HANG

    return _scripted([hang])


def exceeds_the_budget() -> Scenario:
    """The first turn (an observe call) reports usage that costs more than the suite's budget."""

    def expensive_observe(request: MessagesRequest) -> Outcome:
        _expect_tools(request)
        return reply(tool_use(request.tool_named("observe"), {"device": device_serial(request)}), usage=BUDGET_BUSTING_USAGE)

    scenario = _scripted([expensive_observe])
    # Should Claude Code ask again despite the budget, it gets the same bill and a plain answer.
    scenario.after_script = lambda request: reply(text("EXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"), usage=BUDGET_BUSTING_USAGE)
    return scenario


def runs_without_its_server() -> Scenario:
    """No device tools are offered (the MCP server failed to start): the agent says so and stops."""

    def give_up(request: MessagesRequest) -> Outcome:
        if any(name.startswith("mcp__") for name in request.tools):
            raise ScenarioError(f"MCP tools are offered although the server command is missing: {request.tools}")
        return reply(text("I have no device tools, so I cannot do this task."))

    return _scripted([give_up])


SCENARIOS: dict[str, Callable[[], Scenario]] = {
    "solves": solves,
    "answers-without-the-phone": answers_without_the_phone,
    "recovers-from-a-tool-error": recovers_from_a_tool_error,
    "hangs": hangs,
    "exceeds-the-budget": exceeds_the_budget,
    "runs-without-its-server": runs_without_its_server,
}
