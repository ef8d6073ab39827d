"""An audited run + its baseline -> the result.json document, the text report, and the session summary table."""

from __future__ import annotations

import dataclasses
import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from tabulate import tabulate

from pytest_agentbench.baseline import (
    FLAG_ABBREVIATIONS,
    comparability_flags,
    format_number,
    metric_rows,
    sequence_diff,
)
from pytest_agentbench.redact import MASK, is_secret_name, mask_url_credentials

RESULT_SCHEMA_VERSION = 1
FINGERPRINT_KEYS = ("appBuild", "suiteDigest", "deviceFingerprint", "claudeCodeVersion", "serverBuild", "observedModel")
_SEEN_CHARS = 240
# Secret values shorter than this are not searched for in free text: a 1-3 character "secret"
# would mask ordinary words.
_MIN_SECRET_CHARS = 6


# --------------------------------------------------------------------------- secrets


def scrub(value: Any, environ: Mapping[str, str] | None = None) -> Any:
    """A copy of a JSON-like value with URL credentials and the values of secret variables masked.

    The agent's reply and tool results are copied into the report as evidence; an agent that
    echoes a token or a proxy URL must not leak it into result.json or the terminal.

    Args:
        value: Strings, numbers, lists and dicts.
        environ: The run's environment; values of secret-named variables (redact.is_secret_name)
            and URL credentials found in it are masked wherever they appear.

    Returns:
        The scrubbed copy.
    """
    secrets = sorted(
        {text for name, text in (environ or {}).items() if is_secret_name(name) and len(text) >= _MIN_SECRET_CHARS},
        key=len,
        reverse=True,
    )
    return _scrub(value, secrets)


