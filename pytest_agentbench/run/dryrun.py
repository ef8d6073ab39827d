"""Suite + options + server profile -> the dry-run text: what a run would start, with nothing started."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pytest_agentbench.run.invocation import REPLAY_COMMAND, InvocationOptions, build_invocation, replay_plan
from pytest_agentbench.run.preflight import DEVICE_STAGING_DIR
from pytest_agentbench.run.seed import plan_seeds
from pytest_agentbench.servers import ServerProfile
from pytest_agentbench.suite import Suite, checks_of_suite


class DryRunOptions(InvocationOptions):
    """What a dry run reads from the session's options besides what the invocation needs."""

    output: Path
    device: str | None

SECTION = "agentbench dry run"
RUN_ID_PLACEHOLDER = "<timestamp>-<id>"
SERIAL_PLACEHOLDER = "<serial>"


def dry_run_text(suite: Suite, *, options: DryRunOptions, profile: ServerProfile, environ: Mapping[str, str]) -> str:
    """Describe the run a suite would start, touching no file, device or process.

    Args:
        suite: A validated suite.
        options: The session's options.
        profile: The configured MCP server profile.
        environ: The environment the agent would inherit.

    Returns:
        argv (shell-quoted), environment changes (secrets masked) and the MCP config, with
        placeholders for the run directory (under ``--agentbench-output``) and, without
        ``--device``, the serial.
    """
    run_dir = options.output / suite.name / RUN_ID_PLACEHOLDER
    # tempfile.gettempdir() would probe the disk; a dry run only says where the workdir would go.
    workdir = Path(environ.get("TMPDIR") or "/tmp") / f"agentbench-{RUN_ID_PLACEHOLDER}"
    serial = options.device or SERIAL_PLACEHOLDER
    invocation = build_invocation(
        suite, options=options, profile=profile, run_dir=run_dir, workdir=workdir, serial=serial, environ=environ,
    )
    header = f"suite: {suite.name} ({suite.path})\nserver: {profile.name} (pinnable: {'yes' if profile.pinnable else 'no'})"
    return header + "\n" + missing_plan_text(suite, options.claude) + invocation.describe() + device_reads_text(suite)


def missing_plan_text(suite: Suite, agent_command: str) -> str:
    """A warning line when the replay agent would run a suite that has no plan (it would end the run incomplete), else ""."""
    if Path(agent_command).name != REPLAY_COMMAND or replay_plan(suite, agent_command) is not None:
        return ""
    expected = Path(suite.path).absolute().parent.parent / "plans" / f"{suite.name}.yml"
    return (f"warning: no replay plan at {expected}: agentbench-replay would end this run incomplete; "
            "write the plan the scripted agent plays (docs/agents.md#writing-a-plan)\n")


def device_reads_text(suite: Suite) -> str:
    """The device commands the suite's checks and cleanup read, one batched round trip before and one after the run."""
    checks = checks_of_suite(suite)
    if not checks.reads_device:
        return ""
    lines = [""]
    if suite.preflight.seed:
        plan = plan_seeds(suite.preflight.seed, staging_dir=DEVICE_STAGING_DIR)
        lines.append(f"seeds (in the reset round trip, after a baseline read of the watched sources; {len(plan.files)} files pushed first):")
        lines += [f"  {name}: {command.text}" for name, command in plan.steps]
    lines.append(f"device reads (one round trip before the agent, one after; {len(checks.checks)} device checks):")
    before = {read.key for read in checks.before_reads()}
    for read in checks.after_reads():
        lines.append(f"  {'before+after' if read.key in before else 'after'}: {read.script.text}")
    if checks.steps:
        lines.append(f"cleanup steps: {len(checks.steps)} (then the watched sources are read again)")
    return "\n".join(lines) + "\n"


def current_environ() -> dict[str, str]:
    """Snapshot the process environment (one place, so tests can see what a dry run reads)."""
    return dict(os.environ)
