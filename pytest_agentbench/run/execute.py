"""A suite, a claimed device and its run directory -> one measured run: preflight, the isolated agent, the post-run reads -> a Run record.

Nothing here judges the run: `audit.verdict.audit_run` does, from the Run record this returns.
"""

from __future__ import annotations

import glob
import json
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentbench.baseline.fingerprints import requested_model, suite_digest
from pytest_agentbench.baseline.server_build import ServerBuild, adb_client_versions, agent_cli_version, server_build_fingerprint
from pytest_agentbench.errors import AgentbenchError, AgentProcessError, AgentStreamError
from pytest_agentbench.records.run import NEVER_STARTED, STREAM_UNWRITTEN, ProcessOutcome, Run
from pytest_agentbench.run.artifacts import PrivateDaemon, RunArtifacts, agent_workdir_parent, write_run_files
from pytest_agentbench.run.cleanup import run_cleanup
from pytest_agentbench.run.confine import AgentConfinement, SandboxMode
from pytest_agentbench.run.invocation import Invocation, InvocationOptions, build_invocation
from pytest_agentbench.run.postrun import PostRunState, read_post_run_state, stop_run_daemons
from pytest_agentbench.run.preflight import preflight_suite
from pytest_agentbench.run.relay_hub import RELAY_LOG_NAME, RelayHub, ServerLaunch
from pytest_agentbench.run.runner import StreamProgress, run_agent
from pytest_agentbench.run.seal import seal
from pytest_agentbench.servers.probe import ToolClasses, probe_tools
from pytest_agentbench.suite import checks_of_suite

# The pytest glue reaches the run stage only through this module (tests/test_layers.py): besides
# measure_run and finish_device_work, these are the parts of a run it sets up or shows itself.
from pytest_agentbench.run import shutdown  # noqa: F401 (the glue's signal handling)
from pytest_agentbench.run.artifacts import new_run_dir  # noqa: F401 (the run directory fixture)
from pytest_agentbench.run.confine import deferred_mode, resolve_mode  # noqa: F401 (--agentbench-sandbox)
from pytest_agentbench.run.dryrun import SECTION as DRY_RUN_SECTION  # noqa: F401
from pytest_agentbench.run.dryrun import current_environ, dry_run_text  # noqa: F401 (--agentbench-dry-run)
from pytest_agentbench.run.preflight import DEVICE_STAGING_DIR, PreflightResult, run_preflight  # noqa: F401
from pytest_agentbench.run.sandbox_policy import agent_kind, unshowable_program  # noqa: F401 (usage checks: which agent, hidden programs)
from pytest_agentbench.run.sign_in import find_sign_in  # noqa: F401 (usage checks: a sign-in about to end)
from pytest_agentbench.run.seed import plan_seeds  # noqa: F401 (a prove scenario's seed step)

if TYPE_CHECKING:
    from pytest_agentbench.checks.base import DeviceReads
    from pytest_agentbench.device.pool import ClaimedDevice
    from pytest_agentbench.servers import ServerProfile
    from pytest_agentbench.suite import Suite


def server_tools(cache: dict, invocation: Invocation) -> tuple[ToolClasses, str | None]:
    """The server's device-aware and shell tools, from its own `tools/list`, fetched once per session.

    The probe starts the server with exactly the environment the run's server gets, so an
    inherited variable that changes the toolset (AUTOMOBILE_DISABLED_TOOLS) cannot make the two
    disagree. A server that cannot list its tools (its command is missing, it crashes at start)
    yields no tools and the reason, and the run goes on (its audit then says why); the failure is
    not cached, so a later run in the session probes again.
    """
    ((name, _),) = invocation.server_config["mcpServers"].items()
    key = ("tools", name)
    if key not in cache:
        try:
            cache[key] = probe_tools(invocation.server_config, environ=invocation.env)
        except AgentbenchError as exc:
            return ToolClasses(frozenset(), frozenset()), str(exc)
    return cache[key], None