def _scrub(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        text = mask_url_credentials(value)
        for secret in secrets:
            text = text.replace(secret, MASK)
        return text
    if isinstance(value, Mapping):
        return {key: _scrub(item, secrets) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(item, secrets) for item in value]
    return value


# --------------------------------------------------------------------------- result.json


def _plain(value: Any) -> Any:
    """Dataclasses (Audit, Check, ...) and tuples -> dicts and lists, so JSON and tests see one shape."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def build_result_document(
    *,
    suite_name: str,
    suite_file: str,
    run_dir: str,
    audit: Any,
    fingerprints: Mapping[str, Any],
    scoring_code: str,
    nodeid: str | None = None,
    started_at: str | None = None,
    finished_at: str | None = None,
    device_serial: str | None = None,
    agent_command: Sequence[str] = (),
    requested_model: str | None = None,
    server_build_components: Mapping[str, str] | None = None,
    baseline: Mapping[str, Any] | None = None,
    baseline_tool_sequence: Sequence[str] = (),
    baseline_server_components: Mapping[str, str] | None = None,
    snippet_path: str | None = None,
    snippet_blockers: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The result.json document of one run: metadata, audit, metrics, comparison and fingerprints.

    Args:
        suite_name: The suite's name.
        suite_file: The suite file's path.
        run_dir: The run directory.
        audit: `audit.Audit` (or the same shape as a dict).
        fingerprints: This run's `appBuild`, `suiteDigest`, `deviceFingerprint`,
            `claudeCodeVersion`, `serverBuild`, `observedModel`.
        scoring_code: `server_build.scoring_code_digest()` of the code that audited the run.
        nodeid: The pytest node id.
        started_at: ISO time the agent started.
        finished_at: ISO time the agent ended.
        device_serial: The device the run used.
        agent_command: The agent argv (already free of secrets: argv carries none).
        requested_model: The `--model` override or the suite's model.
        server_build_components: Non-secret components of `serverBuild`.
        baseline: The suite's `baseline` block, if any.
        baseline_tool_sequence: The suite's `baselineToolSequence`.
        baseline_server_components: Server-build components of the baseline run, if known.
        snippet_path: Where baseline.yml was written, or None.
        snippet_blockers: Why it was not written (`baseline.snippet_blockers`).
        environ: The run's environment, only to mask secrets that leaked into evidence text.

    Returns:
        A JSON-serialisable dict; `render_text_report` renders it without any other input, so
        a saved result.json re-renders to the same report.
    """
    audit_data = _plain(audit)
    metrics = audit_data.get("metrics") or {}
    tool_sequence = list(audit_data.get("tool_sequence") or ())
    current = {key: _plain(fingerprints.get(key)) for key in FINGERPRINT_KEYS}
    flags = comparability_flags(
        baseline,
        current,
        baseline_server_components=baseline_server_components,
        current_server_components=server_build_components,
    )
    has_baseline = bool(baseline)
    document = {
        "schemaVersion": RESULT_SCHEMA_VERSION,
        "suite": suite_name,
        "suiteFile": suite_file,
        "nodeid": nodeid,
        "runDirectory": run_dir,
        "startedAt": started_at,
        "finishedAt": finished_at,
        "device": {"serial": device_serial},
        "agent": {"command": list(agent_command), "requestedModel": requested_model},
        "verdict": audit_data.get("verdict") or {"status": "incomplete", "reasons": ["no audit"]},
        "checks": audit_data.get("checks") or [],
        "stumbles": audit_data.get("stumbles") or [],
        "metrics": metrics,
        "toolSequence": tool_sequence,
        "baseline": _plain(baseline) if has_baseline else None,
        "baselineToolSequence": list(baseline_tool_sequence),
        "comparison": {
            "flags": [{"kind": flag.kind, "message": flag.message} for flag in flags],
            "metricRows": [
                {
                    "metric": row.name,
                    "actual": row.actual,
                    "baseline": row.baseline,
                    "delta": row.delta,
                    "deltaPercent": row.delta_percent,
                }
                for row in metric_rows(metrics, (baseline or {}).get("metrics") if has_baseline else None)
            ],
            "sequenceDiff": (
                [{"op": line.op, "tool": line.tool} for line in sequence_diff(list(baseline_tool_sequence), tool_sequence)]
                if has_baseline
                else []
            ),
        },
        "fingerprints": {**current, "serverBuildComponents": dict(server_build_components or {})},
        "snippet": {"path": snippet_path, "written": snippet_path is not None, "suppressedBecause": list(snippet_blockers)},
        "scoringCode": scoring_code,
    }
    return scrub(document, environ)


def build_session_document(results: Sequence[Mapping[str, Any]], *, started_at: str | None = None, finished_at: str | None = None) -> dict[str, Any]:
    """The `--agentbench-json` document: every run's result.json plus verdict counts."""
    counts = {"passed": 0, "failed": 0, "incomplete": 0}
    for result in results:
        status = verdict_status(result)
        counts[status] = counts.get(status, 0) + 1
    return {
        "schemaVersion": RESULT_SCHEMA_VERSION,
        "startedAt": started_at,
        "finishedAt": finished_at,
        "counts": counts,
        "runs": [dict(result) for result in results],
    }


def verdict_status(result: Mapping[str, Any]) -> str:
    """A result document's verdict status; a document without one counts as incomplete."""
    return str((result.get("verdict") or {}).get("status", "incomplete"))


# --------------------------------------------------------------------------- text report


def _cut(text: Any, limit: int = _SEEN_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def verdict_line(result: Mapping[str, Any]) -> str:
    """`PASSED nodeid`, or `FAILED nodeid - first reason` (the short-summary form pytest uses)."""
    verdict = result.get("verdict") or {}
    name = result.get("nodeid") or result.get("suite") or "?"
    reasons = verdict.get("reasons") or []
    line = f"{verdict_status(result).upper()} {name}"
    return f"{line} - {reasons[0]}" if reasons else line


def _checks_section(result: Mapping[str, Any]) -> list[str]:
    checks = result.get("checks") or []
    if not checks:
        return ["Checks: none"]
    lines = ["Checks:"]
    for check in checks:
        mark = "ok  " if check.get("passed") else "FAIL"
        lines.append(f"  {mark} {check.get('kind', '?')}: expected {_cut(check.get('expected', ''))!r}")
        lines.append(f"       seen: {_cut(check.get('seen', ''))}")
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
        if delta is None:
            shown = "n/a" if result.get("baseline") else ""
        elif delta == 0:
            shown = "0"
        else:
            shown = format_number(delta, signed=True)
            if row.get("deltaPercent") is not None:
                shown += f" ({row['deltaPercent']:+.1f}%)"
        table.append([row["metric"], format_number(row.get("actual")), format_number(row.get("baseline")), shown])
    rendered = tabulate(table, headers=["metric", "actual", "baseline", "delta"], tablefmt="simple", disable_numparse=True)
    return ["Metrics:"] + ["  " + line for line in rendered.splitlines()]


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
        comparability flags, metric rows, the sequence diff, the snippet outcome and run dir.
    """
    verdict = result.get("verdict") or {}
    lines = [f"{result.get('suite', '?')}: {verdict_status(result).upper()}"]
    lines += [f"  - {reason}" for reason in verdict.get("reasons") or []]
    serial = (result.get("device") or {}).get("serial")
    model = (result.get("fingerprints") or {}).get("observedModel")
    cli = (result.get("fingerprints") or {}).get("claudeCodeVersion")
    lines.append(f"Device: {serial or 'unknown'}   Agent CLI: {cli or 'unknown'}   Model: {model or 'unknown'}")
    lines += _checks_section(result)
    lines += _stumbles_section(result)
    lines += _comparability_section(result)
    lines += _metrics_section(result)
    lines += _sequence_section(result)
    lines += _snippet_section(result)
    scoring = result.get("scoringCode")
    if current_scoring_code is not None and scoring != current_scoring_code:
        lines.append(f"Scoring code: ! differs: the run was scored by {scoring or 'unknown'}, the current code is {current_scoring_code}")
    else:
        lines.append(f"Scoring code: {scoring or 'unknown'}")
    lines.append(f"Run directory: {result.get('runDirectory')}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- session summary

_VERDICT_WORDS = {"passed": "pass", "failed": "FAIL", "incomplete": "INCOMP"}
_FLAGS_WIDTH = 9
_MIN_SUITE_WIDTH = 8
SUMMARY_LEGEND = (
    "INCOMP = incomplete; tokens = input + output + cache; Δcalls = tool calls vs baseline; "
    "flags: app build, suite, dev(ice), cli version, srv (server build), model differ from the baseline"
)


def _wall(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or math.isnan(seconds):
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _tokens(metrics: Mapping[str, Any]) -> str:
    keys = ("inputTokens", "outputTokens", "cacheCreationInputTokens", "cacheReadInputTokens")
    total = sum(int(metrics.get(key) or 0) for key in keys)
    if total < 1000:
        return str(total)
    if total < 1_000_000:
        return f"{total / 1000:.1f}k"
    return f"{total / 1_000_000:.1f}M"


def _cost(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    return f"${value:.2f}" if value >= 10 else f"${value:.3f}"


def _delta_calls(result: Mapping[str, Any]) -> str:
    if not result.get("baseline"):
        return "-"
    for row in (result.get("comparison") or {}).get("metricRows") or []:
        if row.get("metric") == "toolCalls" and row.get("delta") is not None:
            return "0" if row["delta"] == 0 else format_number(row["delta"], signed=True)
    return "-"


def _flags(result: Mapping[str, Any]) -> str:
    kinds = [flag.get("kind") for flag in (result.get("comparison") or {}).get("flags") or []]
    return " ".join(FLAG_ABBREVIATIONS.get(kind, str(kind)) for kind in kinds)


def _abbreviate(name: str, width: int) -> str:
    """Shorten a suite name in the middle (`very-long-…-name`), keeping both ends recognisable."""
    if len(name) <= width:
        return name
    keep = width - 1
    tail = keep // 2
    head = keep - tail
    return name[:head] + "…" + (name[-tail:] if tail else "")


def render_summary_table(results: Sequence[Mapping[str, Any]], *, width: int = 80) -> str:
    """The session's summary table: one row per run, readable at `width` columns.

    Args:
        results: result.json documents, in run order.
        width: Terminal width; long suite names are shortened in the middle and flags wrap,
            so the table never grows wider than this for any number of suites.

    Returns:
        The table (tabulate `simple`) followed by a one-line legend.
    """
    headers = ["suite", "verdict", "wall", "calls", "turns", "tokens", "cost", "Δcalls", "flags"]
    rows = []
    for result in results:
        metrics = result.get("metrics") or {}
        rows.append(
            [
                str(result.get("suite") or "?"),
                _VERDICT_WORDS.get(verdict_status(result), verdict_status(result)),
                _wall(metrics.get("wallClockSeconds")),
                str(metrics.get("toolCalls", "-")),
                str(metrics.get("turns", "-")),
                _tokens(metrics),
                _cost(metrics.get("costUsd")),
                _delta_calls(result),
                _flags(result),
            ]
        )
    for row in rows:
        row[8] = "\n".join(textwrap.wrap(row[8], _FLAGS_WIDTH)) if row[8] else ""
    # Widths are computed here rather than by tabulate because tabulate pads every header by two
    # extra columns, which costs a 9-column table 18 characters of an 80-column terminal.
    widths = [max([len(headers[column])] + [len(line) for row in rows for line in row[column].splitlines() or [""]]) for column in range(9)]
    separators = 2 * (len(headers) - 1)
    suite_width = max(_MIN_SUITE_WIDTH, width - sum(widths[1:]) - separators)
    for row in rows:
        row[0] = _abbreviate(row[0], suite_width)
    widths[0] = max([len(headers[0])] + [len(row[0]) for row in rows])
    body = tabulate(
        [headers] + rows,
        tablefmt="plain",
        disable_numparse=True,
        colalign=("left", "left", "right", "right", "right", "right", "right", "right", "left"),
    ).splitlines()
    rule = "  ".join("-" * column_width for column_width in widths)
    table = "\n".join(line.rstrip() for line in [body[0], rule, *body[1:]])
    return table + "\n" + "\n".join(textwrap.wrap(SUMMARY_LEGEND, width))


def fit(text: str, width: int = 80) -> str:
    """Wrap every line of text that is wider than width, so a terminal section never overflows.

    A wrapped line continues on lines indented two more than its own indentation. A line
    ending in `label: value` whose value still fits on a line of its own (a run directory, a
    node id) moves the value to the next line whole rather than cutting it, so it stays
    copyable; only a value wider than the terminal is cut.

    Args:
        text: Lines separated by newlines.
        width: Terminal width (at least 20 is assumed useful).

    Returns:
        The text with no line wider than width.
    """
    out: list[str] = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip()))
        follow = indent + "  "
        out += textwrap.wrap(
            line, width, initial_indent="", subsequent_indent=follow, break_on_hyphens=False,
            break_long_words=True, drop_whitespace=True,
        ) or [line[:width]]
    return "\n".join(out)


def render_verbose_details(results: Sequence[Mapping[str, Any]], *, width: int = 80) -> str:
    """The `-v` expansion: for each run a header line, then its metric rows, sequence diff and run directory.

    Every line fits in width: a node id too long for the rule line is shown below it, and
    long flag messages and paths wrap (see `fit`).
    """
    blocks = []
    for result in results:
        nodeid = result.get("nodeid") or result.get("suite")
        title = f" {nodeid}: {verdict_status(result)} "
        below = ""
        if len(title) > width - 4:
            title = f" {_abbreviate(str(result.get('suite') or '?'), max(_MIN_SUITE_WIDTH, width - 20))}: {verdict_status(result)} "
            below = f"{nodeid}\n"
        rule = "-" * max(2, (width - len(title)) // 2)
        blocks.append(fit(f"{rule}{title}{rule}".rstrip() + "\n" + below + render_metric_details(result), width))
    return "\n".join(blocks)
