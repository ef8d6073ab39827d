"""A suite item with its fixtures -> one measured run: preflight, isolated agent, post-run dump, audit, artifacts, outcome."""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import pytest
import yaml

from pytest_agentbench import baseline as baselines
from pytest_agentbench import report
from pytest_agentbench.audit import (
    Audit,
    ProcessOutcome,
    ScreenSnapshot,
    Verdict,
    audit_run,
)
from pytest_agentbench.errors import (
    AgentbenchError,
    DeviceError,
    DeviceLost,
    DeviceUnavailable,
    VerdictFailed,
)
from pytest_agentbench.fingerprint import UNKNOWN
from pytest_agentbench.fixtures import PrivateDaemon, new_run_dir
from pytest_agentbench.invocation import Invocation, build_invocation
from pytest_agentbench.options import RECORDING_ATTEMPTS
from pytest_agentbench.preflight import PreflightResult, dump_screen
from pytest_agentbench.redact import mask_secrets
from pytest_agentbench.runner import run_agent
from pytest_agentbench.screen import parse_hierarchy
from pytest_agentbench.server_build import (
    ServerBuild,
    scoring_code_digest,
    server_build_fingerprint,
)
from pytest_agentbench.servers.probe import probe_device_aware_tools
from pytest_agentbench.session import RESULT_PROPERTY
from pytest_agentbench.transcript import Transcript, parse_file

if TYPE_CHECKING:
    from pytest_agentbench.fixtures import ClaimedDevice
    from pytest_agentbench.plugin import SuiteItem
    from pytest_agentbench.session import AgentbenchSession
    from pytest_agentbench.suite import Suite

_session_cache_key = pytest.StashKey[dict]()


@dataclass(frozen=True)
class RunArtifacts:
    """Paths of one run's files, named as in the seed's artifact table."""

    run_dir: Path

    @property
    def prompt(self) -> Path:
        return self.run_dir / "prompt.md"

    @property
    def mcp_config(self) -> Path:
        return self.run_dir / "mcp-config.json"

    @property
    def command(self) -> Path:
        return self.run_dir / "claude-command.json"

    @property
    def transcript(self) -> Path:
        return self.run_dir / "claude.jsonl"

    @property
    def stderr(self) -> Path:
        return self.run_dir / "claude.stderr"

    @property
    def screen(self) -> Path:
        return self.run_dir / "screen.xml"

    @property
    def result(self) -> Path:
        return self.run_dir / "result.json"

    @property
    def snippet(self) -> Path:
        return self.run_dir / "baseline.yml"


def _cache(config: pytest.Config) -> dict:
    if _session_cache_key not in config.stash:
        config.stash[_session_cache_key] = {}
    return config.stash[_session_cache_key]


def device_aware_tools(config: pytest.Config, invocation: Invocation, environ: Mapping[str, str]) -> tuple[frozenset[str], str | None]:
    """The server's device-aware tools, from its own `tools/list`, fetched once per session.

    A server that cannot list its tools (its command is missing, it crashes at start) yields no
    device-aware tools and the reason, and the run goes on: the agent's init event then reports
    the server `failed`, which makes the run incomplete ("MCP server did not connect"), as the
    seed says. The failure is not cached, so a later run in the session probes again.
    """
    cache = _cache(config)
    ((name, _),) = invocation.mcp_config["mcpServers"].items()
    key = ("tools", name)
    if key not in cache:
        try:
            cache[key] = probe_device_aware_tools(invocation.mcp_config, environ=environ)
        except AgentbenchError as exc:
            return frozenset(), str(exc)
    return cache[key], None


