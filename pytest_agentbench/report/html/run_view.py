"""One run's result (`RunResult`) + its run directory -> the plain values of its section of the page.

The section opens with the verdict and, for a run that did not pass, the first failed check's
expected and seen text; then every check (failed first), stumbles, where the time went, the
screens before and after, the tool timeline, the sequence diff against the baseline, the
metrics and links to the run's files. Every check is shown the same way: kind, name, expected,
seen. The header says what ran it: agent, model, MCP server, device (`run_identity`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.audit.transcript import parse_file
from pytest_agentbench.baseline.compare import format_delta, format_number
from pytest_agentbench.errors import TranscriptError
from pytest_agentbench.checks.base import Check
from pytest_agentbench.records import RunResult
from pytest_agentbench.report.document import scrub
from pytest_agentbench.report.html.assets import Assets
from pytest_agentbench.report.html.timeline import build_timeline
from pytest_agentbench.run.invocation import REPLAY_COMMAND
from pytest_agentbench.run.artifacts import RunArtifacts
from pytest_agentbench.run.stream import read_arrivals
from pytest_agentbench.servers.screenshots import DATA_SUBDIR, SCREENSHOTS_DIR, read_index
from pytest_agentbench.suite.instance import instance_label, instance_seed_text

#: The run's files the page links to, in this order, when they exist.
RUN_FILES = (
    "result.json", "claude.jsonl", RunArtifacts(Path(".")).timing.name, "claude.stderr", "prompt.md", "claude-command.json", "mcp-config.json",
    "preflight.log", "start-screen.xml", "start-screen.png", "postrun.log", "screen.xml", "screen.png", "baseline.yml",
    "logs/agentbench-mcp.log", f"{DATA_SUBDIR}/{SCREENSHOTS_DIR}/calls.jsonl",
)
#: What ran a run, in the order the header and each run show it: identity key -> label.
IDENTITY_FIELDS = (("agent", "agent"), ("model", "model"), ("server", "MCP server"), ("device", "device"))
_DIFF_CLASS = {" ": "same", "-": "missing", "+": "extra"}
_SEEN_CHARS = 2000
#: Above this many rows the timeline's off-screen rows are not laid out until scrolled to.
LONG_TIMELINE_ROWS = 200


def instance_values_text(run: RunResult) -> str:
    """A seeded run's drawn values and seed, `[city=Tokyo,snooze=20] seed 0, r3` ("" for a suite without params)."""
    ref = run.instance_ref
    if ref is None or not ref.values:
        return ""
    label = instance_label(run.suite or "?", run.instance)
    return f"{label[len(run.suite or '?'):]} {instance_seed_text(run.instance)}"


def anchor_for(index: int, suite: str) -> str:
    """The run section's id: `run-003-bug-repro`."""
    return f"run-{index:03d}-" + (re.sub(r"[^A-Za-z0-9_-]+", "-", suite).strip("-") or "suite")


