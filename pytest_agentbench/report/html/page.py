"""A session (`SessionResult`: every run's result, statistics and comparison when present) -> the session's HTML page on disk.

The page shows what the document holds and leaves out what it does not: repeat statistics come
from the document's `statistics` when the session computed them (`--agentbench-repeat`), and
are computed here from the runs otherwise (the same pure functions, `report.stats`); an A/B
comparison is shown only when the document has one (`--agentbench-compare`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_agentbench import __version__
from pytest_agentbench.records import RunResult, SessionResult
from pytest_agentbench.report.ab import seed_line
from pytest_agentbench.report.aggregate import Unrecorded, outcome_of, suite_block
from pytest_agentbench.report.document import scrub
from pytest_agentbench.report.html.assets import Assets
from pytest_agentbench.report.html.charts import ABPoint, SuitePoint, ab_chart, cost_chart, pass_rate_chart
from pytest_agentbench.report.html.run_view import IDENTITY_FIELDS, anchor_for, instance_values_text, run_view
from pytest_agentbench.report.html.templates import render_template
from pytest_agentbench.report.stats import DEFAULT_LEVEL, RunOutcome, shown_k, suite_stats

#: The session-table columns whose delta against the baseline is shown.
#: How the page names where a session's seed came from (the session document's `seedSource`).
SEED_SOURCES = {"drawn": "drawn for the session", "given": "given", "last": "the last session's", "baseline": "the compared session's"}
DELTA_METRICS = (("toolCalls", "calls"), ("costUsd", "cost"), ("wallClockSeconds", "wall"))


def _interval(value: Mapping[str, Any] | None) -> tuple[float | None, float | None]:
    if not value:
        return None, None
    return value.get("low"), value.get("high")


def computed_statistics(runs: Sequence[RunResult], level: float = DEFAULT_LEVEL) -> dict[str, Any]:
    """Per-suite statistics from the runs themselves, in the shape of the session document's `statistics` (`aggregate.suite_block`)."""
    by_suite: dict[str, list[RunOutcome]] = {}
    for run in runs:
        by_suite.setdefault(run.suite or "?", []).append(outcome_of(run))
    suites = {suite: suite_block(suite_stats(suite, outcomes, level=level)) for suite, outcomes in by_suite.items()}
    return {"level": level, "shownK": shown_k([len(o) for o in by_suite.values()]), "suites": suites}


