"""A session's result.json documents -> the terminal summary: verdict lines, the metrics table, the `-v` details."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from tabulate import tabulate

from pytest_agentbench.baseline.compare import FLAG_ABBREVIATIONS, format_number
from pytest_agentbench.report.document import verdict_status
from pytest_agentbench.report.text import render_metric_details
from pytest_agentbench.suite.instance import instance_label


_VERDICT_WORDS = {"passed": "pass", "failed": "FAIL", "incomplete": "INCOMP"}
_FLAGS_WIDTH = 9
_MIN_SUITE_WIDTH = 8
SUMMARY_LEGEND = (
    "INCOMP = incomplete (INCOMP* the agent's doing: counted as not passed in the rates); tokens = input + output + cache; Δcalls = tool calls vs baseline; "
    "flags: app build, suite, dev(ice), cli version, srv (server build), model differ from the baseline"
)


def verdict_line(result: Mapping[str, Any]) -> str:
    """`PASSED nodeid`, or `FAILED nodeid - first reason` (the short-summary form pytest uses)."""
    verdict = result.get("verdict") or {}
    name = result.get("nodeid") or result.get("suite") or "?"
    reasons = verdict.get("reasons") or []
    line = f"{verdict_status(result).upper()} {name}"
    if verdict.get("incompleteCause") in ("agent", "harness") and verdict_status(result) == "incomplete":
        line += f" ({verdict['incompleteCause']}'s doing)"
    return f"{line} - {reasons[0]}" if reasons else line


def verdict_word(result: Mapping[str, Any]) -> str:
    """``pass``, ``FAIL``, ``INCOMP``, or ``INCOMP*`` for an incomplete run the agent caused (it counts as not passed)."""
    status = verdict_status(result)
    word = _VERDICT_WORDS.get(status, status)
    if status == "incomplete" and (result.get("verdict") or {}).get("incompleteCause") == "agent":
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


def _tokens(metrics: Mapping[str, Any]) -> str:
    keys = ("inputTokens", "outputTokens", "cacheCreationInputTokens", "cacheReadInputTokens")
    if all(metrics.get(key) is None for key in keys) and any(key in metrics for key in keys):
        return "?"  # the agent's server sent no token counts for some call
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


def abbreviate(name: str, width: int) -> str:
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
                instance_label(str(result.get("suite") or "?"), result.get("instance")),
                verdict_word(result),
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
        row[0] = abbreviate(row[0], suite_width)
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
            title = f" {abbreviate(str(result.get('suite') or '?'), max(_MIN_SUITE_WIDTH, width - 20))}: {verdict_status(result)} "
            below = f"{nodeid}\n"
        rule = "-" * max(2, (width - len(title)) // 2)
        blocks.append(fit(f"{rule}{title}{rule}".rstrip() + "\n" + below + render_metric_details(result), width))
    return "\n".join(blocks)
