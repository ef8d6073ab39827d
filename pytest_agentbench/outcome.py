"""A Run record -> its audit, fingerprints, result.json and baseline.yml, and the pytest outcome (pass, VerdictFailed, xfail).

Live runs (`run_suite_item`) and re-rendered ones (`rerender.SavedRunItem`) both end here, so a
saved run is judged by the same code path as a fresh one.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from pytest_agentbench.audit.scoring import scoring_code_digest
from pytest_agentbench.audit.timing import time_split
from pytest_agentbench.audit.transcript import Transcript, parse_file
from pytest_agentbench.audit.verdict import Audit, audit_run, watched_patterns
from pytest_agentbench.baseline.snippet import build_baseline_block, insert_baseline, render_snippet, snippet_blockers
from pytest_agentbench.errors import VerdictFailed
from pytest_agentbench.options import attempts_for
from pytest_agentbench.progress import live_progress
from pytest_agentbench.report.document import build_result_document
from pytest_agentbench.report.text import render_text_report
from pytest_agentbench.run.artifacts import PrivateDaemon, RunArtifacts, new_run_dir
from pytest_agentbench.run.execute import measure_run
from pytest_agentbench.run.fingerprints import UNKNOWN, suite_digest
from pytest_agentbench.run.record import Run, audit_inputs
from pytest_agentbench.run.relaylog import read_relay_log
from pytest_agentbench.run.server_build import agent_cli_version
from pytest_agentbench.run.stream import read_arrivals
from pytest_agentbench.session import RESULT_PROPERTY, session_key

if TYPE_CHECKING:
    from pytest_agentbench.device.pool import ClaimedDevice
    from pytest_agentbench.plugin import SuiteItem

_session_cache_key = pytest.StashKey[dict]()

#: The numeric metrics each report carries as JUnit properties.
PROPERTY_METRICS = ("toolCalls", "deviceAwareCalls", "turns", "inputTokens", "outputTokens", "costUsd", "wallClockSeconds", "stumbles")


def session_cache(config: pytest.Config) -> dict:
    """A dict that lives as long as the pytest session, for what is computed once per session."""
    if _session_cache_key not in config.stash:
        config.stash[_session_cache_key] = {}
    return config.stash[_session_cache_key]


def run_suite_item(item: SuiteItem) -> None:
    """The `runtest` of a suite item: every attempt from preflight to the pytest outcome.

    With `--agentbench-record-baseline` the suite runs up to three times until a clean pass
    writes its snippet (and, with `--agentbench-update-suites`, puts it into the suite file).
    """
    device: ClaimedDevice = item.funcargs["agentbench_device"]
    run_dir: Path = item.funcargs["agentbench_run_dir"]
    daemon: PrivateDaemon = item.funcargs["agentbench_private_daemon"]
    session = item.agentbench
    options = session.options
    attempts = attempts_for(options)
    for attempt in range(1, attempts + 1):
        if attempt > 1:
            run_dir = new_run_dir(run_dir.parent.parent, item.suite.name)
            daemon = PrivateDaemon(run_dir, session.profile.private_dirs(run_dir)).create()
        item.user_properties.append(("agentbench_run_dir", str(run_dir)))
        run = measure_run(
            suite=item.suite, device=device, run_dir=run_dir, daemon=daemon,
            preflight=item.funcargs["agentbench_preflight"], options=options, profile=session.profile,
            cache=session_cache(item.config), environ=device.environ(os.environ), project_root=item.config.rootpath,
            nodeid=item.nodeid, progress=live_progress(item),
        )
        result, transcript = conclude(item.config, run, result_path=RunArtifacts(run_dir).result)
        if not options.record_baseline or result["snippet"]["written"]:
            break
    if options.record_baseline:
        item.add_report_section("call", "agentbench baseline", record_baseline(item, result, attempt))
    publish_outcome(item, result, transcript)


def conclude(config: pytest.Config, run: Run, *, result_path: Path, saved: dict[str, Any] | None = None) -> tuple[dict[str, Any], Transcript]:
    """Audit a run and write its result document.

    Args:
        config: The pytest config (options and the session cache).
        run: The run record, live or rebuilt from a saved run.
        result_path: Where the result document goes.
        saved: For a re-render, the saved result.json: its fingerprints and snippet outcome are
            kept (nothing is measured again), while the verdict, checks, stumbles and metrics
            are computed afresh by today's scoring code.

    Returns:
        The result document and the parsed transcript.
    """
    session = config.stash[session_key]
    clock = time.monotonic()
    transcript = parse_file(run.transcript_path, watch=watched_patterns(run.suite))
    relay = read_relay_log(run.relay_log_path) if run.relay_log_path is not None else None
    audit = audit_run(run, transcript, relay)
    split = time_split(
        transcript.timeline, read_arrivals(run.timing_path), wall_clock_seconds=run.process.wall_clock_seconds,
        tool_names={call.id: call.name for call in transcript.tool_calls},
    )
    timing = {
        "agent": split.as_dict() if split is not None else None,
        # A re-rendered run keeps the harness times it recorded, its audit's included.
        "harness": {"auditSeconds": round(time.monotonic() - clock, 3), **run.harness_seconds},
    }
    environ = dict(os.environ)
    if saved is None:
        fingerprints = _fingerprints(session, run, transcript)
        snippet_path, blockers = _write_snippet(run, audit, fingerprints)
        scoring = scoring_code_digest()
    else:
        fingerprints = {key: value for key, value in (saved.get("fingerprints") or {}).items() if key != "serverBuildComponents"}
        snippet = saved.get("snippet") or {}
        snippet_path, blockers = snippet.get("path"), tuple(snippet.get("suppressedBecause") or ())
        scoring = saved.get("scoringCode") or UNKNOWN
    suite = run.suite
    result = build_result_document(
        suite_name=suite.name, suite_file=str(suite.path), run_dir=str(run.run_dir), audit=audit,
        fingerprints=fingerprints, scoring_code=scoring, nodeid=run.nodeid,
        started_at=run.started_at, finished_at=run.finished_at, device_serial=run.device_serial,
        agent_command=run.agent_command, requested_model=run.requested_model,
        server_build_components=run.server_build_components, baseline=suite.baseline,
        baseline_tool_sequence=suite.baseline_tool_sequence, snippet_path=snippet_path,
        snippet_blockers=blockers, audit_inputs=audit_inputs(run),
        preflight_round_trips=run.preflight_round_trips, environ=environ, cleanup=run.cleanup, timing=timing,
        instance=suite.instance.to_json() if suite.instance is not None else None, sandbox=run.sandbox,
    )
    if saved is not None:
        result["rerendered"] = {"scoringCode": scoring_code_digest(), "verdictWhenRecorded": saved.get("verdict")}
    result_path.parent.mkdir(parents=True, exist_ok=True)
    result_path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return result, transcript


def _fingerprints(session: Any, run: Run, transcript: Transcript) -> dict[str, Any]:
    cli_version = agent_cli_version(
        transcript.init.claude_code_version if transcript.init is not None else None,
        session.options.claude, session_cache(session.config),
    )
    return {
        "appBuild": dict(run.app_build),
        # The declaration, not the instance's values: seeded instances of a suite share one digest.
        "suiteDigest": suite_digest(run.suite.declared.raw, prompt_text=run.suite.declared.prompt_text, model_override=session.options.model),
        "deviceFingerprint": dict(run.device_fingerprint),
        "claudeCodeVersion": cli_version,
        "serverBuild": run.server_build or UNKNOWN,
        "observedModel": transcript.observed_model or UNKNOWN,
    }


def _write_snippet(run: Run, audit: Audit, fingerprints: dict[str, Any]) -> tuple[str | None, tuple[str, ...]]:
    """baseline.yml when the seed's rules allow it; else why not."""
    blockers = snippet_blockers(
        verdict_status=audit.verdict.status, stumble_count=len(audit.stumbles),
        clear_app_data=run.suite.preflight.clear_app_data, device_fingerprint=run.device_fingerprint,
        app_build=run.app_build, claude_code_version=fingerprints["claudeCodeVersion"],
        observed_model=fingerprints["observedModel"],
    )
    if blockers:
        return None, blockers
    block = build_baseline_block(
        recorded_at=run.finished_at or "", metrics=audit.metrics, app_build=run.app_build,
        suite_digest=fingerprints["suiteDigest"], device_fingerprint=run.device_fingerprint,
        claude_code_version=fingerprints["claudeCodeVersion"], server_build=fingerprints["serverBuild"],
        observed_model=fingerprints["observedModel"],
    )
    path = RunArtifacts(run.run_dir).snippet
    path.write_text(render_snippet(block, audit.tool_sequence, suite_name=run.suite.name, run_dir=str(run.run_dir)), encoding="utf-8")
    return str(path), ()


