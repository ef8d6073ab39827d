"""A RunResult -> the pytest outcome: JUnit properties, report sections, pass / VerdictFailed / xfail; the suite item's attempts.

Live runs (`run_suite_item`) and re-rendered ones (`items.SavedRunItem`) both reach their
result through `pipeline.conclude`, so a saved run is judged by the same code path as a fresh one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_agentbench.errors import VerdictFailed
from pytest_agentbench.options import attempts_for
from pytest_agentbench.pipeline import ConcludeContext, conclude, report_text, write_baseline_into
from pytest_agentbench.progress import live_progress
from pytest_agentbench.records.result import RunResult
from pytest_agentbench.report.text import render_failure_report
from pytest_agentbench.run.execute import PrivateDaemon, measure_run, new_run_dir
from pytest_agentbench.session import RESULT_PROPERTY, session_key

if TYPE_CHECKING:
    from pytest_agentbench.device.pool import ClaimedDevice

_session_cache_key = pytest.StashKey[dict]()

#: The numeric metrics each report carries as JUnit properties.
PROPERTY_METRICS = ("toolCalls", "deviceAwareCalls", "turns", "inputTokens", "outputTokens", "costUsd", "wallClockSeconds", "stumbles")
#: Check kinds that are not device checks (those reach JUnit one property each).
_RUN_CHECK_KINDS = ("answer", "screen", "device-use", "no-shell", "completion")


def session_cache(config: pytest.Config) -> dict:
    """A dict that lives as long as the pytest session, for what is computed once per session."""
    if _session_cache_key not in config.stash:
        config.stash[_session_cache_key] = {}
    return config.stash[_session_cache_key]


def run_suite_item(item: pytest.Item) -> None:
    """The `runtest` of a suite item: every attempt from preflight to the pytest outcome.

    With `--agentbench-record-baseline` the suite runs up to three times until a clean pass
    writes its snippet (and, with `--agentbench-update-suites`, puts it into the suite file).
    """
    device: ClaimedDevice = item.funcargs["agentbench_device"]
    run_dir: Path = item.funcargs["agentbench_run_dir"]
    daemon: PrivateDaemon = item.funcargs["agentbench_private_daemon"]
    session = item.config.stash[session_key]
    suite = item.suite  # type: ignore[attr-defined]
    options = session.options
    attempts = attempts_for(options)
    for attempt in range(1, attempts + 1):
        if attempt > 1:
            run_dir = new_run_dir(run_dir.parent.parent, suite.name)
            daemon = PrivateDaemon(run_dir, session.profile.private_dirs(run_dir)).create()
        item.user_properties.append(("agentbench_run_dir", str(run_dir)))
        run = measure_run(
            suite=suite, device=device, run_dir=run_dir, daemon=daemon,
            options=options, profile=session.profile, cache=session_cache(item.config),
            environ=device.environ(os.environ), project_root=item.config.rootpath,
            nodeid=item.nodeid, progress=live_progress(item),
        )
        result = conclude(run, ConcludeContext(environ=dict(os.environ)))
        if not options.record_baseline or result.snippet.written:
            break
    if options.record_baseline:
        item.add_report_section("call", "agentbench baseline", record_baseline(item, result, attempt))
    publish_outcome(item, result)


def record_baseline(item: pytest.Item, result: RunResult, attempts: int) -> str:
    """After recording attempts: where the snippet is, and whether the suite file was updated."""
    if not result.snippet.written:
        return (
            f"no clean pass in {attempts} attempt(s): the suite keeps no new baseline block "
            f"(last run: {'; '.join(result.snippet.suppressed_because)})"
        )
    snippet = Path(result.snippet.path or "")
    suite = item.suite  # type: ignore[attr-defined]
    if not item.config.stash[session_key].options.update_suites:
        return f"recorded in {attempts} attempt(s): paste {snippet} into {suite.path}"
    write_baseline_into(suite.path, snippet)
    return f"recorded in {attempts} attempt(s) and written into {suite.path} (from {snippet})"


def publish_outcome(item: pytest.Item, result: RunResult, *, result_path: Path | None = None) -> None:
    """Result -> JUnit properties, report sections, and the pytest outcome (pass, fail, xfail)."""
    status = result.status
    item.user_properties.append(("agentbench_verdict", status))
    for name in PROPERTY_METRICS:
        if result.metrics.get(name) is not None:
            item.user_properties.append((f"agentbench_{name}", str(result.metrics[name])))
    for check in result.checks:
        # Device checks reach JUnit one property each: pass or fail, what was expected, what was seen.
        if check.kind not in _RUN_CHECK_KINDS and check.name:
            state = "passed" if check.passed else "failed"
            item.user_properties.append((f"agentbench_check_{check.name}", f"{state}: expected {check.expected}; seen {check.seen}"))
    for left in result.cleanup_report.left if result.cleanup_report is not None else ():
        item.user_properties.append(("agentbench_cleanup_left", left))
    path = result_path or result.run_dir / "result.json"
    item.user_properties.append((RESULT_PROPERTY, str(path)))
    text = report_text(result)
    # pytest's convention: the default verbosity shows a failure short; -v or --tb=long in full.
    full = item.config.get_verbosity() > 0 or item.config.option.tbstyle == "long"
    if status != "failed":
        # A failed run's report is its failure text (printed once, shortened by --tb); the others
        # keep it as a section, shown with -rA like any passing test's output.
        item.add_report_section("call", "agentbench report", text)
    if result.transcript_tail and (status != "failed" or full):
        item.add_report_section("call", "agent transcript", result.transcript_tail)
    reasons = "; ".join(result.verdict.reasons) or "no reason recorded"
    if status == "passed":
        return
    if status == "failed":
        shown = text if full else render_failure_report(result)
        raise VerdictFailed(result.verdict.to_json(), f"failed: {reasons}\n\n{shown}")
    pytest.xfail(f"incomplete: {reasons}")
