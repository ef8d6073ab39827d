"""A RunResult -> the run's text report (verdict, checks, stumbles, comparison, metrics, time, sequence, snippet)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tabulate import tabulate

from pytest_agentbench.checks.base import Check
from pytest_agentbench.records.comparison import format_number
from pytest_agentbench.records.parts import CleanupReport
from pytest_agentbench.records.result import RunResult
from pytest_agentbench.suite.instance import instance_label, instance_seed_text

if TYPE_CHECKING:
    from pytest_agentbench.audit.transcript import Transcript

_SEEN_CHARS = 240


def _cut(text: Any, limit: int = _SEEN_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _checks_section(result: RunResult) -> list[str]:
    if not result.checks:
        return ["Checks: none"]
    return ["Checks:", *_check_lines(result.checks)]


def _check_lines(checks: Sequence[Check]) -> list[str]:
    lines = []
    for check in checks:
        mark = "ok  " if check.passed else "FAIL"
        kind, name = check.kind or "?", check.name
        # Device checks are named in the suite; the name is what a prove fail scenario refers to.
        label = f"{kind} {name}" if name and name not in (kind, "answer", "screen", "noShell") else kind
        lines.append(f"  {mark} {label}: expected {_cut(check.expected)!r}")
        lines.append(f"       seen: {_cut(check.seen)}")
    return lines


def cleanup_section(cleanup: CleanupReport | Mapping[str, Any] | None) -> list[str]:
    """What cleanup undid, what failed, and `cleanup left: ...` for what is still not as before the run.

    A mapping (prove's cleanup block) is read through `CleanupReport.from_json`.
    """
    report = CleanupReport.from_json(cleanup) if isinstance(cleanup, Mapping) else cleanup
    if report is None:
        return []
    actions, left, failed = report.actions, report.left, report.failed
    lines = [f"Cleanup: {len(actions)} action{'s' if len(actions) != 1 else ''}"
             + (", the phone reads as before the run" if not left and not failed else "")]
    lines += [f"  {'ok  ' if action.status == 0 else 'FAIL'} {action.action}" for action in actions]
    lines += [f"  failed: {_cut(item)}" for item in failed]
    lines += [f"  cleanup left: {_cut(item)}" for item in left]
    return lines


def _stumbles_section(result: RunResult) -> list[str]:
    if not result.stumbles:
        return ["Stumbles: none"]
    lines = [f"Stumbles ({len(result.stumbles)}, reported, not scored):"]
    lines += [f"  {stumble.kind or '?'} {stumble.tool or '?'}: {_cut(stumble.detail)}" for stumble in result.stumbles]
    return lines


def _comparability_section(result: RunResult) -> list[str]:
    recorded = result.baseline_recorded_at
    if recorded is None:
        return ["Baseline: none (deltas not shown)"]
    flags = result.comparison.flags
    header = f"Baseline: recorded {recorded}"
    if not flags:
        return [header + "; comparable (same app build, suite, device, CLI, server build and model)"]
    lines = [header + "; deltas below compare different conditions:"]
    lines += [f"  ! {flag.message}" for flag in flags]
    return lines


def _metrics_section(result: RunResult) -> list[str]:
    table = []
    for row in result.comparison.metric_rows:
        # Without a baseline there is no delta to speak of, not a missing one.
        shown = row.format_delta() if row.delta is not None or result.baseline else ""
        table.append([row.name, format_number(row.actual), format_number(row.baseline), shown])
    rendered = tabulate(table, headers=["metric", "actual", "baseline", "delta"], tablefmt="simple", disable_numparse=True)
    return ["Metrics:"] + ["  " + line for line in rendered.splitlines()]


def _seconds(value: Any) -> str:
    return "?" if value is None else f"{float(value):.1f}"


_HARNESS_PARTS = (("preflightSeconds", "preflight"), ("setupSeconds", "setup"), ("postRunSeconds", "post-run"), ("auditSeconds", "audit"))


def _time_section(result: RunResult) -> list[str]:
    times = result.times
    shown = [f"{label} {_seconds(times.harness[key])} s" for key, label in _HARNESS_PARTS if key in times.harness]
    ours = [f"Harness time: {', '.join(shown)}"] if shown else []
    agent = times.agent
    if agent is None:
        wall = result.run_metrics.wall_clock_seconds
        return [f"Time: agent {_seconds(wall)} s (no timing sidecar, so no split)"] + ours
    parts = " + ".join(
        f"{label} {_seconds(value)}"
        for value, label in ((agent.startup_seconds, "startup"), (agent.model_seconds, "model"), (agent.tool_seconds, "tools"),
                             (agent.after_result_seconds, "after result"))
    )
    lines = [f"Time: agent {_seconds(agent.wall_clock_seconds)} s = {parts}"]
    rows = [
        [tool.tool, str(tool.count) + (f" ({tool.unanswered} unanswered)" if tool.unanswered else ""),
         f"{tool.total_seconds:.3f}", "-" if tool.median_seconds is None else f"{tool.median_seconds:.3f}"]
        for tool in agent.tools
    ]
    if rows:
        rendered = tabulate(rows, headers=["tool", "calls", "total s", "median s"], tablefmt="simple", disable_numparse=True)
        lines += ["  " + line for line in rendered.splitlines()]
    return lines + ours


def _sequence_section(result: RunResult) -> list[str]:
    if not result.baseline:
        sequence = result.tool_sequence
        return [f"Tool sequence: {', '.join(sequence) if sequence else '(no tool calls)'}"]
    lines = ["Tool sequence vs baseline (- baseline call skipped, + extra call):"]
    lines += [f"  {line.render()}" for line in result.comparison.sequence_diff] or ["  (both empty)"]
    return lines


def _snippet_section(result: RunResult) -> list[str]:
    snippet = result.snippet
    if snippet.written:
        return [f"Baseline snippet: {snippet.path}"]
    if not snippet.suppressed_because:
        return ["Baseline snippet: not written"]
    return ["Baseline snippet: not written because"] + [f"  - {reason}" for reason in snippet.suppressed_because]


def render_metric_details(result: RunResult) -> str:
    """Comparability, metric rows and the sequence diff of one run (the `-v` expansion of the summary)."""
    lines = _comparability_section(result) + _metrics_section(result) + _sequence_section(result)
    lines.append(f"Run directory: {result.run_directory}")
    return "\n".join(lines)


def render_text_report(result: RunResult, *, current_scoring_code: str | None = None) -> str:
    """The text report of one run.

    Args:
        result: The run's result (fresh from `pipeline.conclude`, or a saved result.json read back).
        current_scoring_code: When re-rendering a saved run, today's scoring-code digest; a
            different digest is called out, because the verdict came from other code.

    Returns:
        The report: verdict and reasons, checks with expected/seen, stumbles, baseline
        comparability flags, metric rows, where the time went, the sequence diff, the snippet
        outcome and run dir.
    """
    status = result.status
    ref = result.instance_ref
    seed = f" ({instance_seed_text(result.instance)})" if ref is not None and ref.values else ""
    lines = [f"{instance_label(result.suite or '?', result.instance)}{seed}: {status.upper()}"]
    lines += [f"  - {reason}" for reason in result.verdict.reasons]
    recorded = result.rerendered.recorded_status if result.rerendered is not None else None
    if recorded and recorded != status:
        # A saved run judged differently today: say so, whichever way it moved.
        lines.append(f"Re-render: ! the verdict differs from the one recorded live ({recorded.upper()} -> {status.upper()})")
    elif recorded == "incomplete" and result.rerendered is not None:
        # Whose doing decides whether the run is in the pass rate: a changed cause is a changed result.
        was = (result.rerendered.verdict_when_recorded or {}).get("incompleteCause")
        now = result.verdict.cause
        if was is not None and now is not None and was != now:
            lines.append(f"Re-render: ! the cause differs from the one recorded live ({was} -> {now}): "
                         "today's rules decide whose doing an incomplete run was (docs/verdicts.md#who-decides-a-cause)")
    model, cli = result.fingerprints.observed_model, result.fingerprints.claude_code_version
    lines.append(f"Device: {result.device_serial or 'unknown'}   Agent CLI: {cli or 'unknown'}   Model: {model or 'unknown'}")
    lines += _checks_section(result)
    lines += cleanup_section(result.cleanup_report)
    lines += _stumbles_section(result)
    lines += _comparability_section(result)
    lines += _metrics_section(result)
    lines += _time_section(result)
    lines += _sequence_section(result)
    lines += _snippet_section(result)
    scoring = result.scoring_code
    if current_scoring_code is not None and scoring != current_scoring_code:
        lines.append(f"Scoring code: ! differs: the run was scored by {scoring or 'unknown'}, the current code is {current_scoring_code}")
    else:
        lines.append(f"Scoring code: {scoring or 'unknown'}")
    lines.append(f"Run directory: {result.run_directory}")
    return "\n".join(lines) + "\n"


#: The compact failure report's last line: where the rest of it is.
FULL_REPORT_HINT = "(the full report and the agent's last tool calls: -v or --tb=long)"


def render_failure_report(result: RunResult) -> str:
    """A failed run as pytest's failures section shows it at the default verbosity: what failed and where the run is.

    The verdict and its reasons, each failed check with what it expected and saw, what cleanup
    left, and the run directory; `render_text_report` (shown with `-v` or `--tb=long`) has the rest.
    """
    # Named as pytest names the item, so the report of one repeat is told from another's.
    name = result.nodeid.rsplit("::", 1)[-1] if result.nodeid else result.suite or "?"
    lines = [f"{name}: {result.status.upper()}"]
    lines += [f"  - {reason}" for reason in result.verdict.reasons]
    failed = [check for check in result.checks if not check.passed]
    if failed:
        lines += ["Failed checks:", *_check_lines(failed)]
    cleanup = result.cleanup_report
    lines += [f"Cleanup left: {_cut(item)}" for item in (cleanup.left if cleanup is not None else ())]
    lines.append(f"Run directory: {result.run_directory}")
    lines.append(FULL_REPORT_HINT)
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