def finish_device_work(device: ClaimedDevice, suite: Suite, artifacts: RunArtifacts,
                       before: DeviceReads | None, baseline: DeviceReads | None = None) -> tuple[PostRunState, dict | None]:
    """Post-run reads (screen + device checks, one round trip), then cleanup: what runs and prove items share.

    Args:
        device: The claimed device, its claim still with the agent's server (taken back here).
        suite: The suite.
        artifacts: The run's files.
        before: The before-snapshot reads from preflight (`PreflightResult.device_before`).
        baseline: The watched sources as preflight read them before its reset and seeds
            (`PreflightResult.device_baseline`): what cleanup puts back; `before` when None.

    Returns:
        The post-run state and the cleanup report (None when the suite has nothing to clean).
    """
    checks = checks_of_suite(suite)
    after_reads = checks.after_reads()
    state = read_post_run_state(device, suite, artifacts, after_reads)
    skip = state.device_unavailable if state.device_after is None and after_reads else None
    unfinished: list = []
    cleanup = run_cleanup(device.adb, device.serial, checks, before=baseline or before, after=state.device_after,
                          run_dir=artifacts.run_dir, skip_because=skip, unfinished=unfinished)
    # A leftover from one run never decides the next: its preflight retries these before its baseline read.
    leave = getattr(device, "leave_unfinished_cleanup", None)
    if leave is not None:
        leave(tuple(unfinished))
    return state, cleanup


def server_build(cache: dict, *, profile: ServerProfile, claude: str, environ: Mapping[str, str], adb_endpoint: str, project_root: Path,
                 sandbox: str | None = None, adb: Any = None) -> ServerBuild:
    """`serverBuild` for this session (computed once: it hashes files, runs `adb version` and asks the adb server its version)."""
    if "server_build" not in cache:
        server_version = None
        if adb is not None:
            try:
                server_version = f"protocol {adb.version()}"
            except Exception:  # noqa: BLE001 - a server that would not say is unknown, never a failed run
                server_version = "unknown"
        files = [Path(p) for pattern in profile.build_files for p in sorted(glob.glob(pattern, recursive=True))]
        cache["server_build"] = server_build_fingerprint(
            profile_build_files=files,
            agent_command=claude,
            environ=environ,
            adb_endpoint=adb_endpoint,
            adb_versions=adb_client_versions(environ),
            project_root=project_root,
            sandbox=sandbox,
            adb_server_version=server_version,
        )
    return cache["server_build"]


