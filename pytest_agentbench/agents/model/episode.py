"""agentbench-episode: a task + a device (a simulated phone or a serial) -> one episode of the model loop without pytest, each step printed.

Seed 004's `run_episode.py`. It starts the configured MCP server pinned to the device, runs the
same loop agentbench-agent runs, prints each step (observation size, tool call, result, what the
loop reported) and the outcome, and exits 0 only when the model called task_complete.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

import anyio

from pytest_agentbench.agents.mcp_client import McpConnection, McpServer, Permissions
from pytest_agentbench.agents.model.agent import DEFAULT_MAX_TURNS, SYSTEM_PROMPT, LoopSettings, Step
from pytest_agentbench.agents.model.cli import AGENT_VERSION, MODEL_VARIABLE, run_session
from pytest_agentbench.agents.model.endpoint import API_KEY_VARIABLE, EndpointConfig, EndpointConfigError
from pytest_agentbench.agents.stream import StreamWriter
from pytest_agentbench.device.adb import Adb
from pytest_agentbench.errors import AgentbenchError
from pytest_agentbench.run.invocation import server_environment
from pytest_agentbench.servers import get_profile
from pytest_agentbench.audit.transcript import parse_file

PROGRAM = "agentbench-episode"
EXIT_COMPLETED, EXIT_NOT_COMPLETED, EXIT_USAGE = 0, 1, 2
_SHOWN_CHARS = 200


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"Invalid step budget {text!r}: not a number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"Invalid step budget {text!r}: must be at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The `agentbench-episode` argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description=(
            "Run one episode of agentbench-agent's loop on a phone and print every step. The model "
            "endpoint comes from AGENTBENCH_OPENAI_BASE_URL and AGENTBENCH_OPENAI_API_KEY. Exit status 0 "
            "when the model called task_complete, 1 when it did not, 2 for a usage or setup error."
        ),
    )
    parser.add_argument("--task", required=True, help="The task in the user's words, e.g. \"Turn on Wi-Fi.\"")
    parser.add_argument("--device", required=True, metavar="sim|adb|SERIAL",
                        help="sim starts a simulated phone for the episode; adb takes the one online device (as seed 004's "
                             "run_episode.py); otherwise an adb serial")
    parser.add_argument("--model", default=None, help=f"The served model name. Default: ${MODEL_VARIABLE}")
    parser.add_argument("--max-turns", type=_positive, default=DEFAULT_MAX_TURNS, metavar="N",
                        help="Step budget. Default: %(default)r")
    parser.add_argument("--server", default="agentbench", choices=("agentbench", "mobile-mcp"),
                        help="MCP server profile. Default: %(default)r")
    parser.add_argument("--stream", type=Path, default=None, metavar="FILE",
                        help="Also write the Claude Code stream-json transcript here")
    return parser


def _shown(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _SHOWN_CHARS else flat[: _SHOWN_CHARS - 1] + "…"


def print_step(step: Step, out: TextIO) -> None:
    """One step: `step 2: 1534 chars observed; tap(index=3) -> tapped ...`, then the loop's reports."""
    observed = f"{step.observation_chars} chars observed; " if step.observation_chars else ""
    out.write(f"step {step.turn}: {observed}{step.call} -> {_shown(step.result)}\n")
    for report in step.reports:
        out.write(f"    {_shown(report)}\n")
    out.flush()


def _mcp_entry(profile_name: str, serial: str, state_dir: Path, environ: Mapping[str, str]) -> dict:
    profile = get_profile(profile_name)
    for path in profile.private_dirs(state_dir).values():
        path.mkdir(parents=True, exist_ok=True)
    env = server_environment(profile, run_dir=state_dir, serial=serial, server_instructions=False, environ=environ)
    command, *args = profile.command
    return {"name": profile.name, "config": {"type": "stdio", "command": command, "args": args, "env": env}}