def _money(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return "–"
    return "0" if value == 0 else f"{value:.4f}"


def _pct(value: Any) -> str:
    return "–" if not isinstance(value, (int, float)) else f"{value * 100:.0f}%"


def _estimate(values: Mapping[str, Any], k: int, judged: int) -> str:
    value = values.get(str(k))
    return f"{value:.3f}" if isinstance(value, (int, float)) else f"n/a ({judged} judged)"


def statistics_k(statistics: Mapping[str, Any]) -> int:
    """The k of the pass@k columns: the document's `shownK` (the terminal's), else the terminal's rule over its runs."""
    k = statistics.get("shownK")
    if isinstance(k, int) and not isinstance(k, bool) and k >= 1:
        return k
    return shown_k([int(block.get("runs") or 0) for block in (statistics.get("suites") or {}).values()])


def statistics_view(statistics: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[SuitePoint], str]:
    """The statistics block -> table rows, chart points and the level as text ("95%").

    pass@k and pass^k are shown for one k, the terminal's (`statistics_k`), to 3 decimals as
    there; a suite with fewer judged runs than k reads ``n/a (2 judged)``.
    """
    level = statistics.get("level") or DEFAULT_LEVEL
    k = statistics_k(statistics)
    rows, points = [], []
    for suite, block in (statistics.get("suites") or {}).items():
        low, high = _interval(block.get("interval"))
        cost = ((block.get("metrics") or {}).get("costUsd") or {}).get("median")
        points.append(SuitePoint(str(suite), int(block.get("passed") or 0), int(block.get("judged") or 0),
                                 int(block.get("incomplete") or 0), block.get("rate"), low, high, cost))
        pass_at = block.get("passAtK") or {}
        pass_hat = block.get("passHatK") or {}
        judged = int(block.get("judged") or 0)
        agent = int(block.get("incompleteAgent") or 0)
        incomplete = int(block.get("incomplete") or 0)
        rows.append({
            "suite": str(suite), "runs": block.get("runs", 0), "passed": block.get("passed", 0), "failed": block.get("failed", 0),
            "incomplete": f"{incomplete} ({agent} agent)" if agent else str(incomplete), "judged": judged, "rate": _pct(block.get("rate")),
            "interval": "–" if low is None else f"[{_pct(low)}, {_pct(high)}]",
            "pass_at_1": _estimate(pass_at, 1, judged),
            "pass_at": _estimate(pass_at, k, judged),
            "pass_hat": _estimate(pass_hat, k, judged),
            "cost": _money(cost),
            "median_calls": _median(block, "toolCalls"), "median_wall": _median(block, "wallClockSeconds"),
        })
    return rows, points, f"{float(level) * 100:.0f}%"


def _median(block: Mapping[str, Any], name: str) -> str:
    summary = (block.get("metrics") or {}).get(name)
    return "–" if not summary or summary.get("median") is None else f"{summary['median']:g}"


def comparison_view(comparison: Mapping[str, Any] | None, level: str) -> dict[str, Any] | None:
    """The session document's `comparison` (`--agentbench-compare`) -> rows and the A/B chart; None when the session has none."""
    if not comparison:
        return None
    points: list[ABPoint] = []

    def row(name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
        baseline, this = entry.get("baseline") or {}, entry.get("thisRun") or {}
        low, high = _interval(entry.get("interval"))
        difference = entry.get("difference")
        points.append(ABPoint(name, _side(baseline), _side(this)))
        return {
            "suite": name, "design": str(entry.get("design") or ""),
            "baseline": f"{baseline.get('passed', '?')}/{baseline.get('judged', '?')}",
            "this_run": f"{this.get('passed', '?')}/{this.get('judged', '?')}",
            "difference": "–" if difference is None else f"{difference * 100:+.0f} points",
            "interval": "–" if low is None else f"[{low * 100:+.0f}, {high * 100:+.0f}]",
            "test": str(entry.get("test") or ""),
            "p": "–" if entry.get("pValue") is None else f"{entry['pValue']:.3g}",
            "verdict": str(entry.get("verdict") or ""),
            "flags": [str(f.get("message")) for f in entry.get("flags") or []],
        }

    rows = [row(str(name), entry) for name, entry in (comparison.get("suites") or {}).items()]
    overall = comparison.get("overall")
    seeds = comparison.get("seeds") or {}
    return {
        "baseline": str(comparison.get("baseline") or ""), "rows": rows,
        "seed_line": seed_line(seeds.get("baseline"), seeds.get("thisRun")),
        "overall": row("all suites", overall) if overall else None,
        "only_baseline": [str(s) for s in comparison.get("onlyInBaseline") or []],
        "only_this": [str(s) for s in comparison.get("onlyInThisRun") or []],
        "chart_svg": ab_chart(points, level=level),
    }


def _side(counts: Mapping[str, Any]) -> tuple[int, int]:
    """One side of a comparison entry -> (passed, judged), 0/0 when the entry does not say."""
    passed, judged = counts.get("passed"), counts.get("judged")
    return (passed, judged) if isinstance(passed, int) and isinstance(judged, int) else (0, 0)


def _deltas(run: RunResult) -> str:
    rows = {row.name: row for row in run.comparison.metric_rows}
    shown = []
    for metric, label in DELTA_METRICS:
        row = rows.get(metric)
        if row is None or row.delta is None or row.baseline is None:
            continue
        value = f"{row.delta:+.2f}" if isinstance(row.delta, float) else f"{row.delta:+d}"
        shown.append(f"{label} {value}")
    return ", ".join(shown)


def session_rows(runs: Sequence[RunResult]) -> list[dict[str, Any]]:
    """One row per run for the session table: its suite, instance and repeat, run id, verdict and numbers."""
    rows = []
    for index, run in enumerate(runs, start=1):
        metrics = run.metrics
        cost = metrics.get("costUsd")
        wall = metrics.get("wallClockSeconds")
        rows.append({
            "anchor": anchor_for(index, run.suite or "?"), "suite": run.suite or "?",
            "instance": run.instance_id or "–", "repeat": "–" if run.repeat_index is None else str(run.repeat_index),
            "drawn": instance_values_text(run),  # not "values": a template would find dict.values
            "run_id": run.run_id or "–",
            "status": run.status, "reason": run.verdict.reasons[0] if run.verdict.reasons else "",
            "calls": metrics.get("toolCalls", "–"), "turns": metrics.get("turns", "–"),
            "cost": _money(cost), "wall": "–" if wall is None else f"{wall:.1f}",
            "stumbles": metrics.get("stumbles", "–"), "deltas": _deltas(run) if run.baseline else "no baseline",
            "flags": len(run.comparison.flags),
            "rerendered": run.rerendered is not None,
        })
    return rows


def failure_groups(runs: Sequence[RunResult], unrecorded: Sequence[Unrecorded]) -> list[dict[str, Any]]:
    """The runs that did not pass, grouped by their first reason, biggest group first ("3 runs: no final answer").

    A run that left no result (unrecorded) is grouped by its own reason, as an incomplete run.
    """
    groups: dict[tuple[str, str], list[dict[str, str]]] = {}
    for index, run in enumerate(runs, start=1):
        if run.status == "passed":
            continue
        reason = run.verdict.reasons[0] if run.verdict.reasons else "(no reason recorded)"
        label = f"{run.suite or '?'} {run.instance_id or ''}".strip()
        groups.setdefault((reason, run.status), []).append({"anchor": anchor_for(index, run.suite or "?"), "label": label})
    for entry in unrecorded:
        groups.setdefault((f"no result: {entry.reason}", "incomplete"), []).append({"anchor": "", "label": entry.suite or entry.nodeid})
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0][0]))
    return [{"reason": reason, "status": status, "count": len(members), "runs": members} for (reason, status), members in ordered]