def now() -> str:
    """The current UTC time as result.json writes it."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def measure_run(
    *,
    suite: Suite,
    device: ClaimedDevice,
    run_dir: Path,
    daemon: PrivateDaemon,
    options: InvocationOptions,
    profile: ServerProfile,
    cache: dict,
    environ: Mapping[str, str],
    project_root: Path,
    nodeid: str | None = None,
    progress: Callable[[StreamProgress], None] | None = None,
) -> Run:
    """One attempt: preflight, the measured agent run, the post-run reads and the fingerprints -> a complete Run.

    Args:
        suite: The suite to run.
        device: The claimed device (its claim is handed to the agent's server and taken back).
        run_dir: This attempt's run directory.
        daemon: The MCP server's private state directories for this run.
        options: The session's options (`--claude`, `--model`, `--server-instructions`).
        profile: The MCP server profile.
        cache: A session-wide dict for what is computed once (tools listing, server build).
        environ: The environment the run inherits.
        project_root: The pytest rootdir (lock files for the server build).
        nodeid: The pytest node id, recorded.
        progress: Called while the agent runs with the stream so far (tool calls, seconds).

    Returns:
        The complete Run record, ready for `pipeline.conclude`.

    Raises:
        PreflightError, DeviceUnavailable: The device could not be put into the start state.
    """
    artifacts = RunArtifacts(run_dir)
    clock = time.monotonic()
    prepared = preflight_suite(device, suite, run_dir=run_dir)
    # The before-snapshot is sealed before any agent runs: whatever touches it later is caught.
    sealed_before_agent = seal(run_dir)
    harness = {"preflightSeconds": _since(clock)}
    clock = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="agentbench-agent-", dir=agent_workdir_parent(project_root)))
    # The hub's sockets live outside the run directory (which the agent must not reach), in a
    # short path (a unix socket's path is limited to ~107 bytes).
    relay_dir = relay_socket_dir(project_root, profile.name)
    hub: RelayHub | None = None
    try:
        run_token = secrets.token_hex(8)
        invocation = build_invocation(
            suite, options=options, profile=profile, run_dir=run_dir,
            workdir=workdir, serial=device.serial, environ=environ, private_dirs=daemon.dirs, run_token=run_token,
            relay_socket_dir=relay_dir,
        )
        write_run_files(artifacts, invocation)
        tools, probe_error = server_tools(cache, invocation)
        hub = start_relay_hub(invocation, artifacts)
        device.hand_over()
        harness["setupSeconds"] = _since(clock)
        started_at = now()
        adb = getattr(device.adb, "endpoint", None)
        confinement = confine_run(invocation, options=options, suite=suite, run_dir=run_dir, project_root=project_root,
                                  bridge_log=artifacts.bridge_log,
                                  adb_endpoint=(adb.host, adb.port) if adb is not None else None)
        try:
            # Leaving the confinement waits until nothing the agent started is alive.
            with confinement as confined:
                agent = run_agent(
                    confined.argv, env=confined.env, cwd=workdir, prompt=invocation.prompt,
                    stdout_path=artifacts.transcript, stderr_path=artifacts.stderr,
                    timeout_s=suite.claude.timeout_seconds, timing_path=artifacts.timing,
                    idle_timeout_s=suite.claude.idle_timeout_seconds, on_progress=progress,
                    pass_fds=confined.pass_fds, on_started=confined.started,
                )
            process = replace(agent.outcome, last_stderr_line=last_line(artifacts.stderr))
        except AgentStreamError as unwritten:
            # The agent ran, but its stream could not be saved (a full disk): its own output can
            # cause that, so the audit does not take it for the harness's fault (audit/causes.py).
            process = ProcessOutcome(exit_code=None, timed_out=False, signal=None, wall_clock_seconds=0.0,
                                     stopped_because=f"{STREAM_UNWRITTEN}: {unwritten}")
        except AgentProcessError as never_started:
            if not artifacts.transcript.exists():  # refused before any process (a confined command not found)
                artifacts.transcript.write_bytes(b"")
            # A harness or setup problem (a wrong --claude), not an agent that failed: the run is
            # incomplete, so repeat statistics never count it against the agent.
            process = ProcessOutcome(exit_code=None, timed_out=False, signal=None, wall_clock_seconds=0.0,
                                     stopped_because=f"{NEVER_STARTED}: {never_started}")
        finished_at = now()
        # The servers go before the post-run reads: the claim and the device are the harness's again.
        hub.stop()
    finally:
        if hub is not None:
            hub.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(relay_dir, ignore_errors=True)
    clock = time.monotonic()
    ((_, server),) = invocation.server_config["mcpServers"].items()
    stop_run_daemons(device, daemon=profile.daemon, run_token=run_token, server_env={**invocation.env, **server["env"]},
                     private_dirs=daemon.dirs, log=artifacts.postrun_log)
    state, cleanup = finish_device_work(device, suite, artifacts, prepared.device_before, prepared.device_baseline)
    build = server_build(cache, profile=profile, claude=options.claude, environ=environ,
                         adb_endpoint=str(device.adb.endpoint), project_root=project_root, sandbox=confinement.mode.component(),
                         adb=device.adb)
    harness["postRunSeconds"] = _since(clock)
    return Run(
        suite=suite,
        run_dir=run_dir,
        process=process,
        screen=state.screen,
        device_aware_tools=tools.device_aware,
        probe_error=probe_error,
        device_lost=state.device_lost,
        nodeid=nodeid,
        device_serial=device.serial,
        agent_command=tuple(invocation.argv),
        requested_model=requested_model(suite.raw, options.model),
        started_at=started_at,
        finished_at=finished_at,
        device_fingerprint=dict(prepared.device_fingerprint),
        app_build=dict(prepared.app_build),
        preflight_round_trips=prepared.round_trips,
        server_build=build.digest,
        server_build_components=dict(build.components),
        device_state=state.device_state(prepared.device_before) if suite.verify.device else None,
        shell_tools=tools.shell | {f"mcp__{profile.name}__{tool}" for tool in profile.shell_tools},
        cleanup=cleanup,
        harness_seconds=harness,
        # The declaration, not the instance's values: seeded instances of a suite share one digest.
        suite_digest=suite_digest(suite.declared.raw, prompt_text=suite.declared.prompt_text, model_override=options.model),
        sealed_before_agent=sealed_before_agent,
        cli_version=agent_cli_version(stream_cli_version(artifacts.transcript), options.claude, cache),
        sandbox=confinement.record(),
        relay_log=RELAY_LOG_NAME,
        bridge_log=confinement.bridge_log,
    )


def confine_run(invocation: Invocation, *, options: InvocationOptions, suite: Suite, run_dir: Path,
                project_root: Path, bridge_log: Path | None = None, adb_endpoint: tuple[str, int] | None = None) -> AgentConfinement:
    """The agent's confinement for this run (`--agentbench-sandbox`; unconfined when the options carry no mode).

    `bridge_log` is where a confined run's model bridge records its connections (the audit's
    evidence of a model host that could not be reached); `adb_endpoint` is the adb server the
    sandbox's self-test must find refused.
    """
    mode = getattr(options, "sandbox", None) or SandboxMode("off", "off", reason="unconfined (no sandbox mode in the options)")
    return AgentConfinement(
        mode, invocation.argv, invocation.env, workdir=invocation.workdir, agent_command=options.claude,
        run_dir=run_dir, output_root=getattr(options, "output", run_dir.parent.parent), project_root=project_root,
        suite_file=Path(suite.path), relay_socket_dir=invocation.relay_socket_dir, bridge_log=bridge_log,
        private=getattr(options, "private_paths", ()), adb_endpoint=adb_endpoint,
    )


#: A unix socket's path must fit in sun_path (108 bytes on Linux, 104 on macOS), with room to spare.
_SOCKET_PATH_LIMIT = 100


def relay_socket_dir(project_root: Path, server: str) -> Path:
    """A fresh private (0700) directory for the hub's sockets: outside the project and the run directory, short enough for a socket path."""
    parent = agent_workdir_parent(project_root)
    if len(str(parent)) + len("/agentbench-relay-xxxxxxxx/") + len(server) + len(".sock") > _SOCKET_PATH_LIMIT:
        parent = Path("/tmp")
    return Path(tempfile.mkdtemp(prefix="agentbench-relay-", dir=parent))