def run_episode(args: argparse.Namespace, *, serial: str, stdout: TextIO, stderr: TextIO, environ: Mapping[str, str]) -> int:
    """One episode on a known serial; returns the exit status."""
    model = args.model or environ.get(MODEL_VARIABLE)
    if not model:
        stderr.write(f"{PROGRAM}: pass --model NAME or set {MODEL_VARIABLE}\n")
        return EXIT_USAGE
    try:
        endpoint = EndpointConfig.from_environ(environ)
    except EndpointConfigError as exc:
        stderr.write(f"{PROGRAM}: {exc}\n")
        return EXIT_USAGE
    state_dir = Path(tempfile.mkdtemp(prefix="agentbench-episode-"))
    try:
        entry = _mcp_entry(args.server, serial, state_dir, environ)
        connection = McpConnection(
            servers=[McpServer(entry["name"], entry["config"])],
            permissions=Permissions(allowed=[f"mcp__{entry['name']}"], disallowed=[]),
            stderr=stderr, environ=environ, program=PROGRAM, client="sdk",
        )
        sink: TextIO = open(args.stream, "w", encoding="utf-8") if args.stream else io.StringIO()  # noqa: SIM115
        with sink:
            writer = StreamWriter(
                out=sink, model=model, version=AGENT_VERSION, assistant_model=model,
                api_key_source=API_KEY_VARIABLE if environ.get(API_KEY_VARIABLE) else "none",
                cost_usd=0.0 if endpoint.pricing is not None else None, _id_tag="agent",
            )
            settings = LoopSettings(model=model, max_turns=args.max_turns, system_prompt=SYSTEM_PROMPT)
            stdout.write(f"{PROGRAM}: {args.task!r} on {serial} through {entry['name']}, model {model} at {endpoint.identity}\n")
            result = anyio.run(
                lambda: run_session(connection=connection, writer=writer, settings=settings, endpoint=endpoint,
                                    prompt=args.task, environ=environ, cwd=os.getcwd(),
                                    on_step=lambda step: print_step(step, stdout))
            )
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
    if result is None:
        stdout.write("outcome: the episode could not start (see the stream's result)\n")
        return EXIT_NOT_COMPLETED
    completed = "task_complete called" if result.completed else "task_complete NOT called"
    stdout.write(
        f"outcome: {result.ending} ({completed}) after {result.turns} step(s), {result.recoveries} recovery(ies): "
        f"{_shown(result.final_text) or '(no text)'}\n"
    )
    if args.stream:
        transcript = parse_file(args.stream)
        stdout.write(f"stream: {args.stream} ({transcript.line_count} lines, {len(transcript.unparseable)} unparseable)\n")
    return EXIT_COMPLETED if result.completed else EXIT_NOT_COMPLETED


def the_one_online_device(adb: Adb) -> tuple[str | None, str]:
    """`--device adb`: the serial of the one online device, or None and why (none, several, or no adb server)."""
    try:
        online = [device.serial for device in adb.devices() if device.state == "device"]
    except (AgentbenchError, OSError) as exc:
        return None, f"the adb server cannot be asked for its devices ({exc}); start it with `adb start-server`"
    if len(online) == 1:
        return online[0], ""
    if not online:
        return None, "no online device (`adb devices` lists none); connect a phone or use --device sim"
    return None, f"{len(online)} online devices ({', '.join(online)}); name one with --device SERIAL"


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point of `agentbench-episode`."""
    args = build_parser().parse_args(argv)
    environ = dict(os.environ)
    if args.device == "adb":
        serial, problem = the_one_online_device(Adb())
        if serial is None:
            print(f"{PROGRAM}: --device adb: {problem}", file=sys.stderr)
            return EXIT_USAGE
        return run_episode(args, serial=serial, stdout=sys.stdout, stderr=sys.stderr, environ=environ)
    if args.device != "sim":
        return run_episode(args, serial=args.device, stdout=sys.stdout, stderr=sys.stderr, environ=environ)
    # Imported here: only --device sim needs the simulated phone.
    from pytest_agentbench.sim.fleet import SimFleet

    adb = Adb()
    # An adb server this command starts is stopped again when it exits (its owner).
    started_server = not adb.server_running()
    try:
        try:
            fleet = SimFleet(1, 0.0, adb)
        except (AgentbenchError, OSError, ValueError) as exc:
            print(f"{PROGRAM}: the simulated phone did not start: {exc}", file=sys.stderr)
            return EXIT_USAGE
        try:
            return run_episode(args, serial=fleet.serials[0], stdout=sys.stdout, stderr=sys.stderr, environ=environ)
        finally:
            fleet.stop()
    finally:
        if started_server:
            adb.kill_server()


if __name__ == "__main__":
    sys.exit(main())
