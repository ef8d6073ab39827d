"""A Run record and its parsed transcript -> checks, stumbles, metrics and the one verdict.

Pure: no I/O, no clock. Only hard signals decide the verdict; baselines never do. This is the
only place a verdict is decided, for live runs and re-rendered ones alike.

* `incomplete` (wins over `failed`): the agent timed out, printed nothing for
  `idleTimeoutSeconds`, was killed by a signal or exited non-zero (an agent the harness ended
  because it lingered after its `result` event counts as finished), an MCP server was not
  `connected` in init (or there was no init), the stream has no `result` or an error one
  (`error_max_budget_usd`, `error_max_turns`, `success` with `is_error` = an API error; the
  first result event decides, and an error result after it also leaves the run incomplete), or
  some stream lines did not parse; the relay log or the seals are not what the harness wrote, or
  the device went away, or the harness could not list the server's tools when device use failed.
  Every incomplete verdict names its cause (`Verdict.cause`), decided in `audit.causes`: the
  harness's only on evidence the harness owns (its processes, its relay's records, its probe,
  its model bridge's record, its device reads, its seals on a confined run); what only the
  agent's stream says (a server not connected, an API error) is the agent's unless that evidence
  confirms it, and the reason says which. When both kinds of reason are present the harness's
  wins: a broken harness proves nothing about the agent. The statistics count the agent's
  incomplete runs as not passed (docs/statistics.md).
* `failed`: the run completed, but there was no non-error call to a device-aware tool, or the
  final answer is over `matching.MAX_ANSWER_CHARS`, or an answer check, a screen check or a device check failed (a screen or a device source that could
  not be read fails its checks), or `verify.noShell` is set and the run called a shell tool, or
  the relay carried a call to a tool the suite's `claude.disallowedTools` denies.
* `passed`: everything else.

Evidence (docs/verdicts.md#where-the-evidence-comes-from): with a relay log (every live run),
tool calls, device use, `noShell` and the tool-call metrics come from the calls the harness's
relay carried; the transcript is the agent's claim, cross-checked against the log
(`audit.crosscheck`: a claim the log does not back fails the run), and its own Bash/PowerShell
tool_use blocks still count against `noShell`. Tokens, cost and turns are the agent's report.
A run saved before the relay existed has no log and is audited from the transcript alone.

Stumbles (tool errors, failure patterns in tool results, permission denials, and the repairs an
agent of this project reports: `recovery`) are reported and counted in the metrics, never scored.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from pytest_agentbench.audit import causes
from pytest_agentbench.audit.crosscheck import first_mismatch, split_mcp_name
from pytest_agentbench.audit.matching import answer_size_problem, match_answer
from pytest_agentbench.audit.transcript import short_tool_name
from pytest_agentbench.checks import CheckContext, evaluate
from pytest_agentbench.checks.base import Check
from pytest_agentbench.device.uiautomator import app_texts, screen_includes
from pytest_agentbench.records.audit import Audit, IncompleteCause, Stumble, Verdict
from pytest_agentbench.records.run import DeviceState, ProcessOutcome, Run, ScreenSnapshot
from pytest_agentbench.run.relaylog import RelayLog

if TYPE_CHECKING:
    from pytest_agentbench.audit.transcript import ToolCall, Transcript
    from pytest_agentbench.run.bridgelog import BridgeLog
    from pytest_agentbench.run.relaylog import RelayCall
    from pytest_agentbench.suite import Suite

#: Check kinds besides the device check kinds of `checks.KINDS`.
CheckKind = Literal["answer", "screen", "device-use", "no-shell", "disallowed-tool", "transcript", "completion"]
#: Claude Code's own tools that run commands; a server's shells come from its profile and schemas.
BUILTIN_SHELL_TOOLS = frozenset({"Bash", "PowerShell"})
# Reports (transcript.AgentReport kinds) of agentbench-agent that become stumbles: the agent
# repaired its model's output or asked again ("recovery"), or refused a model's call ("tool-error").
_RECOVERY_REPORTS = frozenset({"recovery", "retry"})
_TOOL_ERROR_REPORTS = frozenset({"action-error", "extra-call"})
#: The report an agent of this project writes when a model call came without token counts.
USAGE_UNKNOWN_REPORT = "usage-unknown"
TOKEN_METRICS = ("inputTokens", "outputTokens", "cacheCreationInputTokens", "cacheReadInputTokens")
#: The report an agent of this project ends its episode with (`ending`: task_complete, no_tool_call, ...).
EPISODE_END_REPORT = "episode-end"
COMPLETED_ENDING = "task_complete"

# Results and replies are quoted in reasons; long ones are cut so a report stays readable.
_DETAIL_CHARS = 300


def _cut(text: str, limit: int = _DETAIL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def incomplete_findings(run: Run, transcript: Transcript, relay: RelayLog | None = None,
                        bridge: BridgeLog | None = None) -> list[tuple[str, IncompleteCause]]:
    """List why a run did not complete, each reason with whose doing it was (`audit.causes`); empty when it did.

    Args:
        run: The run record (its process outcome, confinement, probe error, seals, device).
        transcript: The parsed stream (the agent's claims: init, results).
        relay: The relay log, when the run had one.
        bridge: The model bridge log, when the run was confined with a model endpoint.

    Returns:
        (sentence, cause) per reason, in the order a reader should fix them.
    """
    found = causes.process_findings(run)
    found += causes.server_findings(run, transcript, relay)
    found += causes.result_findings(run, transcript, bridge)
    return found


def device_use_check(tool_calls: Iterable[ToolCall | RelayCall], device_aware_tools: frozenset[str]) -> Check:
    """Check that at least one device-aware tool call succeeded.

    A call counts only with a tool_result that is not an error; inventory and control tools
    (`listDevices`, `setToolEnabled`) are not in `device_aware_tools`, so they never count.

    Args:
        tool_calls: The run's tool calls.
        device_aware_tools: Full names of tools whose schema takes a `device` string.

    Returns:
        A `device-use` check whose `seen` lists the device-aware calls and their outcome.
    """
    device_calls = [call for call in tool_calls if call.name in device_aware_tools]
    succeeded = [call for call in device_calls if call.result_text is not None and not call.is_error]
    if device_calls:
        # One string per distinct tool and outcome, not one per call: 36,000 calls made 2 MB of copies.
        labels: dict[tuple[str, str], str] = {}
        outcomes = []
        for call in device_calls:
            key = (call.name, "no result" if call.result_text is None else "error" if call.is_error else "ok")
            label = labels.get(key)
            if label is None:
                label = labels[key] = f"{short_tool_name(key[0])} ({key[1]})"
            outcomes.append(label)
        seen = ", ".join(outcomes)
    else:
        seen = "no call to a device-aware tool"
    return Check("device-use", "a successful call to a device-aware tool", bool(succeeded), seen)


def final_reply(transcript: Transcript) -> str | None:
    """The agent's final answer: its last text, else the result event's text."""
    reply = transcript.final_text
    if reply is None and transcript.result is not None:
        reply = transcript.result.result
    return reply


def answer_checks(suite: Suite, transcript: Transcript | None, *, reply: str | None = None) -> list[Check]:
    """Judge `verify.answerIncludes` against the final reply (see `matching.match_answer`).

    A reply over `matching.MAX_ANSWER_CHARS` is one failed `answer-size` check, and every
    `answerIncludes` entry fails with the same reason: nothing is looked for in it.
    """
    if transcript is not None:
        reply = final_reply(transcript)
    too_long = answer_size_problem(reply)
    if too_long:
        return [Check("answer", "a final answer within the size limit", False, too_long, "answer-size"),
                *(Check("answer", item, False, too_long, "answer") for item in suite.verify.answer_includes)]
    return [
        Check("answer", match.expected, match.passed, match.seen, "answer")
        for match in match_answer(reply, suite.verify.answer_includes)
    ]


def judged_reply(reply: str | None) -> str | None:
    """The reply the device checks read (`inAnswer`, `report`): None when it is over the size limit."""
    return None if answer_size_problem(reply) else reply


def screen_checks(suite: Suite, screen: ScreenSnapshot | None) -> list[Check]:
    """Judge `verify.screenIncludes` against the app's own texts on the post-run screen.

    Only `text` and `content-desc` of nodes in the suite's package count, matched standalone
    and case-sensitively. A screen that was not captured or not readable fails every check.
    """
    expected = suite.verify.screen_includes
    if not expected:
        return []
    if screen is None:
        return [Check("screen", item, False, "the screen was not captured", "screen") for item in expected]
    if screen.nodes is None:
        why = screen.unavailable_reason or "the screen could not be read"
        return [Check("screen", item, False, why, "screen") for item in expected]
    texts = app_texts(screen.nodes, suite.app.package_name)
    seen = " | ".join(texts) if texts else f"no text from {suite.app.package_name} on screen"
    return [Check("screen", item, screen_includes(texts, item), seen, "screen") for item in expected]


def device_checks(suite: Suite, state: DeviceState | None, reply: str | None) -> list[Check]:
    """Judge `verify.device` from the reads before and after the run (see `checks.evaluate`)."""
    specs = suite.verify.device_checks
    if not specs:
        return []
    state = state or DeviceState(None, None, "the device state was not read")
    return evaluate(specs, state.before, state.after, CheckContext(answer=judged_reply(reply)), unavailable=state.unavailable)


def state_checks(suite: Suite, screen: ScreenSnapshot | None, state: DeviceState | None, reply: str | None) -> list[Check]:
    """Every check a run's end state and answer decide: answer, screen, device (what `--agentbench-prove` judges)."""
    return [
        *answer_checks(suite, None, reply=reply),
        *screen_checks(suite, screen),
        *device_checks(suite, state, reply),
    ]


def no_shell_check(tool_calls: Iterable[ToolCall | RelayCall], shell_tools: frozenset[str]) -> Check:
    """`verify.noShell`: no call, successful or not, to a shell tool.

    Args:
        tool_calls: The run's tool calls.
        shell_tools: Full names of the server's shell tools (profile and schemas); Claude Code's
            own `Bash` and `PowerShell` always count.

    Returns:
        A `no-shell` check whose `seen` names every shell call.
    """
    shells = BUILTIN_SHELL_TOOLS | shell_tools
    calls = [call for call in tool_calls if call.name in shells]
    if not calls:
        return Check("no-shell", "no call to a shell tool", True, "no shell tool was called", "noShell")
    shown = ", ".join(
        f"{call.name}({_cut(json.dumps(call.input, ensure_ascii=False, sort_keys=True), 160)})"
        f" ({'no result' if call.result_text is None else 'error' if call.is_error else 'ok'})"
        for call in calls
    )
    return Check("no-shell", "no call to a shell tool", False, shown, "noShell")


def _denies(rule: str, call: RelayCall) -> bool:
    """Whether a `claude.disallowedTools` rule names a call the relay carried (Claude Code's rule forms).

    A bare lowercase name is a tool of the configured server (`openLink`), `mcp__srv` and
    `mcp__srv__*` every tool of a server, `mcp__srv__tool` one tool; a content rule (`Bash(git *)`)
    and a built-in name never name an MCP call.
    """
    if "(" in rule:
        return False
    if rule.startswith("mcp__"):
        if rule.count("__") == 1 or rule.endswith("__*"):
            return call.server == rule.removeprefix("mcp__").removesuffix("__*")
        return call.name == rule
    return rule[:1].islower() and call.tool == rule


def disallowed_tool_check(suite: Suite, calls: Iterable[RelayCall]) -> Check | None:
    """`claude.disallowedTools`: no call the relay carried went to a tool the suite denies; None when it denies none.

    The flag asks the agent's CLI to refuse those tools, but an agent that ignores it still
    reaches them through the relay (a deep link in `ux-flow` skips the screens being measured):
    the relay log is what decides.
    """
    rules = suite.claude.disallowed_tools
    if not rules:
        return None
    expected = f"no call to a tool claude.disallowedTools denies ({', '.join(rules)})"
    hits = [call for call in calls if any(_denies(rule, call) for rule in rules)]
    if not hits:
        return Check("disallowed-tool", expected, True, "no denied tool was called", "disallowedTools")
    shown = ", ".join(f"{call.name}({_cut(json.dumps(call.input, ensure_ascii=False, sort_keys=True), 160)})" for call in hits)
    return Check("disallowed-tool", expected, False, shown, "disallowedTools")


def watched_patterns(suite: Suite) -> tuple[str, ...]:
    """The substrings the transcript parser must watch for in full tool results, for `stumbles_of`."""
    return tuple(pattern for pattern in (*suite.failure_patterns, *suite.ignored_failure_patterns) if pattern)


def stumbles_of(suite: Suite, transcript: Transcript) -> list[Stumble]:
    """Collect tool errors, failure-pattern matches and permission denials, in stream order.

    A result that is already an error is one stumble, not also a failure-pattern match. A
    failure pattern counts unless an `ignoredFailurePatterns` entry occurs in the same result.
    Patterns are case-sensitive substrings of the whole result (the transcript parser watched
    for them while the result streamed past; see `watched_patterns`).
    """
    found: list[Stumble] = []
    for call in transcript.tool_calls:
        tool = short_tool_name(call.name)
        text = call.result_text or ""
        if call.is_error:
            found.append(Stumble("tool-error", tool, _cut(text) or "(empty error result)"))
            continue
        if not text or any(ignored and call.contains(ignored) for ignored in suite.ignored_failure_patterns):
            continue
        for pattern in suite.failure_patterns:
            if pattern and call.contains(pattern):
                found.append(Stumble("failure-pattern", tool, f"{pattern!r} in result: {_cut(text)}"))
    for report in transcript.reports:
        tool = str(report.data.get("tool") or report.kind)
        if report.kind in _RECOVERY_REPORTS:
            found.append(Stumble("recovery", tool, _cut(f"{report.kind}: {report.message}")))
        elif report.kind in _TOOL_ERROR_REPORTS:
            found.append(Stumble("tool-error", tool, _cut(report.message) or "(empty error)"))
    if transcript.result is not None:
        for denial in transcript.result.permission_denials:
            detail = json.dumps(denial.tool_input, sort_keys=True, ensure_ascii=False)
            found.append(Stumble("permission-denial", short_tool_name(denial.tool_name), _cut(detail)))
    return found


def metrics_of(
    transcript: Transcript,
    process: ProcessOutcome,
    stumbles: list[Stumble],
    device_aware_tools: frozenset[str],
    calls: Iterable[ToolCall | RelayCall] | None = None,
) -> dict:
    """Build the metrics dict (the keys of a baseline's `metrics` block).

    `calls` are the evidence of tool use (the relay's calls); None: the transcript's. Tokens,
    cost and turns are always the agent's own report (its result event).
    """
    calls = list(transcript.tool_calls if calls is None else calls)
    result = transcript.result
    usage = result.usage if result is not None else {}
    metrics = {
        "toolCalls": len(calls),
        "mcpCalls": sum(1 for call in calls if call.name.startswith("mcp__")),
        "deviceAwareCalls": sum(1 for call in calls if call.name in device_aware_tools),
        "turns": (result.num_turns or 0) if result is not None else 0,
        "inputTokens": int(usage.get("input_tokens", 0)),
        "outputTokens": int(usage.get("output_tokens", 0)),
        "cacheCreationInputTokens": int(usage.get("cache_creation_input_tokens", 0)),
        "cacheReadInputTokens": int(usage.get("cache_read_input_tokens", 0)),
        "costUsd": float(result.total_cost_usd or 0.0) if result is not None else 0.0,
        "wallClockSeconds": round(process.wall_clock_seconds, 3),
        "stumbles": len(stumbles),
        "recoveries": sum(1 for stumble in stumbles if stumble.kind == "recovery"),
        "toolCounts": dict(Counter(short_tool_name(call.name) for call in calls)),
    }
    if any(report.kind == USAGE_UNKNOWN_REPORT for report in transcript.reports):
        # A model call without a usage block: the totals are a lower bound, so they are unknown
        # (None), kept out of medians and comparisons, rather than a wrong number.
        for key in TOKEN_METRICS:
            metrics[key] = None
    return metrics


def episode_ending(transcript: Transcript) -> tuple[str, str] | None:
    """How the agent said its episode ended (`ending`, its sentence), from its last `episode-end` report; None if it reported none."""
    ends = [report for report in transcript.reports if report.kind == EPISODE_END_REPORT]
    if not ends:
        return None
    return str(ends[-1].data.get("ending") or "unknown"), ends[-1].message


def completion_check(transcript: Transcript) -> Check | None:
    """An agent that reports its episode's end (agentbench-agent) passes only when the model called task_complete.

    Seed 004 counts "full navigation, then no tool call" as not finishing: the loop never decides a
    task is done, so a reply in prose, an empty reply or a self-undo is not a completed task, whatever
    the screen shows. Claude Code reports no episode end: no check.
    """
    ending = episode_ending(transcript)
    if ending is None:
        return None
    name, message = ending
    return Check("completion", "the model called task_complete", name == COMPLETED_ENDING,
                 f"the episode ended {name}: {message}", "completion")


def failed_reason(check: Check) -> str:
    """The verdict's sentence for a failed check."""
    if check.kind == "device-use":
        return f"no successful call to a device-aware tool ({check.seen})"
    if check.kind == "answer" and check.name == "answer-size":
        return f"answer check failed: {check.seen}"
    if check.kind == "answer":
        return f"answer check failed: expected {check.expected!r}; the reply ended with: {_cut(check.seen)}"
    if check.kind == "screen":
        # An entry of several lines is one check: its lines shown together.
        lines = [repr(line) for line in check.expected.split("\n") if line.strip()]
        expected = f"{', '.join(lines[:-1])} and {lines[-1]} together" if len(lines) > 1 else repr(check.expected)
        return f"screen check failed: expected {expected}; app texts on screen: {_cut(check.seen)}"
    if check.kind == "no-shell":
        return f"shell use (verify.noShell): the run called {check.seen}"
    if check.kind == "disallowed-tool":
        return f"a tool the suite denies (claude.disallowedTools): the run called {check.seen}"
    if check.kind == "transcript":
        return f"the transcript does not match the relay log: {check.seen}"
    if check.kind == "completion":
        return f"the model never called task_complete ({check.seen})"
    return f"{check.kind} check {check.name!r} failed: expected {check.expected}; {check.seen}"


def transcript_check(transcript: Transcript, relay: RelayLog) -> Check:
    """Every MCP call the transcript claims is backed by a call the relay carried (`audit.crosscheck`)."""
    denied = {denial.tool_use_id for denial in transcript.result.permission_denials if denial.tool_use_id} if transcript.result else set()
    mismatch = first_mismatch(transcript.tool_calls, relay, denied_ids=denied)
    expected = "every MCP call the transcript shows reached a declared server, as the relay log records"
    if mismatch is not None:
        return Check("transcript", expected, False, mismatch.detail, "transcript")
    claimed = sum(1 for call in transcript.tool_calls if split_mcp_name(call.name) is not None)
    return Check("transcript", expected, True, f"{claimed} MCP call(s) in the transcript, {len(relay.calls)} in the relay log", "transcript")


def admitted_shell_calls(transcript: Transcript) -> list[ToolCall]:
    """The agent's own shell tool_use blocks (Bash, PowerShell): its admission counts against `noShell`."""
    return [call for call in transcript.tool_calls if call.name in BUILTIN_SHELL_TOOLS]


def audit_run(run: Run, transcript: Transcript, relay: RelayLog | None = None, bridge: BridgeLog | None = None) -> Audit:
    """Audit one run from hard signals only.

    Args:
        run: The run record: suite, process outcome, post-run screen, the server's device-aware
            tools, and what the harness could not establish (tools probe, device after the run).
        transcript: The run's parsed stream-json transcript (the agent's claim).
        relay: The run's relay log (`run.relaylog.read_relay_log(run.relay_log_path)`): the
            evidence of tool use. None for a run saved before the relay (`run.relay_log` None);
            a run that had a relay but whose log is not given is incomplete.
        bridge: The run's model bridge log (`run.bridgelog.read_bridge_log(run.bridge_log_path)`):
            the harness's evidence that the model host could not be reached, without which an API
            error in the stream is the agent's (`audit.causes`). None when the run had no bridge.

    Returns:
        The verdict, every check (device use, answers, screen, device state, shell use),
        stumbles, metrics and the tool sequence (short names). `incomplete` reasons win over
        failed checks.
    """
    suite = run.suite
    reply = final_reply(transcript)
    relay_read = relay is not None
    if relay is None and run.relay_log is not None:
        relay = RelayLog(unavailable=f"the relay log {run.relay_log} was not read")
    # The evidence of tool use: what the relay carried; the transcript only for pre-relay runs.
    evidence: list[ToolCall | RelayCall] = list(relay.calls) if relay is not None else list(transcript.tool_calls)
    checks = [device_use_check(evidence, run.device_aware_tools)]
    if relay is not None:
        checks.append(transcript_check(transcript, relay))
    completion = completion_check(transcript)
    if completion is not None:
        checks.append(completion)
    checks += [
        *answer_checks(suite, transcript),
        *screen_checks(suite, run.screen),
        *device_checks(suite, run.device_state, reply),
    ]
    if suite.verify.no_shell:
        admitted = admitted_shell_calls(transcript) if relay is not None else []
        checks.append(no_shell_check([*evidence, *admitted], run.shell_tools))
    # Judged from the calls the relay carried (a run saved before the relay has no such record).
    denied = disallowed_tool_check(suite, relay.calls) if relay is not None else None
    if denied is not None:
        checks.append(denied)
    stumbles = stumbles_of(suite, transcript)
    failed = [failed_reason(check) for check in checks if not check.passed]
    findings = incomplete_findings(run, transcript, relay, bridge)
    if relay is not None:
        findings += causes.relay_findings(run, relay, read=relay_read)
    # Evidence that is not what the harness sealed proves nothing either way.
    findings = [*causes.sandbox_findings(run), *causes.seal_findings(run), *findings]
    # The device vanished (the harness's only when the agent could not have done it), or the
    # harness could not tell which tools act on a device (so a failed device-use check proves nothing).
    if not findings and run.device_lost:
        findings = [causes.device_lost_finding(run, relay)]
    if not findings and failed and run.probe_error:
        findings = [(f"the harness could not list the MCP server's tools, so device use cannot be judged: {run.probe_error}", "harness")]
    if findings:
        verdict = Verdict("incomplete", tuple(reason for reason, _ in findings), causes.decide(findings))
    else:
        verdict = Verdict("failed", tuple(failed)) if failed else Verdict("passed", ())
    return Audit(
        verdict=verdict,
        checks=tuple(checks),
        stumbles=tuple(stumbles),
        metrics=metrics_of(transcript, run.process, stumbles, run.device_aware_tools, evidence),
        tool_sequence=tuple(short_tool_name(call.name) for call in evidence),
    )
