"""A saved run directory -> its audit redone by today's scoring code, as a pytest item, without running anything."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench import report
from pytest_agentbench.audit import ProcessOutcome, ScreenSnapshot, audit_run
from pytest_agentbench.errors import AgentbenchError
from pytest_agentbench.server_build import scoring_code_digest
from pytest_agentbench.screen import parse_hierarchy
from pytest_agentbench.session import session_key
from pytest_agentbench.suite import load_suite
from pytest_agentbench.transcript import Transcript, parse_file


class SavedRunError(AgentbenchError):
    """A saved run cannot be re-rendered: its result.json or suite is missing or unreadable."""


def resolve_result_path(path: Path) -> Path:
    """A run directory or a result.json -> the result.json path.

    Raises:
        SavedRunError: Neither exists.
    """
    candidate = path / "result.json" if path.is_dir() else path
    if not candidate.is_file():
        raise SavedRunError(f"{path}: no result.json here; pass a run directory or its result.json")
    return candidate


def reaudit(saved: dict[str, Any], run_dir: Path, rootdir: Path, environ: dict[str, str]) -> tuple[dict[str, Any], Transcript]:
    """Audit a saved run again from its transcript and screen dump with the current scoring code.

    The fingerprints, baseline comparison inputs and snippet outcome are the saved ones; the
    verdict, checks, stumbles and metrics are computed afresh, so a change in scoring shows.

    Args:
        saved: The run's result.json.
        run_dir: Its directory (the transcript and screen.xml are read from here).
        rootdir: The pytest rootdir (suites are loaded relative to it).
        environ: Used only to mask secrets in evidence text.

    Returns:
        The re-rendered result document and the parsed transcript.

    Raises:
        SavedRunError: The suite file no longer loads, or result.json lacks what a re-audit needs.
    """
    try:
        suite = load_suite(Path(saved["suiteFile"]), rootdir)
    except KeyError:
        raise SavedRunError(f"{run_dir}/result.json names no suiteFile") from None
    except AgentbenchError as exc:
        raise SavedRunError(f"the suite of {run_dir} no longer loads: {exc}") from None
    transcript = parse_file(run_dir / "claude.jsonl")
    process_data = saved.get("process") or {}
    process = ProcessOutcome(
        exit_code=process_data.get("exit_code"),
        timed_out=bool(process_data.get("timed_out")),
        signal=process_data.get("signal"),
        wall_clock_seconds=float(process_data.get("wall_clock_seconds") or 0.0),
    )
    screen = _saved_screen(run_dir, saved, bool(suite.verify.screen_includes))
    audit = audit_run(
        suite=suite, transcript=transcript, process=process, screen=screen,
        device_aware_tools=frozenset(saved.get("deviceAwareTools") or ()),
    )
    fingerprints = {key: value for key, value in (saved.get("fingerprints") or {}).items() if key != "serverBuildComponents"}
    snippet = saved.get("snippet") or {}
    result = report.build_result_document(
        suite_name=suite.name, suite_file=str(suite.path), run_dir=str(run_dir), audit=audit,
        fingerprints=fingerprints, scoring_code=saved.get("scoringCode") or "unknown", nodeid=saved.get("nodeid"),
        started_at=saved.get("startedAt"), finished_at=saved.get("finishedAt"),
        device_serial=(saved.get("device") or {}).get("serial"), agent_command=(saved.get("agent") or {}).get("command") or (),
        requested_model=(saved.get("agent") or {}).get("requestedModel"),
        server_build_components=(saved.get("fingerprints") or {}).get("serverBuildComponents"),
        baseline=suite.baseline, baseline_tool_sequence=suite.baseline_tool_sequence,
        snippet_path=snippet.get("path"), snippet_blockers=snippet.get("suppressedBecause") or (), environ=environ,
    )
    for key in ("process", "deviceAwareTools", "screen", "preflight"):
        if key in saved:
            result[key] = saved[key]
    result["rerendered"] = {"scoringCode": scoring_code_digest(), "verdictWhenRecorded": saved.get("verdict")}
    return result, transcript


def _saved_screen(run_dir: Path, saved: dict[str, Any], has_screen_checks: bool) -> ScreenSnapshot | None:
    if not has_screen_checks:
        return None
    dump = run_dir / "screen.xml"
    if dump.is_file():
        try:
            return ScreenSnapshot(parse_hierarchy(dump.read_text(encoding="utf-8")))
        except ValueError as exc:
            return ScreenSnapshot(None, f"the saved screen.xml does not parse: {exc}")
    reason = (saved.get("screen") or {}).get("unavailableReason")
    return ScreenSnapshot(None, reason or "the run directory has no screen.xml")


class SavedRunItem(pytest.Item):
    """An earlier run, re-audited and re-reported as a test item (`--agentbench-from-result`)."""

    def __init__(self, *, result_path: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.result_path = result_path
        self.add_marker(pytest.mark.agentbench)

    def runtest(self) -> None:
        from pytest_agentbench.run import publish_outcome

        try:
            saved = json.loads(self.result_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SavedRunError(f"{self.result_path}: cannot read result.json: {exc}") from None
        result, transcript = reaudit(saved, self.result_path.parent, self.config.rootpath, dict(os.environ))
        self.config.stash[session_key].unsaved_results[self.nodeid] = result
        self.user_properties.append(("agentbench_run_dir", str(self.result_path.parent)))
        publish_outcome(self, result, transcript)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, AgentbenchError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.result_path, 0, f"saved run: {self.result_path.parent.name}"


def collect_saved_runs(session: pytest.Session, paths: tuple[Path, ...]) -> list[pytest.Item]:
    """One SavedRunItem per `--agentbench-from-result` path, named `<suite>[<run id>]`.

    Raises:
        pytest.UsageError: A path holds no result.json.
    """
    items = []
    for path in paths:
        try:
            result_path = resolve_result_path(path)
        except SavedRunError as exc:
            raise pytest.UsageError(f"--agentbench-from-result {exc}") from None
        name = f"{result_path.parent.parent.name}[{result_path.parent.name}]"
        items.append(SavedRunItem.from_parent(session, name=name, path=result_path, result_path=result_path))
    return items
