"""A run's transcript + timing sidecar + the server's screenshot index -> the rows of its tool timeline (plain values).

One row per tool call in stream order: name, arguments, a short excerpt of the result (the full
text one click away in `<page>_files/`), its duration when the run has a timing sidecar,
stumbles and recoveries marked, and the screenshot the built-in server took after it. The
agent's own reports of recoveries and retries (agentbench-agent) are rows of their own, in
place, and so is each of its model calls (duration, tokens, finish reason, retries). Everything shown is scrubbed of secrets, as result.json is.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.audit.timing import MODEL_CALL_REPORT
from pytest_agentbench.audit.transcript import AgentReport, ToolCall, Transcript, short_tool_name, tool_result_text
from pytest_agentbench.records import Stumble
from pytest_agentbench.report.document import scrub
from pytest_agentbench.report.html.assets import Assets
from pytest_agentbench.servers.screenshots import CallShot, pair_calls

#: Characters of a result (and of the arguments) shown in the row; longer ones are cut and linked.
INLINE_CHARS = 600
INLINE_LINES = 12
#: Agent reports shown as rows of their own: what an agent repaired or asked again.
REPORT_ROWS = frozenset({"recovery", "retry", "action-error", "extra-call", "api-retry",
                         "parameter-dropped", "usage-unknown"})
_PATTERN_DETAIL = re.compile(r"^('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\") in result: ")


def call_duration(call: ToolCall, arrivals: Mapping[int, float] | None) -> float | None:
    """Seconds from a call's tool_use line to its tool_result line, or None when either is not timed."""
    if not arrivals or call.use_line is None or call.result_line is None:
        return None
    start, end = arrivals.get(call.use_line), arrivals.get(call.result_line)
    if start is None or end is None:
        return None
    return max(0.0, end - start)


def stumble_patterns(stumbles: Iterable[Stumble]) -> dict[str, set[str]]:
    """The audit's failure-pattern stumbles -> tool -> the patterns found in its results (read from each stumble's detail)."""
    found: dict[str, set[str]] = {}
    for stumble in stumbles:
        if stumble.kind != "failure-pattern":
            continue
        match = _PATTERN_DETAIL.match(stumble.detail or "")
        if match is None:
            continue
        try:
            pattern = ast.literal_eval(match.group(1))
        except (ValueError, SyntaxError):
            continue
        found.setdefault(stumble.tool, set()).add(str(pattern))
    return found


def call_marks(transcript: Transcript, patterns: Mapping[str, set[str]]) -> dict[str, list[str]]:
    """Each call's stumble and recovery marks (call id -> short phrases), from the transcript and the audit's patterns."""
    marks: dict[str, list[str]] = {}
    denied = {d.tool_use_id for d in (transcript.result.permission_denials if transcript.result else ()) if d.tool_use_id}
    for call in transcript.tool_calls:
        tool = short_tool_name(call.name)
        here = marks.setdefault(call.id, [])
        if call.id in denied:
            here.append("stumble: permission denied")
        if call.is_error:
            here.append("stumble: tool error")
        else:
            for pattern in sorted(patterns.get(tool, ())):
                try:
                    hit = call.contains(pattern)
                except ValueError:
                    hit = False
                if hit:
                    here.append(f"stumble: {pattern!r} in result")
    # A recovery report precedes the call it recovered: mark the next call after it.
    calls = sorted((c for c in transcript.tool_calls if c.use_line is not None), key=lambda c: c.use_line or 0)
    for report in transcript.reports:
        if report.kind not in ("recovery", "retry") or report.line is None:
            continue
        following = next((c for c in calls if (c.use_line or 0) > report.line), None)
        if following is not None:
            marks[following.id].append(f"recovered ({report.kind})")
    return marks