def _distinct(values: Sequence[str]) -> str:
    """The different values in run order, joined ("claude-sonnet, glm-4.5"); an empty string when none."""
    return ", ".join(dict.fromkeys(value for value in values if value))


def session_identity(identities: Sequence[Mapping[str, str]]) -> list[tuple[str, str]]:
    """What ran the session, for the header: the agent, model, MCP server and device of its runs (each distinct value once)."""
    return [(label, _distinct([identity[key] for identity in identities]) or "unknown")
            for key, label in IDENTITY_FIELDS]


def page_values(session: SessionResult, *, assets: Assets, environ: Mapping[str, str], title: str) -> dict[str, Any]:
    """Everything the page template shows, as plain values."""
    runs = session.runs
    statistics = session.statistics or computed_statistics(runs)
    stat_rows, points, level = statistics_view(statistics)
    unrecorded = [Unrecorded.from_json(entry) for entry in session.unrecorded]
    views = [run_view(run, index=i, assets=assets, environ=environ) for i, run in enumerate(runs, start=1)]
    counts = session.counts()
    return {
        "title": title, "version": __version__,
        "generated_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "started_at": session.started_at or "", "finished_at": session.finished_at or "",
        "seed": session.seed, "seed_source": SEED_SOURCES.get(session.seed_source or "", ""),
        "counts": counts, "total": sum(counts.values()),
        "incomplete_agent": sum(1 for run in runs if run.status == "incomplete" and run.verdict.cause == "agent"),
        "identity": session_identity([view["identity"] for view in views]),
        "rows": session_rows(runs),
        "unrecorded": [{"nodeid": u.nodeid, "suite": u.suite, "instance": u.instance or "–", "reason": u.reason} for u in unrecorded],
        "failure_groups": failure_groups(runs, unrecorded),
        # Repeats make the statistics worth a table; a single run per suite is in the session table already.
        "show_statistics": bool(session.statistics) or any(row["runs"] > 1 for row in stat_rows),
        "statistics": stat_rows, "level": level, "shown_k": statistics_k(statistics),
        "pass_rate_svg": pass_rate_chart(points, level=level), "cost_svg": cost_chart(points),
        "comparison": comparison_view(session.comparison, level),
        "runs": views,
    }


def write_html_report(document: Mapping[str, Any] | SessionResult, path: Path, *, environ: Mapping[str, str] | None = None,
                      title: str = "agentbench session") -> Path:
    """Render the session's page to `path` (pictures embedded or in `<stem>_files/`; see assets.py).

    Args:
        document: The session (`SessionResult`) or its document (`SessionResult.to_json()`),
            possibly with `statistics`, `comparison` and `unrecorded`.
        path: The page's file.
        environ: The session's environment; secret values in it are masked everywhere on the page.
        title: The page's title.

    Returns:
        The page's path.
    """
    environ = dict(os.environ) if environ is None else environ
    path = Path(path).absolute()
    path.parent.mkdir(parents=True, exist_ok=True)
    assets = Assets(path)
    # Scrubbed as a document (every string, whatever key holds it), then read once.
    plain = document.to_json() if isinstance(document, SessionResult) else dict(document)
    session = SessionResult.from_json(scrub(plain, environ))
    values = page_values(session, assets=assets, environ=environ, title=title)
    path.write_text(render_template("report.html.jinja2", **values), encoding="utf-8")
    return path
