"""A session's RunResults -> the terminal summary's parts: verdict lines, the per-run table, failures by first reason, the `-v` details."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import Any

from pytest_agentbench.baseline.compare import FLAG_ABBREVIATIONS
from pytest_agentbench.records.comparison import format_number
from pytest_agentbench.records.parts import RunMetrics
from pytest_agentbench.records.result import RunResult
from pytest_agentbench.report.text import render_metric_details


_VERDICT_WORDS = {"passed": "pass", "failed": "FAIL", "incomplete": "INCOMP"}
_FLAGS_WIDTH = 9
SUMMARY_LEGEND = (
    "INCOMP = incomplete (INCOMP* the agent's doing: counted as not passed in the rates); tokens = input + output + cache; Δcalls = tool calls vs baseline; "
    "flags: app build, suite, dev(ice), cli version, srv (server build), model differ from the baseline"
)


def verdict_line(result: RunResult) -> str:
    """`PASSED nodeid`, or `FAILED nodeid - first reason` (the short-summary form pytest uses)."""
    verdict = result.verdict
    line = f"{verdict.status.upper()} {result.name}"
    if verdict.cause is not None:
        line += f" ({verdict.cause}'s doing)"
    return f"{line} - {verdict.reasons[0]}" if verdict.reasons else line


def verdict_word(result: RunResult) -> str:
    """``pass``, ``FAIL``, ``INCOMP``, or ``INCOMP*`` for an incomplete run the agent caused (it counts as not passed)."""
    status = result.status
    word = _VERDICT_WORDS.get(status, status)
    if result.verdict.cause == "agent":
        word += "*"
    return word


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


def _tokens(metrics: RunMetrics) -> str:
    if metrics.tokens is None:
        return "?"  # the agent's server sent no token counts for some call
    total = metrics.tokens
    if total < 1000:
        return str(total)
    if total < 1_000_000:
        return f"{total / 1000:.1f}k"
    return f"{total / 1_000_000:.1f}M"


def _cost(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    return f"${value:.2f}" if value >= 10 else f"${value:.3f}"


def _delta_calls(result: RunResult) -> str:
    if not result.baseline:
        return "-"
    for row in result.comparison.metric_rows:
        if row.name == "toolCalls" and row.delta is not None:
            return "0" if row.delta == 0 else format_number(row.delta, signed=True)
    return "-"


def _flags(result: RunResult) -> str:
    return " ".join(FLAG_ABBREVIATIONS.get(flag.kind, str(flag.kind)) for flag in result.comparison.flags)


def run_label(result: RunResult) -> str:
    """The run as pytest names its item: `bug-repro`, `bug-repro[r3]`, `contacts-add[r3-42-Bob]` (suite, instance and repeat id)."""
    if result.nodeid:
        return result.nodeid.rsplit("::", 1)[-1]
    return f"{result.suite}[{result.instance_id}]" if result.instance_id else (result.suite or "?")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, width: int = 80, align: str = "") -> list[str]:
    """A plain table whose first column (a suite or run name) is never cut.

    A name wider than the room the other columns leave it takes a line of its own, and its
    cells follow on the next line under the other columns; every other row stays one line.
    Cells may hold several lines (wrapped flags); `align` gives `l` or `r` per column after the first
    (default: right).

    Returns:
        The header, a rule, and the rows, each line stripped on the right.
    """
    columns = len(headers)
    aligns = "l" + (align or "r" * (columns - 1))
    cells = [[str(cell).splitlines() or [""] for cell in row] for row in rows]
    widths = [max([len(headers[c])] + [len(line) for row in cells for line in row[c]]) for c in range(1, columns)]
    room = max(len(headers[0]), width - sum(widths) - 2 * (columns - 1))
    name_width = max([len(headers[0])] + [len(row[0][0]) for row in cells if len(row[0][0]) <= room])
    widths = [name_width, *widths]

    def line(parts: Sequence[str]) -> str:
        return "  ".join(part.ljust(w) if a == "l" else part.rjust(w) for part, w, a in zip(parts, widths, aligns)).rstrip()

    out = [line(headers), "  ".join("-" * w for w in widths)]
    for row in cells:
        name = row[0][0]
        if len(name) > name_width:
            out.append(name)
            name = ""
        for index in range(max(len(cell) for cell in row[1:]) if columns > 1 else 1):
            parts = [name if index == 0 else ""] + [cell[index] if index < len(cell) else "" for cell in row[1:]]
            out.append(line(parts))
    return out


def _summary_row(result: RunResult) -> list[str]:
    metrics = result.run_metrics
    flags = _flags(result)
    return [
        run_label(result),
        verdict_word(result),
        _wall(metrics.wall_clock_seconds),
        "-" if metrics.tool_calls is None else str(metrics.tool_calls),
        "-" if metrics.turns is None else str(metrics.turns),
        _tokens(metrics),
        _cost(metrics.cost_usd),
        _delta_calls(result),
        "\n".join(textwrap.wrap(flags, _FLAGS_WIDTH)) if flags else "",
    ]


def render_summary_table(results: Sequence[RunResult], *, width: int = 80, legend: bool = True) -> str:
    """The per-run table: one row per run (named with its instance and repeat id), readable at `width` columns.

    Args:
        results: The runs, in run order.
        width: Terminal width; a name too long for its column takes a line of its own (never
            cut) and flags wrap, so the table never grows wider than this.
        legend: Follow the table with its legend.

    Returns:
        The table, then (with `legend`) the legend wrapped to the width.
    """
    headers = ["run", "verdict", "wall", "calls", "turns", "tokens", "cost", "Δcalls", "flags"]
    lines = table(headers, [_summary_row(result) for result in results], width=width, align="lrrrrrrl")
    if legend:
        lines += textwrap.wrap(SUMMARY_LEGEND, width)
    return "\n".join(lines)


def failure_groups(results: Sequence[RunResult], unrecorded: Sequence[tuple[str, str]] = ()) -> list[tuple[str, list[str]]]:
    """The runs that did not pass, grouped by first reason: (reason, their run labels), most frequent first.

    Args:
        results: The runs.
        unrecorded: (run label, reason) of runs that ended without a result.
    """
    groups: dict[str, list[str]] = {}
    for result in results:
        if result.status != "passed":
            reason = result.verdict.reasons[0] if result.verdict.reasons else "no reason recorded"
            groups.setdefault(f"{result.status}: {reason}", []).append(run_label(result))
    for label, reason in unrecorded:
        groups.setdefault(f"no result: {reason}", []).append(label)
    return sorted(groups.items(), key=lambda group: -len(group[1]))


#: At most this many run names follow a reason; more are counted by suite instead.
_NAMES_PER_REASON = 4


def render_failure_groups(groups: Sequence[tuple[str, Sequence[str]]], *, width: int = 80) -> str:
    """`48 runs: failed: no final answer (bug-repro 24, ux-flow 24)`: one entry per first reason, wrapped to width."""
    lines = []
    for reason, labels in groups:
        runs = f"{len(labels)} run{'s' if len(labels) != 1 else ''}"
        lines.append(fit(f"  {runs}: {_cut_reason(reason)} ({runs_named(labels)})", width))
    return "\n".join(lines)


def runs_named(labels: Sequence[str]) -> str:
    """`bug-repro[r2], bug-repro[r3]`, or for more than four runs their count per suite: `bug-repro 24, ux-flow 24`."""
    if len(labels) <= _NAMES_PER_REASON:
        return ", ".join(labels)
    suites: dict[str, int] = {}
    for label in labels:
        suite = label.split("[", 1)[0]
        suites[suite] = suites.get(suite, 0) + 1
    return ", ".join(f"{suite} {count}" for suite, count in suites.items())


_REASON_CHARS = 160


def _cut_reason(reason: str) -> str:
    flat = " ".join(reason.split())
    return flat if len(flat) <= _REASON_CHARS else flat[: _REASON_CHARS - 1] + "…"


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


def render_verbose_details(results: Sequence[RunResult], *, width: int = 80) -> str:
    """The `-v` expansion: for each run a header line, then its metric rows, sequence diff and run directory.

    Every line fits in width: a node id too long for the rule line is shown below it, and
    long flag messages and paths wrap (see `fit`).
    """
    blocks = []
    for result in results:
        nodeid = result.name
        title = f" {nodeid}: {result.status} "
        below = ""
        if len(title) > width - 4:
            title = f" {result.status} "
            below = f"{nodeid}\n"
        rule = "-" * max(2, (width - len(title)) // 2)
        blocks.append(fit(f"{rule}{title}{rule}".rstrip() + "\n" + below + render_metric_details(result), width))
    return "\n".join(blocks)


def render_proofs(proofs: Sequence[tuple[str, str, str | None]], *, width: int = 80) -> str:
    """`--agentbench-prove`'s summary: how many proofs held, then each one that did not and why, in sentences.

    Args:
        proofs: (suite, item name, why the proof does not hold: "" for one that holds, None for one
            skipped), one per proof item.
        width: The terminal's width.
    """
    proven = sum(1 for *_, why in proofs if why == "")
    unproven = [(name, why) for _, name, why in proofs if why]
    skipped = len(proofs) - proven - len(unproven)
    suites = len({suite for suite, *_ in proofs})
    lines = [f"{len(proofs)} proof{'s' if len(proofs) != 1 else ''} of {suites} suite{'s' if suites != 1 else ''}: "
             f"{proven} proven, {len(unproven)} not proven" + (f", {skipped} skipped (-rs says why)" if skipped else "")]
    if unproven:
        lines += ["", "not proven (a check that cannot fail, or fails for another reason, proves nothing):"]
        for name, why in unproven:
            lines += textwrap.wrap(f"{name}: {why}", width, initial_indent="  ", subsequent_indent="    ")
    return "\n".join(lines)
