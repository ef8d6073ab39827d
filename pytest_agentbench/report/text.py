"""A result.json document -> the run's text report (verdict, checks, stumbles, comparison, metrics, time, sequence, snippet)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tabulate import tabulate

from pytest_agentbench.baseline.compare import format_delta, format_number
from pytest_agentbench.report.document import verdict_status
from pytest_agentbench.suite.instance import instance_label, instance_seed_text

if TYPE_CHECKING:
    from pytest_agentbench.audit.transcript import Transcript

_SEEN_CHARS = 240


def _cut(text: Any, limit: int = _SEEN_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _checks_section(result: Mapping[str, Any]) -> list[str]:
    checks = result.get("checks") or []
    if not checks:
        return ["Checks: none"]
    lines = ["Checks:"]
    for check in checks:
        mark = "ok  " if check.get("passed") else "FAIL"
        kind, name = check.get("kind", "?"), check.get("name")
        # Device checks are named in the suite; the name is what a prove fail scenario refers to.
        label = f"{kind} {name}" if name and name not in (kind, "answer", "screen", "noShell") else kind
        lines.append(f"  {mark} {label}: expected {_cut(check.get('expected', ''))!r}")
        lines.append(f"       seen: {_cut(check.get('seen', ''))}")
    return lines


def cleanup_section(cleanup: Mapping[str, Any] | None) -> list[str]:
    """What cleanup undid, what failed, and `cleanup left: ...` for what is still not as before the run."""
    if not cleanup:
        return []
    actions = cleanup.get("actions") or []
    left = cleanup.get("left") or []
    failed = cleanup.get("failed") or []
    lines = [f"Cleanup: {len(actions)} action{'s' if len(actions) != 1 else ''}"
             + (", the phone reads as before the run" if not left and not failed else "")]
    lines += [f"  {'ok  ' if action.get('status') == 0 else 'FAIL'} {action.get('action')}" for action in actions]
    lines += [f"  failed: {_cut(item)}" for item in failed]
    lines += [f"  cleanup left: {_cut(item)}" for item in left]
    return lines


def _stumbles_section(result: Mapping[str, Any]) -> list[str]:
    stumbles = result.get("stumbles") or []
    if not stumbles:
        return ["Stumbles: none"]
    lines = [f"Stumbles ({len(stumbles)}, reported, not scored):"]
    lines += [f"  {stumble.get('kind', '?')} {stumble.get('tool', '?')}: {_cut(stumble.get('detail', ''))}" for stumble in stumbles]
    return lines


def _comparability_section(result: Mapping[str, Any]) -> list[str]:
    baseline = result.get("baseline")
    if not baseline:
        return ["Baseline: none (deltas not shown)"]
    flags = (result.get("comparison") or {}).get("flags") or []
    header = f"Baseline: recorded {baseline.get('recordedAt', 'unknown')}"
    if not flags:
        return [header + "; comparable (same app build, suite, device, CLI, server build and model)"]
    lines = [header + "; deltas below compare different conditions:"]
    lines += [f"  ! {flag['message']}" for flag in flags]
    return lines


def _metrics_section(result: Mapping[str, Any]) -> list[str]:
    rows = (result.get("comparison") or {}).get("metricRows") or []
    table = []
    for row in rows:
        delta = row.get("delta")
        # Without a baseline there is no delta to speak of, not a missing one.
        shown = format_delta(delta, row.get("deltaPercent")) if delta is not None or result.get("baseline") else ""
        table.append([row["metric"], format_number(row.get("actual")), format_number(row.get("baseline")), shown])
    rendered = tabulate(table, headers=["metric", "actual", "baseline", "delta"], tablefmt="simple", disable_numparse=True)
    return ["Metrics:"] + ["  " + line for line in rendered.splitlines()]


def _seconds(value: Any) -> str:
    return "?" if value is None else f"{float(value):.1f}"


_HARNESS_PARTS = (("preflightSeconds", "preflight"), ("setupSeconds", "setup"), ("postRunSeconds", "post-run"), ("auditSeconds", "audit"))


def _time_section(result: Mapping[str, Any]) -> list[str]:
    timing = result.get("timing") or {}
    harness = timing.get("harness") or {}
    shown = [f"{label} {_seconds(harness[key])} s" for key, label in _HARNESS_PARTS if harness.get(key) is not None]
    ours = [f"Harness time: {', '.join(shown)}"] if shown else []
    agent = timing.get("agent")
    if not agent:
        wall = (result.get("metrics") or {}).get("wallClockSeconds")
        return [f"Time: agent {_seconds(wall)} s (no timing sidecar, so no split)"] + ours
    parts = " + ".join(
        f"{label} {_seconds(agent.get(key))}"
        for key, label in (("startupSeconds", "startup"), ("modelSeconds", "model"), ("toolSeconds", "tools"),
                           ("afterResultSeconds", "after result"))
    )
    lines = [f"Time: agent {_seconds(agent.get('wallClockSeconds'))} s = {parts}"]
    rows = [
        [tool.get("tool", "?"), str(tool.get("count", 0)) + (f" ({tool['unanswered']} unanswered)" if tool.get("unanswered") else ""),
         f"{float(tool.get('totalSeconds') or 0):.3f}",
         "-" if tool.get("medianSeconds") is None else f"{float(tool['medianSeconds']):.3f}"]
        for tool in agent.get("tools") or []
    ]
    if rows:
        rendered = tabulate(rows, headers=["tool", "calls", "total s", "median s"], tablefmt="simple", disable_numparse=True)
        lines += ["  " + line for line in rendered.splitlines()]
    return lines + ours


def _sequence_section(result: Mapping[str, Any]) -> list[str]:
    if not result.get("baseline"):
        sequence = result.get("toolSequence") or []
        return [f"Tool sequence: {', '.join(sequence) if sequence else '(no tool calls)'}"]
    diff = (result.get("comparison") or {}).get("sequenceDiff") or []
    lines = ["Tool sequence vs baseline (- baseline call skipped, + extra call):"]
    lines += [f"  {line['op']} {line['tool']}" for line in diff] or ["  (both empty)"]
    return lines


def _snippet_section(result: Mapping[str, Any]) -> list[str]:
    snippet = result.get("snippet") or {}
    if snippet.get("written"):
        return [f"Baseline snippet: {snippet.get('path')}"]
    reasons = snippet.get("suppressedBecause") or []
    if not reasons:
        return ["Baseline snippet: not written"]
    return ["Baseline snippet: not written because"] + [f"  - {reason}" for reason in reasons]


def render_metric_details(result: Mapping[str, Any]) -> str:
    """Comparability, metric rows and the sequence diff of one run (the `-v` expansion of the summary)."""
    lines = _comparability_section(result) + _metrics_section(result) + _sequence_section(result)
    lines.append(f"Run directory: {result.get('runDirectory')}")
    return "\n".join(lines)


def render_text_report(result: Mapping[str, Any], *, current_scoring_code: str | None = None) -> str:
    """The text report of one run, from its result.json document.

    Args:
        result: A `build_result_document` dict (fresh, or loaded from a saved result.json).
        current_scoring_code: When re-rendering a saved run, today's scoring-code digest; a
            different digest is called out, because the verdict came from other code.

    Returns:
        The report: verdict and reasons, checks with expected/seen, stumbles, baseline
        comparability flags, metric rows, where the time went, the sequence diff, the snippet
        outcome and run dir.
    """
    verdict = result.get("verdict") or {}
    instance = result.get("instance")
    seed = f" ({instance_seed_text(instance)})" if instance and instance.get("values") else ""
    lines = [f"{instance_label(str(result.get('suite', '?')), instance)}{seed}: {verdict_status(result).upper()}"]
    lines += [f"  - {reason}" for reason in verdict.get("reasons") or []]
    recorded = ((result.get("rerendered") or {}).get("verdictWhenRecorded") or {}).get("status")
    if recorded and recorded != verdict_status(result):
        # A saved run judged differently today: say so, whichever way it moved.
        lines.append(f"Re-render: ! the verdict differs from the one recorded live ({recorded.upper()} -> {verdict_status(result).upper()})")
    serial = (result.get("device") or {}).get("serial")
    model = (result.get("fingerprints") or {}).get("observedModel")
    cli = (result.get("fingerprints") or {}).get("claudeCodeVersion")
    lines.append(f"Device: {serial or 'unknown'}   Agent CLI: {cli or 'unknown'}   Model: {model or 'unknown'}")
    lines += _checks_section(result)
    lines += cleanup_section(result.get("cleanup"))
    lines += _stumbles_section(result)
    lines += _comparability_section(result)
    lines += _metrics_section(result)
    lines += _time_section(result)
    lines += _sequence_section(result)
    lines += _snippet_section(result)
    scoring = result.get("scoringCode")
    if current_scoring_code is not None and scoring != current_scoring_code:
        lines.append(f"Scoring code: ! differs: the run was scored by {scoring or 'unknown'}, the current code is {current_scoring_code}")
    else:
        lines.append(f"Scoring code: {scoring or 'unknown'}")
    lines.append(f"Run directory: {result.get('runDirectory')}")
    return "\n".join(lines) + "\n"


def transcript_tail(transcript: Transcript, limit: int = 30) -> str:
    """The last tool calls (and the final reply) of a transcript, one line each, for a failure report."""
    lines = []
    for call in transcript.tool_calls[-limit:]:
        shown = "(no result)" if call.result_text is None else " ".join(call.result_text.split())[:160]
        marker = "!" if call.is_error else " "
        lines.append(f"{marker} {call.name}({json.dumps(call.input, ensure_ascii=False)[:120]}) -> {shown}")
    if transcript.final_text:
        lines.append("final: " + " | ".join(transcript.final_text.strip().splitlines()[-4:]))
    return "\n".join(lines)