def start_relay_hub(invocation: Invocation, artifacts: RunArtifacts) -> RelayHub:
    """Listen on the relay's sockets for every server the agent's config declares (the servers start per connection)."""
    servers = {
        name: ServerLaunch(argv=(entry["command"], *(str(arg) for arg in entry.get("args") or ())),
                           env=invocation.server_environ(name), cwd=artifacts.run_dir)
        for name, entry in invocation.server_config["mcpServers"].items()
    }
    assert invocation.relay_socket_dir is not None
    return RelayHub(socket_dir=invocation.relay_socket_dir, log_path=artifacts.relay_log, servers=servers,
                    stderr_dir=artifacts.run_dir).start()


def last_line(path: Path, tail: int = 4096) -> str | None:
    """The last non-empty line of a file, read from its final `tail` bytes (None when it has none)."""
    try:
        with path.open("rb") as stream:
            stream.seek(max(0, stream.seek(0, 2) - tail))
            text = stream.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else None


def stream_cli_version(transcript: Path, limit: int = 65536) -> str | None:
    """The CLI version the stream's first line (Claude Code's init event) names, read from at most `limit` bytes.

    Only the first line is read, so the transcript is not parsed twice; `<claude> --version`
    runs only for an agent whose stream names no version.
    """
    try:
        with transcript.open("rb") as stream:
            first = stream.readline(limit)
        event = json.loads(first)
    except (OSError, ValueError):
        return None
    version = event.get("claude_code_version") if isinstance(event, dict) and event.get("subtype") == "init" else None
    return version if isinstance(version, str) and version else None


def _since(clock: float) -> float:
    return round(time.monotonic() - clock, 3)
