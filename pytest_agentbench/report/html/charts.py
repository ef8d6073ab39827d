"""Per-suite pass rates (with their intervals), costs and A/B pass rates -> inline SVG charts, generated here as markup (every text escaped).

The page is self-contained, so the charts are plain SVG written by this module: no script, no
library. Each chart is the only raw markup the template lets through (`|safe`), which is why
every piece of text that goes into one (suite names come from suite files) passes `html.escape`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from pytest_agentbench.report.stats import DEFAULT_LEVEL, wilson_interval


@dataclass(frozen=True)
class SuitePoint:
    """One suite in the charts: its pass rate with interval (None without a judged run), counts and median cost."""

    suite: str
    passed: int
    judged: int
    incomplete: int
    rate: float | None
    low: float | None
    high: float | None
    cost: float | None = None


def _percent(value: float) -> str:
    return f"{value * 100:.0f}%"


def _rate_axis(left: float, plot: float, top: float, height: float) -> list[str]:
    """Grid lines and labels at 0, 25, 50, 75 and 100% under a plot of pass rates."""
    parts = []
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = left + plot * tick
        parts.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - 24}" class="grid"/>')
        parts.append(_text(x, height - 10, _percent(tick), anchor="middle", css="tick"))
    return parts


def _text(x: float, y: float, text: str, *, anchor: str = "start", css: str = "") -> str:
    klass = f' class="{css}"' if css else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{klass}>{escape(text)}</text>'


def _label(point: SuitePoint) -> str:
    if point.rate is None:
        counts = "no judged run"
    else:
        counts = f"{point.passed}/{point.judged} = {_percent(point.rate)}"
        if point.low is not None and point.high is not None:
            counts += f" [{_percent(point.low)}, {_percent(point.high)}]"
    if point.incomplete:
        counts += f", {point.incomplete} incomplete"
    return counts


def pass_rate_chart(points: Sequence[SuitePoint], *, level: str = "95%") -> str | None:
    """Horizontal bars of each suite's pass rate, with its interval as a whisker; None without suites.

    Args:
        points: One per suite, in the order to show.
        level: The intervals' confidence level, for the caption.

    Returns:
        An `<svg>` element as text.
    """
    if not points:
        return None
    left, plot, right, row, top = 172, 260, 200, 26, 28
    width, height = left + plot + right, top + row * len(points) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="pass-rate-chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="Pass rate per suite with {escape(level)} intervals">',
        # Starts at the plot's left edge with room for about 60 characters before the SVG's right edge.
        _text(left, 16, f"pass rate, {level} Wilson interval (incomplete not counted)", css="caption"),
    ]
    parts += _rate_axis(left, plot, top, height)
    for index, point in enumerate(points):
        y = top + row * index
        middle = y + row / 2
        name = point.suite if len(point.suite) <= 22 else point.suite[:21] + "…"
        parts.append(f'<g class="suite" data-suite="{escape(point.suite)}"><title>{escape(point.suite)}: {escape(_label(point))}</title>')
        parts.append(_text(left - 8, middle + 4, name, anchor="end", css="name"))
        if point.rate is not None:
            parts.append(f'<rect x="{left}" y="{y + 6}" width="{plot * point.rate:.1f}" height="{row - 12}" class="bar"/>')
            if point.low is not None and point.high is not None:
                x1, x2 = left + plot * point.low, left + plot * point.high
                parts.append(f'<line x1="{x1:.1f}" y1="{middle:.1f}" x2="{x2:.1f}" y2="{middle:.1f}" class="whisker"/>')
                for x in (x1, x2):
                    parts.append(f'<line x1="{x:.1f}" y1="{middle - 6:.1f}" x2="{x:.1f}" y2="{middle + 6:.1f}" class="whisker"/>')
            parts.append(f'<circle cx="{left + plot * point.rate:.1f}" cy="{middle:.1f}" r="4" class="dot"/>')
        parts.append(_text(left + plot + 10, middle + 4, _label(point), css="value"))
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def _nice_max(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above `value` (the x axis' end)."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** _floor_log10(value)
    for step in (1, 2, 5, 10):
        if value <= step * magnitude:
            return step * magnitude
    return 10 * magnitude


def _floor_log10(value: float) -> int:
    exponent = 0
    while value >= 10:
        value /= 10
        exponent += 1
    while value < 1:
        value *= 10
        exponent -= 1
    return exponent


def _money(value: float) -> str:
    return f"${value:.2f}" if value >= 0.1 or value == 0 else f"${value:.4f}".rstrip("0")


def cost_chart(points: Sequence[SuitePoint]) -> str | None:
    """Each suite's median cost per run (x) against its pass rate (y, with interval); None when no suite has both.

    Args:
        points: One per suite; suites without a judged run or without a cost are left out.

    Returns:
        An `<svg>` element as text.
    """
    shown = [p for p in points if p.rate is not None and p.cost is not None]
    if not shown:
        return None
    left, top, plot_w, plot_h = 56, 40, 320, 200
    width, height = left + plot_w + 150, top + plot_h + 44
    x_max = _nice_max(max(p.cost or 0.0 for p in shown))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="cost-chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="Median cost per run against pass rate, per suite">',
        _text(left, 16, "median cost per run (USD) against pass rate, per suite", css="caption"),
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" class="grid"/>')
        parts.append(_text(left - 6, y + 4, _percent(tick), anchor="end", css="tick"))
    for tick in (0, 0.5, 1.0):
        x = left + plot_w * tick
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" class="grid"/>')
        parts.append(_text(x, top + plot_h + 18, _money(x_max * tick), anchor="middle", css="tick"))
    # Suites on the same dot (same cost and rate, common when nothing costs money) share one label,
    # "13 suites", with every name in its tooltip: stacked names would run off the plot.
    dots: dict[tuple[int, int], list[SuitePoint]] = {}
    for point in shown:
        x = left + plot_w * (point.cost or 0.0) / x_max
        y = top + plot_h * (1 - (point.rate or 0.0))
        dots.setdefault((round(x), round(y)), []).append(point)
    placed: list[tuple[float, float]] = []
    for (x, y), group in dots.items():
        # Nearby dots still get their labels moved apart.
        label_y = y - 6
        while any(abs(label_y - py) < 13 and abs(x - px) < 110 for px, py in placed):
            label_y += 13
        placed.append((x, label_y))
        names = ", ".join(point.suite for point in group)
        parts.append(f'<g class="dot-group" data-suites="{escape(names)}"><title>'
                     + escape("; ".join(f"{p.suite}: {_money(p.cost or 0.0)} per run, {_label(p)}" for p in group))
                     + "</title>")
        for point in group:
            parts.append(f'<g class="suite" data-suite="{escape(point.suite)}">')
            if point.low is not None and point.high is not None:
                y1, y2 = top + plot_h * (1 - point.low), top + plot_h * (1 - point.high)
                parts.append(f'<line x1="{x:.1f}" y1="{y1:.1f}" x2="{x:.1f}" y2="{y2:.1f}" class="whisker"/>')
            parts.append("</g>")
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" class="dot"/>')
        if len(group) == 1:
            name = group[0].suite if len(group[0].suite) <= 20 else group[0].suite[:19] + "…"
        else:
            name = f"{len(group)} suites"
        parts.append(_text(x + 8, label_y, name, css="value"))
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class ABPoint:
    """One suite of an A/B comparison: (passed, judged) in the baseline session and in this one."""

    suite: str
    baseline: tuple[int, int]
    this_run: tuple[int, int]


def _level_value(level: str) -> float:
    try:
        return float(level.rstrip("%")) / 100
    except ValueError:
        return DEFAULT_LEVEL


def ab_chart(points: Sequence[ABPoint], *, level: str = "95%") -> str | None:
    """Two bars per suite, the baseline's pass rate above this session's, each with its Wilson interval; None without suites.

    Args:
        points: One per suite (and the overall line, when the comparison has one), in the order to show.
        level: The intervals' confidence level ("95%").

    Returns:
        An `<svg>` element as text.
    """
    if not points:
        return None
    confidence = _level_value(level)
    left, plot, right, bar, gap, top = 172, 260, 230, 14, 12, 28
    group = 2 * bar + gap
    width, height = left + plot + right, top + group * len(points) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="ab-chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="Pass rate per suite, baseline against this session, with {escape(level)} intervals">',
        _text(left, 16, f"pass rate: baseline (light) against this session (dark), {level} Wilson interval", css="caption"),
    ]
    parts += _rate_axis(left, plot, top, height)
    for index, point in enumerate(points):
        y0 = top + group * index
        name = point.suite if len(point.suite) <= 22 else point.suite[:21] + "…"
        parts.append(f'<g class="ab-suite" data-suite="{escape(point.suite)}">')
        parts.append(_text(left - 8, y0 + bar + 4, name, anchor="end", css="name"))
        for side, (passed, judged), offset in (("baseline", point.baseline, 0), ("this", point.this_run, bar)):
            y, middle = y0 + offset, y0 + offset + bar / 2
            rate = passed / judged if judged else None
            interval = wilson_interval(passed, judged, confidence) if judged else None
            label = "no judged run" if rate is None else f"{passed}/{judged} = {_percent(rate)}"
            if interval is not None:
                label += f" [{_percent(interval.low)}, {_percent(interval.high)}]"
            who = "baseline" if side == "baseline" else "this session"
            parts.append(f'<g class="side {side}" data-passed="{passed}" data-judged="{judged}"'
                         + ("" if interval is None else f' data-low="{interval.low:.4f}" data-high="{interval.high:.4f}"')
                         + f'><title>{escape(point.suite)}, {who}: {escape(label)}</title>')
            if rate is not None:
                parts.append(f'<rect x="{left}" y="{y + 2}" width="{plot * rate:.1f}" height="{bar - 4}" class="bar {side}"/>')
            if interval is not None:
                x1, x2 = left + plot * interval.low, left + plot * interval.high
                parts.append(f'<line x1="{x1:.1f}" y1="{middle:.1f}" x2="{x2:.1f}" y2="{middle:.1f}" class="whisker"/>')
                for x in (x1, x2):
                    parts.append(f'<line x1="{x:.1f}" y1="{middle - 4:.1f}" x2="{x:.1f}" y2="{middle + 4:.1f}" class="whisker"/>')
            parts.append(_text(left + plot + 10, middle + 4, f"{'A' if side == 'baseline' else 'B'} {label}", css="value"))
            parts.append("</g>")
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)
