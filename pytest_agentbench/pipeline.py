"""A finished Run -> its RunResult: parse the transcript, audit it, compare it with the baseline, decide the snippet, write result.json.

The one path from a run to its result, for live runs and re-rendered ones alike; nothing here
knows pytest, so the same pipeline serves the plugin, a Python test and a script. It is also the
pytest glue's one way into the audit and the baseline (tests/test_layers.py): re-rendering a saved
run, the text report, writing a baseline into a suite, judging a prove scenario.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from pytest_agentbench.audit.prove import Judgement, Scenario, judge
from pytest_agentbench.audit.prove import ProveStep, scenarios_of  # noqa: F401 (the glue's prove items)
from pytest_agentbench.audit.scoring import scoring_code_digest
from pytest_agentbench.audit.timing import time_split
from pytest_agentbench.audit.transcript import Transcript, parse_file
from pytest_agentbench.audit.verdict import audit_run, episode_ending, state_checks, watched_patterns
from pytest_agentbench.baseline.compare import compare
from pytest_agentbench.baseline.fingerprints import UNKNOWN
from pytest_agentbench.baseline.snippet import build_baseline_block, insert_baseline, render_snippet, snippet_blockers
from pytest_agentbench.checks.base import DeviceReads
from pytest_agentbench.records.audit import Audit, Check
from pytest_agentbench.records.comparison import Snippet
from pytest_agentbench.records.result import Fingerprints, Rerendered, RunResult
from pytest_agentbench.records.run import AuditInputs, Run
from pytest_agentbench.report.document import scrub
from pytest_agentbench.report.text import render_text_report, transcript_tail
from pytest_agentbench.run.artifacts import RunArtifacts, new_run_dir
from pytest_agentbench.run.postrun import PostRunState
from pytest_agentbench.run.bridgelog import read_bridge_log
from pytest_agentbench.run.relaylog import read_relay_log
from pytest_agentbench.run.saved import load_run
from pytest_agentbench.run.saved import resolve_result_paths  # noqa: F401 (--agentbench-from-result's collection)
from pytest_agentbench.run.seal import seal
from pytest_agentbench.run.stream import read_arrivals
from pytest_agentbench.suite import Suite


@dataclass(frozen=True)
class ConcludeContext:
    """What concluding a run needs besides the run itself.

    Attributes:
        environ: The run's environment, only to mask secrets that leaked into evidence text.
    """

    environ: Mapping[str, str] = field(default_factory=dict)


def conclude(run: Run, context: ConcludeContext, saved: RunResult | None = None, *, result_path: Path | None = None) -> RunResult:
    """Audit a run, compare it with its baseline and write its result.json.

    Args:
        run: The complete run record, live (`run.execute.measure_run`) or rebuilt from a saved
            run (`run.saved.load_run`).
        context: The environment to scrub secrets with.
        saved: For a re-render, the saved result: its fingerprints, scoring code and snippet
            outcome are kept (nothing is measured again), while the verdict, checks, stumbles
            and metrics are computed afresh by today's scoring code.
        result_path: Where result.json goes (default: the run directory's).

    Returns:
        The result as written (secrets scrubbed), with the transcript's tail for a failure report.
    """
    clock = time.monotonic()
    if saved is None:
        run, seals = _sealed(run)
    else:
        seals = dict(saved.seals)
    transcript = parse_file(run.transcript_path, watch=watched_patterns(run.suite))
    relay = read_relay_log(run.relay_log_path) if run.relay_log_path is not None else None
    bridge = read_bridge_log(run.bridge_log_path) if run.bridge_log_path is not None else None
    audit = audit_run(run, transcript, relay, bridge)
    split = time_split(
        transcript.timeline, read_arrivals(run.timing_path), wall_clock_seconds=run.process.wall_clock_seconds,
        tool_names={call.id: call.name for call in transcript.tool_calls}, reports=transcript.reports,
    )
    timing = {
        "agent": split.as_dict() if split is not None else None,
        # A re-rendered run keeps the harness times it recorded, its audit's included.
        "harness": {"auditSeconds": round(time.monotonic() - clock, 3), **run.harness_seconds},
    }
    if saved is None:
        fingerprints = measured_fingerprints(run, transcript)
        snippet = _write_snippet(run, audit, fingerprints)
        scoring, rerendered = scoring_code_digest(), None
    else:
        fingerprints, snippet, scoring = saved.fingerprints, saved.snippet, saved.scoring_code
        rerendered = Rerendered(scoring_code_digest(), saved.verdict.to_json())
    suite = run.suite
    result = RunResult(
        suite=suite.name, suite_file=str(suite.path), run_directory=str(run.run_dir), nodeid=run.nodeid,
        instance=suite.instance.to_json() if suite.instance is not None else None,
        started_at=run.started_at, finished_at=run.finished_at, device_serial=run.device_serial,
        agent_command=tuple(run.agent_command), requested_model=run.requested_model,
        episode_ending=ending[0] if (ending := episode_ending(transcript)) is not None else None,
        verdict=audit.verdict, checks=audit.checks, stumbles=audit.stumbles, metrics=audit.metrics_json(),
        tool_sequence=audit.tool_sequence,
        baseline=dict(suite.baseline) if suite.baseline else None, baseline_tool_sequence=tuple(suite.baseline_tool_sequence),
        comparison=compare(suite.baseline, suite.baseline_tool_sequence, audit.metrics, audit.tool_sequence, fingerprints.comparable()),
        fingerprints=fingerprints, snippet=snippet, scoring_code=scoring, audit_inputs=AuditInputs.of(run), seals=seals,
        preflight_round_trips=run.preflight_round_trips, cleanup=run.cleanup, timing=timing, rerendered=rerendered,
        sandbox=run.sandbox, demo=suite.declared.demo,
    )
    # Evidence text (the reply, tool results) may echo a secret: the written result never holds one.
    result = RunResult.from_json(scrub(result.to_json(), context.environ))
    result.write(result_path or RunArtifacts(run.run_dir).result)
    return result.with_tail(transcript_tail(transcript) if transcript.tool_calls else None)


def _sealed(run: Run) -> tuple[Run, dict[str, str]]:
    """A live run's seals: the before-snapshot as sealed before the agent, everything else as it is now.

    A before-snapshot file that changed while the agent ran is a seal problem of the run itself.
    """
    now = seal(run.run_dir)
    changed = [f"{name} changed while the agent ran" for name, digest in sorted(run.sealed_before_agent.items())
               if now.get(name) != digest]
    seals = {**now, **run.sealed_before_agent}
    return (replace(run, seal_problems=(*run.seal_problems, *changed)) if changed else run), dict(sorted(seals.items()))


def measured_fingerprints(run: Run, transcript: Transcript) -> Fingerprints:
    """This run's fingerprints: what the run measured, plus the CLI version and model the stream names."""
    stream_version = transcript.init.claude_code_version if transcript.init is not None else None
    return Fingerprints(
        {
            "appBuild": dict(run.app_build),
            "suiteDigest": run.suite_digest or UNKNOWN,
            "deviceFingerprint": dict(run.device_fingerprint),
            "claudeCodeVersion": stream_version or run.cli_version or UNKNOWN,
            "serverBuild": run.server_build or UNKNOWN,
            "observedModel": transcript.observed_model or UNKNOWN,
        },
        dict(run.server_build_components),
    )


def _write_snippet(run: Run, audit: Audit, fingerprints: Fingerprints) -> Snippet:
    """baseline.yml when the seed's rules allow it; else why not."""
    values = fingerprints.values
    blockers = snippet_blockers(
        verdict_status=audit.verdict.status, stumble_count=len(audit.stumbles),
        clear_app_data=run.suite.preflight.clear_app_data, device_fingerprint=run.device_fingerprint,
        app_build=run.app_build, claude_code_version=values["claudeCodeVersion"],
        observed_model=values["observedModel"],
    )
    if blockers:
        return Snippet(None, tuple(blockers))
    block = build_baseline_block(
        recorded_at=run.finished_at or "", metrics=audit.metrics, app_build=run.app_build,
        suite_digest=values["suiteDigest"], device_fingerprint=run.device_fingerprint,
        claude_code_version=values["claudeCodeVersion"], server_build=values["serverBuild"],
        observed_model=values["observedModel"],
    )
    path = RunArtifacts(run.run_dir).snippet
    path.write_text(render_snippet(block, audit.tool_sequence, suite_name=run.suite.name, run_dir=str(run.run_dir)), encoding="utf-8")
    return Snippet(str(path))


def rerender(result_path: Path, root: Path, output: Path, context: ConcludeContext) -> tuple[RunResult, Path]:
    """A saved run, audited again by today's code: its RunResult and the new result.json under `output`.

    The saved run directory is only read (see `run.saved.load_run`).
    """
    run, saved = load_run(result_path, root)
    new_result_path = new_run_dir(output, run.suite.name) / "result.json"
    return conclude(run, context, saved, result_path=new_result_path), new_result_path


def report_text(result: RunResult) -> str:
    """The run's text report, noting a scoring code that differs from today's."""
    return render_text_report(result, current_scoring_code=scoring_code_digest())


def write_baseline_into(suite_path: Path, snippet_path: Path) -> None:
    """Put a written baseline.yml's block into the suite file (`--agentbench-update-suites`)."""
    block = yaml.safe_load(snippet_path.read_text(encoding="utf-8"))
    text = insert_baseline(suite_path.read_text(encoding="utf-8"), block["baseline"], block["baselineToolSequence"])
    suite_path.write_text(text, encoding="utf-8")


def judge_proof(suite: Suite, scenario: Scenario, state: PostRunState, device_before: DeviceReads | None,
                answer: str | None, cleanup: Mapping[str, Any] | None) -> tuple[list[Check], Judgement]:
    """A played prove scenario's post-run state -> the suite's checks on it and the scenario's judgement."""
    checks = state_checks(suite, state.screen, state.device_state(device_before), answer)
    return checks, judge(scenario, checks, cleanup)