def adb_client_versions(environ: Mapping[str, str]) -> dict[str, str]:
    """`adb version` of every adb client the MCP server might run: PATH's and the SDK's."""
    candidates = {"path": shutil.which("adb", path=environ.get("PATH"))}
    for variable in ("ANDROID_HOME", "ANDROID_SDK_ROOT"):
        if environ.get(variable):
            candidates[variable] = str(Path(environ[variable]) / "platform-tools" / "adb")
    versions = {}
    for label, path in candidates.items():
        if not path or not os.access(path, os.X_OK):
            versions[label] = UNKNOWN if label == "path" else "absent"
            continue
        try:
            done = subprocess.run([path, "version"], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
            versions[label] = done.stdout
        except (OSError, subprocess.TimeoutExpired):
            versions[label] = UNKNOWN
    return versions


def server_build(session: AgentbenchSession, environ: Mapping[str, str], adb_endpoint: str) -> ServerBuild:
    """`serverBuild` for this session (computed once: it hashes files and runs `adb version`)."""
    cache = _cache(session.config)
    if "server_build" not in cache:
        files = [Path(p) for pattern in session.profile.build_files for p in sorted(glob.glob(pattern, recursive=True))]
        cache["server_build"] = server_build_fingerprint(
            profile_build_files=files,
            agent_command=session.options.claude,
            environ=environ,
            adb_endpoint=adb_endpoint,
            adb_versions=adb_client_versions(environ),
            project_root=session.config.rootpath,
        )
    return cache["server_build"]


def agent_cli_version(config: pytest.Config, transcript: Transcript, claude: str) -> str:
    """The CLI version from the stream's init event; `--version` only when the stream names none."""
    if transcript.init is not None and transcript.init.claude_code_version:
        return transcript.init.claude_code_version
    cache = _cache(config)
    if ("version", claude) not in cache:
        try:
            done = subprocess.run([claude, "--version"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
            match = re.match(r"\s*(\S+)", done.stdout) if done.returncode == 0 else None
            cache[("version", claude)] = match.group(1) if match else UNKNOWN
        except (OSError, subprocess.TimeoutExpired):
            cache[("version", claude)] = UNKNOWN
    return cache[("version", claude)]


# ----------------------------------------------------------------------------- the run


def write_run_files(artifacts: RunArtifacts, invocation: Invocation) -> None:
    """prompt.md, mcp-config.json and claude-command.json, before the agent starts."""
    artifacts.prompt.write_text(invocation.prompt, encoding="utf-8")
    artifacts.mcp_config.write_text(json.dumps(invocation.mcp_config, indent=2) + "\n", encoding="utf-8")
    command = {
        "argv": invocation.argv,
        "cwd": str(invocation.workdir),
        "envRemoved": list(invocation.env_removed),
        "envSet": mask_secrets(invocation.env_set),
    }
    artifacts.command.write_text(json.dumps(command, indent=2) + "\n", encoding="utf-8")


def read_post_run_screen(device: ClaimedDevice, suite: Suite, artifacts: RunArtifacts) -> tuple[ScreenSnapshot | None, str | None]:
    """Take the claim back and dump the screen (suites with screen checks only).

    Returns:
        The snapshot (None when the suite has no screen checks) and, when the device went
        away, why (the run is then incomplete).
    """
    reclaim = device.take_back()
    if not suite.verify.screen_includes:
        return None, None
    if not reclaim.screen_readable:
        return ScreenSnapshot(None, reclaim.reason), None
    try:
        xml = dump_screen(device.adb, device.serial)
    except (DeviceLost, DeviceUnavailable) as lost:
        # The device was online through preflight; if the adb server can no longer reach it now
        # (gone, offline), it went away during the run: that is not the agent's failed check.
        return ScreenSnapshot(None, f"the device went away: {lost}"), f"the device went away during the run: {lost}"
    except DeviceError as error:
        return ScreenSnapshot(None, f"the screen could not be dumped: {error}"), None
    artifacts.screen.write_text(xml, encoding="utf-8")
    return ScreenSnapshot(parse_hierarchy(xml)), None


def run_suite_item(item: SuiteItem) -> None:
    """The `runtest` of a suite item: everything from preflight to the pytest outcome.

    With `--agentbench-record-baseline` the suite runs up to three times until a clean pass
    writes its snippet (and, with `--agentbench-update-suites`, puts it into the suite file).
    """
    device: ClaimedDevice = item.funcargs["agentbench_device"]
    run_dir: Path = item.funcargs["agentbench_run_dir"]
    daemon: PrivateDaemon = item.funcargs["agentbench_private_daemon"]
    options = item.agentbench.options
    attempts = RECORDING_ATTEMPTS if options.record_baseline else 1
    for attempt in range(1, attempts + 1):
        if attempt > 1:
            run_dir = new_run_dir(run_dir.parent.parent, item.suite.name)
            daemon = PrivateDaemon(run_dir, item.agentbench.profile.private_dirs(run_dir))
            for path in daemon.dirs.values():
                path.mkdir(parents=True, exist_ok=True)
        item.user_properties.append(("agentbench_run_dir", str(run_dir)))
        result, transcript = execute_run(item, device, run_dir, daemon)
        if not options.record_baseline or result["snippet"]["written"]:
            break
    if options.record_baseline:
        item.add_report_section("call", "agentbench baseline", record_baseline(item, result, attempt))
    publish_outcome(item, result, transcript)


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
    text = baselines.insert_baseline(item.suite.path.read_text(encoding="utf-8"), block["baseline"], block["baselineToolSequence"])
    item.suite.path.write_text(text, encoding="utf-8")
    return f"recorded in {attempts} attempt(s) and written into {item.suite.path} (from {snippet})"


def execute_run(item: SuiteItem, device: ClaimedDevice, run_dir: Path, daemon: PrivateDaemon) -> tuple[dict[str, Any], Transcript]:
    """One attempt: preflight, the measured agent run, the post-run dump, audit and artifacts."""
    session = item.agentbench
    suite = item.suite
    artifacts = RunArtifacts(run_dir)
    environ = dict(os.environ)
    preflight = item.funcargs["agentbench_preflight"](suite, run_dir=run_dir)
    workdir = Path(tempfile.mkdtemp(prefix="agentbench-agent-"))
    try:
        invocation = build_invocation(
            suite, options=session.options, profile=session.profile, run_dir=run_dir,
            workdir=workdir, serial=device.serial, environ=environ, private_dirs=daemon.dirs,
        )
        write_run_files(artifacts, invocation)
        tools, probe_error = device_aware_tools(item.config, invocation, environ)
        device.hand_over()
        started_at = _now()
        agent = run_agent(
            invocation.argv, env=invocation.env, cwd=workdir, prompt=invocation.prompt,
            stdout_path=artifacts.transcript, stderr_path=artifacts.stderr,
            timeout_s=suite.claude.timeout_seconds,
        )
        finished_at = _now()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    screen, lost_reason = read_post_run_screen(device, suite, artifacts)
    transcript = parse_file(artifacts.transcript)
    process = ProcessOutcome(
        exit_code=agent.exit_code, timed_out=agent.timed_out, signal=agent.signal,
        wall_clock_seconds=agent.wall_clock_seconds,
    )
    audit = audit_run(suite=suite, transcript=transcript, process=process, screen=screen, device_aware_tools=tools)
    # Not the agent's doing: the device vanished, or the harness could not tell which tools act
    # on a device (so a failed device-use check proves nothing). Either leaves the run incomplete.
    unjudgeable = lost_reason or (
        audit.verdict.status == "failed" and probe_error
        and f"the harness could not list the MCP server's tools, so device use cannot be judged: {probe_error}"
    )
    if unjudgeable and audit.verdict.status != "incomplete":
        audit = dataclasses.replace(audit, verdict=Verdict("incomplete", (unjudgeable,)))
    result = record_result(
        item, audit=audit, transcript=transcript, process=process, preflight=preflight, device=device,
        invocation=invocation, artifacts=artifacts, environ=environ, started_at=started_at, finished_at=finished_at,
        device_aware=tools, screen=screen,
    )
    return result, transcript


def record_result(
    item: SuiteItem, *, audit: Audit, transcript: Transcript, process: ProcessOutcome, preflight: PreflightResult,
    device: ClaimedDevice, invocation: Invocation, artifacts: RunArtifacts, environ: Mapping[str, str],
    started_at: str, finished_at: str, device_aware: frozenset[str], screen: ScreenSnapshot | None,
) -> dict[str, Any]:
    """Fingerprints, the baseline comparison, baseline.yml when allowed, and result.json."""
    session = item.agentbench
    suite = item.suite
    build = server_build(session, environ, adb_endpoint=str(device.adb.endpoint))
    app_build = preflight.app_build
    observed_model = transcript.observed_model or UNKNOWN
    cli_version = agent_cli_version(item.config, transcript, session.options.claude)
    fingerprints = {
        "appBuild": app_build,
        "suiteDigest": baselines.suite_digest(suite.raw, prompt_text=suite.prompt_text, model_override=session.options.model),
        "deviceFingerprint": dict(device.fingerprint),
        "claudeCodeVersion": cli_version,
        "serverBuild": build.digest,
        "observedModel": observed_model,
    }
    blockers = baselines.snippet_blockers(
        verdict_status=audit.verdict.status, stumble_count=len(audit.stumbles),
        clear_app_data=suite.preflight.clear_app_data, device_fingerprint=device.fingerprint,
        app_build=app_build, claude_code_version=cli_version, observed_model=observed_model,
    )
    snippet_path = None
    if not blockers:
        block = baselines.build_baseline_block(
            recorded_at=finished_at, metrics=audit.metrics, app_build=app_build,
            suite_digest=fingerprints["suiteDigest"], device_fingerprint=device.fingerprint,
            claude_code_version=cli_version, server_build=build.digest, observed_model=observed_model,
        )
        text = baselines.render_snippet(block, audit.tool_sequence, suite_name=suite.name, run_dir=str(artifacts.run_dir))
        artifacts.snippet.write_text(text, encoding="utf-8")
        snippet_path = str(artifacts.snippet)
    result = report.build_result_document(
        suite_name=suite.name, suite_file=str(suite.path), run_dir=str(artifacts.run_dir), audit=audit,
        fingerprints=fingerprints, scoring_code=scoring_code_digest(), nodeid=item.nodeid,
        started_at=started_at, finished_at=finished_at, device_serial=device.serial,
        agent_command=invocation.argv, requested_model=baselines.requested_model(suite.raw, session.options.model),
        server_build_components=build.components, baseline=suite.baseline,
        baseline_tool_sequence=suite.baseline_tool_sequence, snippet_path=snippet_path,
        snippet_blockers=blockers, environ=environ,
    )
    # What a re-render (--agentbench-from-result) needs to audit the run again without a device.
    result["process"] = dataclasses.asdict(process)
    result["deviceAwareTools"] = sorted(device_aware)
    result["screen"] = {"unavailableReason": screen.unavailable_reason if screen is not None else None}
    result["preflight"] = {"roundTrips": preflight.round_trips, "appBuild": app_build}
    artifacts.result.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return result


def publish_outcome(item: pytest.Item, result: dict[str, Any], transcript: Transcript | None) -> None:
    """Result -> JUnit properties, report sections, and the pytest outcome (pass, fail, xfail)."""
    metrics = result.get("metrics") or {}
    verdict = result.get("verdict") or {}
    status = verdict.get("status", "incomplete")
    item.user_properties.append(("agentbench_verdict", status))
    for name in ("toolCalls", "deviceAwareCalls", "turns", "inputTokens", "outputTokens", "costUsd", "wallClockSeconds", "stumbles"):
        if metrics.get(name) is not None:
            item.user_properties.append((f"agentbench_{name}", str(metrics[name])))
    item.user_properties.append((RESULT_PROPERTY, str(Path(result["runDirectory"]) / "result.json")))
    text = report.render_text_report(result, current_scoring_code=scoring_code_digest())
    item.add_report_section("call", "agentbench report", text)
    if transcript is not None and transcript.tool_calls:
        item.add_report_section("call", "agent transcript", _transcript_tail(transcript))
    reasons = "; ".join(verdict.get("reasons") or ()) or "no reason recorded"
    if status == "passed":
        return
    if status == "failed":
        raise VerdictFailed(verdict, f"failed: {reasons}\n\n{text}")
    pytest.xfail(f"incomplete: {reasons}")


def _transcript_tail(transcript: Transcript, limit: int = 30) -> str:
    lines = []
    for call in transcript.tool_calls[-limit:]:
        shown = "(no result)" if call.result_text is None else " ".join(call.result_text.split())[:160]
        marker = "!" if call.is_error else " "
        lines.append(f"{marker} {call.name}({json.dumps(call.input, ensure_ascii=False)[:120]}) -> {shown}")
    if transcript.final_text:
        lines.append("final: " + " | ".join(transcript.final_text.strip().splitlines()[-4:]))
    return "\n".join(lines)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