def _short(value: Any, limit: int = _SEEN_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + " …"


def check_rows(checks: Sequence[Check]) -> list[dict[str, Any]]:
    """The run's checks -> rows, failed checks first (each group in the audit's order)."""
    rows = [{
        "kind": check.kind or "check", "name": check.name or "",
        "expected": _short(check.expected), "seen": _short(check.seen),
        "passed": check.passed, "status": "passed" if check.passed else "failed",
    } for check in checks]
    return sorted(rows, key=lambda row: row["passed"])


def _servers(run_dir: Path) -> str:
    """The MCP server(s) the harness started for the run, from its `mcp-servers.json` (names only, never their environment)."""
    try:
        config = json.loads(RunArtifacts(run_dir).server_config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    servers = config.get("mcpServers") if isinstance(config, dict) else None
    return ", ".join(str(name) for name in servers) if isinstance(servers, dict) else ""


def run_identity(result: RunResult) -> dict[str, str]:
    """What ran the run: the agent (program and version), the model (asked and seen, and its provider), the MCP server and the device.

    Each value is "" when the run did not record it.
    """
    fingerprints = result.fingerprints
    program = Path(result.agent_command[0]).name if result.agent_command else ""
    version = fingerprints.get("claudeCodeVersion")
    agent = f"{program} {version}" if program and isinstance(version, str) and version != "unknown" else program
    model = result.requested_model or ""
    observed = fingerprints.get("observedModel")
    if program == REPLAY_COMMAND:
        # No model ran: the scripted agent played the suite's plan (its stream names itself as the model).
        model = "no model: a script answered (agentbench-replay plays the suite's plan)" + (f"; the suite asks for {model}" if model else "")
    elif isinstance(observed, str) and observed not in ("", "unknown", model):
        model = f"{model} (answered as {observed})" if model else observed
    provider = fingerprints.server_build_components.get("provider")
    if model and provider and program != REPLAY_COMMAND:
        endpoint = fingerprints.server_build_components.get("provider.endpoint")
        model += f" via {provider}" + (f" at {endpoint}" if endpoint else "")
    device = result.device_serial or ""
    described = fingerprints.get("deviceFingerprint")
    if device and isinstance(described, Mapping) and described.get("model"):
        device += f" ({described['model']}" + (f", SDK {described['sdk']})" if described.get("sdk") else ")")
    return {"agent": agent, "model": model, "server": _servers(result.run_dir), "device": device}


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


def time_view(result: RunResult) -> dict[str, Any] | None:
    """The run's `timing` (from the runner's time split, when the run had a sidecar) -> the values shown; None without one."""
    timing = result.timing
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


def _screens(run_dir: Path, assets: Assets) -> list[dict[str, Any]]:
    shown = []
    for name, label in (("start-screen.png", "before: where preflight left the app"), ("screen.png", "after: the post-run screen")):
        path = run_dir / name
        src = assets.image(path) if path.is_file() else None
        shown.append({"label": label, "src": src, "href": assets.href(path) if src else None, "name": name})
    return shown


def run_view(result: RunResult, *, index: int, assets: Assets, environ: Mapping[str, str]) -> dict[str, Any]:
    """The values of one run's section.

    Args:
        result: The run's result (scrubbed already).
        index: Its position in the session (1-based), for the anchor and file names.
        assets: Where pictures and long texts go.
        environ: For masking secrets in the transcript's text (result.json is scrubbed already).

    Returns:
        A dict of strings, numbers, lists and dicts for `report.html.jinja2`.
    """
    suite = result.suite or "?"
    key = anchor_for(index, suite)
    run_dir = result.run_dir
    status = result.status
    checks = check_rows(result.checks)
    comparison = result.comparison
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
            shots=read_index(shots_dir), shots_dir=shots_dir, stumbles=result.stumbles,
            assets=assets, key=key, environ=environ,
        )
        if transcript.unparseable:
            timeline_note = f"{len(transcript.unparseable)} line(s) of the transcript are not stream-json (see claude.jsonl)"
        elif not transcript.tool_calls:
            timeline_note = "the agent made no tool call"
        if transcript.final_text:
            final_text = _short(scrub(transcript.final_text, environ))
    files = [{"name": name, "href": assets.href(run_dir / name)} for name in RUN_FILES if (run_dir / name).is_file()]
    identity = run_identity(result)
    recorded = result.rerendered.verdict_when_recorded if result.rerendered is not None else None
    return {
        "anchor": key, "index": index, "suite": suite, "nodeid": result.nodeid or "",
        "instance": result.instance_id or "", "repeat": "" if result.repeat_index is None else str(result.repeat_index),
        "drawn": instance_values_text(result),  # not "values": a template would find dict.values
        "run_id": result.run_id,
        "identity": identity,
        "identity_cells": [(label, identity[field]) for field, label in IDENTITY_FIELDS if identity[field]],
        "status": status, "reasons": list(result.verdict.reasons),
        # A failed run leads with the check that failed it; an incomplete one with why it was not judged.
        "headline": next((c for c in checks if not c["passed"]), None) if status == "failed" else None,
        # Runs that need reading start open; a passed run starts folded to its header.
        "open": status != "passed",
        "checks": checks,
        "stumbles": [{"kind": s.kind, "tool": s.tool, "detail": s.detail} for s in result.stumbles],
        "metrics": metric_cells(result.metrics),
        "time": time_view(result),
        "screens": _screens(run_dir, assets),
        "timeline": timeline, "timeline_note": timeline_note,
        # Only a long timeline lets the browser skip rows off screen: a short one is drawn whole
        # (so it prints, and a screenshot of the page shows it).
        "timeline_class": "timeline long" if len(timeline) > LONG_TIMELINE_ROWS else "timeline",
        "calls_with_shots": sum(1 for row in timeline if row.get("shot_src")),
        "model_calls": sum(1 for row in timeline if row["kind"] == "model-call"),
        "final_text": final_text,
        "diff": [{"op": d.op, "tool": d.tool, "class": _DIFF_CLASS.get(d.op, "same")} for d in comparison.sequence_diff],
        "has_baseline": bool(result.baseline),
        "flags": [flag.message for flag in comparison.flags],
        "metric_rows": [
            # The text report's formats, so the page and the terminal say the same thing.
            {"metric": r.name, "actual": format_number(r.actual), "baseline": format_number(r.baseline),
             "delta": format_delta(r.delta, r.delta_percent)}
            for r in comparison.metric_rows
        ],
        "files": files, "run_dir": str(run_dir), "run_dir_href": assets.href(run_dir),
        "started_at": result.started_at or "", "device": result.device_serial or "",
        "rerendered": result.rerendered is not None,
        "recorded_verdict": str((recorded or {}).get("status") or ""),
    }
