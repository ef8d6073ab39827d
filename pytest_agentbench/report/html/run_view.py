"""One run's result.json + its run directory -> the plain values of its section of the page.

The section opens with the verdict and, for a run that did not pass, the first failed check's
expected and seen text; then every check (failed first), stumbles, where the time went, the
screens before and after, the tool timeline, the sequence diff against the baseline, the
metrics and links to the run's files. Any check entry is shown generically: kind, name,
expected, seen, and whatever else the check carries (device checks add their own fields).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_agentbench.audit.transcript import parse_file
from pytest_agentbench.baseline.compare import format_delta, format_number
from pytest_agentbench.errors import TranscriptError
from pytest_agentbench.report.document import scrub, verdict_status
from pytest_agentbench.report.html.assets import Assets
from pytest_agentbench.report.html.timeline import build_timeline
from pytest_agentbench.run.artifacts import RunArtifacts
from pytest_agentbench.run.stream import read_arrivals
from pytest_agentbench.servers.screenshots import DATA_SUBDIR, SCREENSHOTS_DIR, read_index

#: The run's files the page links to, in this order, when they exist.
RUN_FILES = (
    "result.json", "claude.jsonl", RunArtifacts(Path(".")).timing.name, "claude.stderr", "prompt.md", "claude-command.json", "mcp-config.json",
    "preflight.log", "start-screen.xml", "start-screen.png", "postrun.log", "screen.xml", "screen.png", "baseline.yml",
    "logs/agentbench-mcp.log", f"{DATA_SUBDIR}/{SCREENSHOTS_DIR}/calls.jsonl",
)
_KNOWN_CHECK_KEYS = ("kind", "name", "expected", "seen", "passed")
_DIFF_CLASS = {" ": "same", "-": "missing", "+": "extra"}
_SEEN_CHARS = 2000
#: Above this many rows the timeline's off-screen rows are not laid out until scrolled to.
LONG_TIMELINE_ROWS = 200


def anchor_for(index: int, suite: str) -> str:
    """The run section's id: `run-003-bug-repro`."""
    return f"run-{index:03d}-" + (re.sub(r"[^A-Za-z0-9_-]+", "-", suite).strip("-") or "suite")