def full_results(path: Path, calls: Sequence[ToolCall]) -> Iterator[tuple[str, str]]:
    """The full text of each cut result, read back from the transcript in one pass: (call id, text).

    Only the lines that carry those results are decoded; one line is in memory at a time.
    """
    wanted: dict[int, set[str]] = {}
    for call in calls:
        if call.result_line is not None:
            wanted.setdefault(call.result_line, set()).add(call.id)
    if not wanted:
        return
    last = max(wanted)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number > last:
                break
            ids = wanted.get(number)
            if not ids:
                continue
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            for block in (event.get("message") or {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result" and str(block.get("tool_use_id")) in ids:
                    yield str(block.get("tool_use_id")), tool_result_text(block.get("content"))


def _cut(text: str, limit: int = INLINE_CHARS, lines: int = INLINE_LINES) -> tuple[str, bool]:
    """At most `limit` characters and `lines` lines of a text, and whether anything was cut."""
    shown = text[:limit]
    if shown.count("\n") >= lines:
        shown = "\n".join(shown.split("\n")[:lines])
    if len(shown) == len(text):
        return text, False
    return shown.rstrip() + " …", True


def _seconds(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def build_timeline(
    transcript: Transcript,
    *,
    transcript_path: Path,
    arrivals: Mapping[int, float] | None,
    shots: Sequence[CallShot],
    shots_dir: Path,
    stumbles: Sequence[Stumble],
    assets: Assets,
    key: str,
    environ: Mapping[str, str],
) -> list[dict[str, Any]]:
    """The timeline rows of one run (plain dicts the template shows as they are).

    Args:
        transcript: The parsed transcript (bounded excerpts; full texts are read back as needed).
        transcript_path: Its file, for the full text of cut results.
        arrivals: The timing sidecar's line -> seconds, or None.
        shots: The built-in server's screenshot index (servers/screenshots.py), possibly empty.
        shots_dir: The directory the index's files are in.
        stumbles: The audit's stumbles (failure patterns are read from them).
        assets: Where cut texts and pictures go.
        key: This run's prefix for the files it writes.
        environ: The environment whose secret values are masked in everything shown.

    Returns:
        One dict per row: `kind` ("call" or "report"), `number`, `tool`, `arguments`, `result`,
        `result_cut`, `result_chars`, `full_href`, `duration`, `is_error`, `marks`, `stumbled`,
        `recovered`, `shot_src`, `shot_href`, `line`; report rows carry `kind`, `message`, `line`;
        a model call's row (`kind` "model-call") adds its `number`, `duration`, `tokens`,
        `finish_reason` and `retries`.
    """
    marks = call_marks(transcript, stumble_patterns(stumbles))
    paired = pair_calls([(short_tool_name(c.name), c.input) for c in transcript.tool_calls], shots)
    rows: list[dict[str, Any]] = []
    needs_file: list[ToolCall] = []
    for number, (call, shot) in enumerate(zip(transcript.tool_calls, paired), start=1):
        arguments, arguments_cut = _cut(scrub(json.dumps(call.input, ensure_ascii=False, sort_keys=True), environ))
        result = "(no result: the call was never answered)" if call.result_text is None else call.result_text
        shown, cut = _cut(scrub(result, environ))
        cut = cut or call.result_truncated
        full_href = None
        if cut or arguments_cut:
            if call.result_truncated:
                needs_file.append(call)
            else:
                full_href = _write_full(assets, key, number, call, result, environ)
        shot_src = assets.linked_image(shots_dir / shot.file) if shot and shot.file else None
        call_marks_here = marks.get(call.id, [])
        rows.append({
            "kind": "call", "number": number, "id": call.id, "tool": short_tool_name(call.name), "full_name": call.name,
            "arguments": arguments, "result": shown, "result_cut": cut, "result_chars": call.result_chars,
            "full_href": full_href, "duration": _seconds(call_duration(call, arrivals)), "is_error": call.is_error,
            "marks": call_marks_here, "stumbled": any(m.startswith("stumble") for m in call_marks_here),
            "recovered": any(m.startswith("recovered") for m in call_marks_here),
            "shot_src": shot_src, "shot_problem": shot.problem if shot else None,
            # The run's own file, loaded when it is scrolled to: a long session has hundreds.
            "shot_loading": "lazy",
            "line": call.use_line, "sort": call.use_line if call.use_line is not None else number,
        })
    by_id = {row["id"]: row for row in rows}
    calls = {call.id: (number, call) for number, call in enumerate(transcript.tool_calls, start=1)}
    for call_id, text in full_results(transcript_path, needs_file):
        number, call = calls[call_id]
        by_id[call_id]["full_href"] = _write_full(assets, key, number, call, text, environ)
    for report in transcript.reports:
        if report.kind == MODEL_CALL_REPORT:
            rows.append(model_call_row(report, arrivals, environ))
        elif report.kind in REPORT_ROWS:
            rows.append({"kind": "report", "report_kind": report.kind, "message": scrub(report.message, environ),
                         "line": report.line, "sort": report.line if report.line is not None else 0})
    rows.sort(key=lambda row: (row["sort"], row["kind"] == "call"))
    return rows


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def model_call_row(report: AgentReport, arrivals: Mapping[int, float] | None, environ: Mapping[str, str]) -> dict[str, Any]:
    """An agent's `model-call` report -> its timeline row: call number, start, duration, tokens (unknown when not sent), finish reason, retries.

    It sits where the report is in the stream: after the call it describes, before the tool call
    the reply asked for. The start is on the timing sidecar's clock (seconds since the agent
    started: the report's arrival minus the call's duration, as the sidecar's model-call row says).
    """
    data = report.data
    duration = data.get("duration_ms")
    arrived = arrivals.get(report.line) if arrivals and report.line is not None else None
    timed = isinstance(duration, (int, float)) and not isinstance(duration, bool)
    prompt, completion = _count(data.get("prompt_tokens")), _count(data.get("completion_tokens"))
    retries = [retry for retry in data.get("retries") or [] if isinstance(retry, Mapping)]
    failed = data.get("error")
    return {
        "kind": "model-call", "number": _count(data.get("call")), "message": scrub(report.message, environ),
        "duration": _seconds(duration / 1000) if timed else "",
        "start": f"at {max(arrived - duration / 1000, 0.0):.2f} s" if timed and arrived is not None else "",
        "tokens": "tokens unknown" if prompt is None and completion is None
        else f"{'?' if prompt is None else prompt} prompt + {'?' if completion is None else completion} completion tokens",
        "finish_reason": str(data.get("finish_reason") or ("failed" if failed else "none")),
        "retries": [f"HTTP {r.get('status')}, waited {r.get('wait_s')} s" if r.get("status") is not None
                    else f"no response, waited {r.get('wait_s')} s" for r in retries],
        "failed": bool(failed), "error": scrub(str(failed), environ) if failed else "",
        "line": report.line, "sort": report.line if report.line is not None else 0,
    }


def _write_full(assets: Assets, key: str, number: int, call: ToolCall, result: str, environ: Mapping[str, str]) -> str:
    arguments = json.dumps(call.input, ensure_ascii=False, sort_keys=True, indent=2)
    text = f"{call.name} (call {number}, id {call.id})\narguments:\n{arguments}\n\nresult ({call.result_chars} characters):\n{result}\n"
    return assets.text(scrub(text, environ), key=f"{key}/call-{number:04d}")