def record_baseline(item: SuiteItem, result: dict[str, Any], attempts: int) -> str:
    """After recording attempts: where the snippet is, and whether the suite file was updated."""
    if not result["snippet"]["written"]:
        return (
            f"no clean pass in {attempts} attempt(s): the suite keeps no new baseline block "
            f"(last run: {'; '.join(result['snippet']['suppressedBecause'])})"
        )
    snippet = Path(result["snippet"]["path"])
    if not item.agentbench.options.update_suites:
        return f"recorded in {attempts} attempt(s): paste {snippet} into {item.suite.path}"
    block = yaml.safe_load(snippet.read_text(encoding="utf-8"))
    text = insert_baseline(item.suite.path.read_text(encoding="utf-8"), block["baseline"], block["baselineToolSequence"])
    item.suite.path.write_text(text, encoding="utf-8")
    return f"recorded in {attempts} attempt(s) and written into {item.suite.path} (from {snippet})"


def publish_outcome(item: pytest.Item, result: dict[str, Any], transcript: Transcript | None, *, result_path: Path | None = None) -> None:
    """Result -> JUnit properties, report sections, and the pytest outcome (pass, fail, xfail)."""
    metrics = result.get("metrics") or {}
    verdict = result.get("verdict") or {}
    status = verdict.get("status", "incomplete")
    item.user_properties.append(("agentbench_verdict", status))
    for name in PROPERTY_METRICS:
        if metrics.get(name) is not None:
            item.user_properties.append((f"agentbench_{name}", str(metrics[name])))
    for check in result.get("checks") or []:
        # Device checks reach JUnit one property each: pass or fail, what was expected, what was seen.
        if check.get("kind") not in ("answer", "screen", "device-use", "no-shell") and check.get("name"):
            state = "passed" if check.get("passed") else "failed"
            item.user_properties.append((f"agentbench_check_{check['name']}",
                                         f"{state}: expected {check.get('expected')}; seen {check.get('seen')}"))
    for left in (result.get("cleanup") or {}).get("left") or []:
        item.user_properties.append(("agentbench_cleanup_left", left))
    path = result_path or Path(result["runDirectory"]) / "result.json"
    item.user_properties.append((RESULT_PROPERTY, str(path)))
    text = render_text_report(result, current_scoring_code=scoring_code_digest())
    item.add_report_section("call", "agentbench report", text)
    if transcript is not None and transcript.tool_calls:
        item.add_report_section("call", "agent transcript", transcript_tail(transcript))
    reasons = "; ".join(verdict.get("reasons") or ()) or "no reason recorded"
    if status == "passed":
        return
    if status == "failed":
        raise VerdictFailed(verdict, f"failed: {reasons}\n\n{text}")
    pytest.xfail(f"incomplete: {reasons}")


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