def _short(value: Any, limit: int = _SEEN_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + " …"


def check_rows(checks: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """result.json's checks -> rows, failed checks first (each group in the audit's order)."""
    rows = []
    for check in checks:
        extra = [(str(key), _short(value, 400)) for key, value in check.items() if key not in _KNOWN_CHECK_KEYS]
        passed = check.get("passed") is True
        rows.append({
            "kind": str(check.get("kind") or "check"), "name": str(check.get("name") or ""),
            "expected": _short(check.get("expected", "")), "seen": _short(check.get("seen", "")),
            "passed": passed, "status": "passed" if passed else "failed", "extra": extra,
        })
    return sorted(rows, key=lambda row: row["passed"])


def _number(value: Any, unit: str = "") -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") + unit if unit == " USD" else f"{value:.2f}{unit}"
    return f"{value}{unit}"


def metric_cells(metrics: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The metrics shown in a run's header, as (label, value) pairs."""
    tokens = sum(int(metrics.get(k) or 0) for k in ("inputTokens", "outputTokens", "cacheCreationInputTokens", "cacheReadInputTokens"))
    return [
        ("tool calls", _number(metrics.get("toolCalls"))), ("device-aware", _number(metrics.get("deviceAwareCalls"))),
        ("turns", _number(metrics.get("turns"))), ("tokens", str(tokens)), ("cost", _number(metrics.get("costUsd"), " USD")),
        ("wall clock", _number(metrics.get("wallClockSeconds"), " s")), ("stumbles", _number(metrics.get("stumbles"))),
        ("recoveries", _number(metrics.get("recoveries"))),
    ]


def time_view(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """result.json's `timing` (from the runner's time split, when the run had a sidecar) -> the values shown; None without one."""
    timing = result.get("timing") or {}
    agent = timing.get("agent")
    harness = timing.get("harness") or {}
    if not agent and not harness:
        return None
    parts = []
    if agent:
        for key, label in (("startupSeconds", "startup"), ("modelSeconds", "model"), ("toolSeconds", "tools"),
                           ("afterResultSeconds", "after the result")):
            if agent.get(key) is not None:
                parts.append(f"{label} {float(agent[key]):.2f} s")
    tools = [
        {"tool": str(t.get("tool", "?")), "count": t.get("count", 0), "total": f"{float(t.get('totalSeconds') or 0):.3f} s",
         "median": "–" if t.get("medianSeconds") is None else f"{float(t['medianSeconds']):.3f} s"}
        for t in (agent or {}).get("tools") or []
    ]
    ours = [f"{key.removesuffix('Seconds')} {float(value):.2f} s" for key, value in harness.items() if isinstance(value, (int, float))]
    return {
        "wall": None if not agent or agent.get("wallClockSeconds") is None else f"{float(agent['wallClockSeconds']):.2f} s",
        "parts": parts, "tools": tools, "harness": ours,
    }


def _screens(run_dir: Path, assets: Assets, key: str) -> list[dict[str, Any]]:
    shown = []
    for name, label in (("start-screen.png", "before: where preflight left the app"), ("screen.png", "after: the post-run screen")):
        path = run_dir / name
        src = assets.image(path, key=f"{key}/{name}") if path.is_file() else None
        shown.append({"label": label, "src": src, "href": assets.href(path) if src else None, "name": name})
    return shown


def run_view(result: Mapping[str, Any], *, index: int, assets: Assets, environ: Mapping[str, str]) -> dict[str, Any]:
    """The values of one run's section.

    Args:
        result: The run's result.json document.
        index: Its position in the session (1-based), for the anchor and file names.
        assets: Where pictures and long texts go.
        environ: For masking secrets in the transcript's text (result.json is scrubbed already).

    Returns:
        A dict of strings, numbers, lists and dicts for `report.html.jinja2`.
    """
    suite = str(result.get("suite") or "?")
    key = anchor_for(index, suite)
    run_dir = Path(str(result.get("runDirectory") or "."))
    verdict = result.get("verdict") or {}
    status = verdict_status(result)
    checks = check_rows(list(result.get("checks") or []))
    comparison = result.get("comparison") or {}
    transcript_path = run_dir / "claude.jsonl"
    timeline: list[dict[str, Any]] = []
    timeline_note = None
    final_text = None
    try:
        transcript = parse_file(transcript_path)
    except TranscriptError as exc:
        timeline_note = str(exc)
    else:
        shots_dir = run_dir / DATA_SUBDIR / SCREENSHOTS_DIR
        timeline = build_timeline(
            transcript, transcript_path=transcript_path, arrivals=read_arrivals(RunArtifacts(run_dir).timing),
            shots=read_index(shots_dir), shots_dir=shots_dir, stumbles=list(result.get("stumbles") or []),
            assets=assets, key=key, environ=environ,
        )
        if transcript.unparseable:
            timeline_note = f"{len(transcript.unparseable)} line(s) of the transcript are not stream-json (see claude.jsonl)"
        elif not transcript.tool_calls:
            timeline_note = "the agent made no tool call"
        if transcript.final_text:
            final_text = _short(scrub(transcript.final_text, environ))
    rerendered = result.get("rerendered")
    files = [{"name": name, "href": assets.href(run_dir / name)} for name in RUN_FILES if (run_dir / name).is_file()]
    return {
        "anchor": key, "index": index, "suite": suite, "nodeid": str(result.get("nodeid") or ""),
        "status": status, "reasons": [str(r) for r in verdict.get("reasons") or []],
        # A failed run leads with the check that failed it; an incomplete one with why it was not judged.
        "headline": next((c for c in checks if not c["passed"]), None) if status == "failed" else None,
        "checks": checks,
        "stumbles": [{"kind": str(s.get("kind")), "tool": str(s.get("tool")), "detail": str(s.get("detail"))}
                     for s in result.get("stumbles") or []],
        "metrics": metric_cells(result.get("metrics") or {}),
        "time": time_view(result),
        "screens": _screens(run_dir, assets, key),
        "timeline": timeline, "timeline_note": timeline_note,
        # Only a long timeline lets the browser skip rows off screen: a short one is drawn whole
        # (so it prints, and a screenshot of the page shows it).
        "timeline_class": "timeline long" if len(timeline) > LONG_TIMELINE_ROWS else "timeline",
        "calls_with_shots": sum(1 for row in timeline if row.get("shot_src")),
        "final_text": final_text,
        "diff": [{"op": str(d.get("op")), "tool": str(d.get("tool")), "class": _DIFF_CLASS.get(str(d.get("op")), "same")}
                 for d in comparison.get("sequenceDiff") or []],
        "has_baseline": bool(result.get("baseline")),
        "flags": [str(f.get("message")) for f in comparison.get("flags") or []],
        "metric_rows": [
            # The text report's formats, so the page and the terminal say the same thing.
            {"metric": str(r.get("metric")), "actual": format_number(r.get("actual")), "baseline": format_number(r.get("baseline")),
             "delta": format_delta(r.get("delta"), r.get("deltaPercent"))}
            for r in comparison.get("metricRows") or []
        ],
        "files": files, "run_dir": str(run_dir), "run_dir_href": assets.href(run_dir),
        "started_at": str(result.get("startedAt") or ""), "device": str((result.get("device") or {}).get("serial") or ""),
        "rerendered": bool(rerendered),
        "recorded_verdict": str(((rerendered or {}).get("verdictWhenRecorded") or {}).get("status") or ""),
    }

