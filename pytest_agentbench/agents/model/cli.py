"""agentbench-agent: a prompt on stdin + Claude's print-mode flags -> seed 004's loop over an OpenAI-compatible model, as Claude Code stream-json.

It speaks the same contract as Claude Code and agentbench-replay (see docs/agents.md): the harness,
its checks and its reports treat its runs exactly as they treat Claude's.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import TextIO

import anyio

from pytest_agentbench import __version__
from pytest_agentbench.agents.cli_options import (
    CLAUDE_OPTIONS,
    NO_PROMPT,
    ParsedArgs,
    UsageError,
    help_text,
    parse_args,
    print_mode_problem,
    read_prompt,
)
from pytest_agentbench.agents.mcp_client import (
    ConfigProblem,
    McpConnection,
    McpServer,
    Permissions,
    connect_timeout,
    load_mcp_configs,
    serial_from_system_prompt,
)
from pytest_agentbench.agents.model.agent import DEFAULT_MAX_TURNS, SYSTEM_PROMPT, AgentLoop, EpisodeResult, LoopSettings, Step
from pytest_agentbench.agents.model.endpoint import API_KEY_VARIABLE, ChatClient, EndpointConfig, EndpointConfigError
from pytest_agentbench.agents.model.mcp_device import McpDevice
from pytest_agentbench.agents.stream import StreamWriter, write_summary
from pytest_agentbench.servers.agent_tools import PROFILE_VARIABLE, agent_tool_map, known_profiles

PROGRAM = "agentbench-agent"
AGENT_VERSION = f"{__version__}-agentbench-agent"
MODEL_VARIABLE = "AGENTBENCH_OPENAI_MODEL"

_DESCRIPTION = (
    "Seed 004's agent loop for a text-only model behind an OpenAI-compatible server, speaking",
    "Claude Code's print-mode contract: it reads the prompt on stdin, drives the phone only through",
    "the MCP server of --mcp-config and writes Claude Code 2.1.197 stream-json. The endpoint comes",
    f"from $AGENTBENCH_OPENAI_BASE_URL and ${API_KEY_VARIABLE}; see docs/agents.md.",
)
_HELP = {
    "model": f"The served model name (default ${MODEL_VARIABLE})",
    "max-turns": f"Step budget: end with error_max_turns after this many turns (default {DEFAULT_MAX_TURNS})",
    "max-budget-usd": "Spend cap, enforced when token prices are configured",
    "append-system-prompt": "Added to the agent's system prompt",
    "system-prompt": "Replaces the agent's system prompt",
}


def _positive_int(args: ParsedArgs, key: str, default: int) -> int:
    raw = args.get(key)
    if raw is None:
        return default
    try:
        value = int(str(raw))
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"error: --{key} must be a positive integer, got '{raw}'")
    return value


def _budget(args: ParsedArgs) -> float | None:
    raw = args.get("max-budget-usd")
    if raw is None:
        return None
    try:
        value = float(str(raw))
    except ValueError:
        value = -1.0
    if not value > 0:
        raise UsageError("error: --max-budget-usd must be a positive number greater than 0")
    return value


def _system_prompt(args: ParsedArgs) -> str:
    base = str(args.get("system-prompt") or SYSTEM_PROMPT)
    extra = str(args.get("append-system-prompt") or "").strip()
    return f"{base}\n\n{extra}" if extra else base


async def run_session(
    *,
    connection: McpConnection,
    writer: StreamWriter,
    settings: LoopSettings,
    endpoint: EndpointConfig | EndpointConfigError,
    prompt: str,
    environ: Mapping[str, str],
    cwd: str,
    on_step: Callable[[Step], None] | None = None,
) -> EpisodeResult | None:
    """Connect the servers, write init, then run one episode (the CLI and agentbench-episode share this).

    Returns:
        The episode's result, or None when it could not start (the stream then ends in an error
        result that says why).
    """
    async with AsyncExitStack() as stack:
        await connection.connect(stack, connect_timeout(environ))
        writer.init(cwd=cwd, tools=connection.tool_names(), mcp_servers=connection.statuses())
        if isinstance(endpoint, EndpointConfigError):
            writer.begin_turn()
            writer.result_api_error(f"API Error: {endpoint}", None)
            return None
        connected = [server for server in connection.servers if server.status == "connected"]
        if not connected:
            writer.result_error_during_execution("no MCP server is connected, so the phone cannot be reached")
            return None
        tool_map = agent_tool_map(connected[0].name, environ)
        if tool_map is None:
            writer.result_error_during_execution(
                f"agentbench-agent cannot drive the MCP server '{connected[0].name}': it knows the tools of "
                f"{', '.join(known_profiles())}; name the server after one of them or set {PROFILE_VARIABLE}"
            )
            return None
        chat = ChatClient(endpoint)
        try:
            device = McpDevice(connection, writer, tool_map, environ=environ)
            loop = AgentLoop(chat=chat, device=device, writer=writer, settings=settings, pricing=endpoint.pricing,
                             on_step=on_step)
            return await loop.run(prompt)
        finally:
            await chat.close()


def run(argv: list[str], *, stdin: TextIO, stdout: TextIO, stderr: TextIO, environ: Mapping[str, str], cwd: str) -> int:
    """Run agentbench-agent with explicit streams (the console script and the tests call this).

    Returns:
        The exit status: 0 when the run ended in a successful result, else 1.
    """
    try:
        args = parse_args(argv, CLAUDE_OPTIONS)
        if args.has("help"):
            stdout.write(help_text(PROGRAM, description=_DESCRIPTION, options=CLAUDE_OPTIONS, overrides=_HELP))
            return 0
        if args.has("version"):
            stdout.write(f"{AGENT_VERSION} ({PROGRAM})\n")
            return 0
        max_turns = _positive_int(args, "max-turns", DEFAULT_MAX_TURNS)
        budget = _budget(args)
    except UsageError as exc:
        stderr.write(f"{exc}\n")
        return 1
    problem = print_mode_problem(args, PROGRAM)
    if problem:
        stderr.write(problem + "\n")
        return 1
    output_format = str(args.get("output-format", "text"))
    model = str(args.get("model") or environ.get(MODEL_VARIABLE) or "")
    if not model:
        stderr.write(f"Error: {PROGRAM} needs the served model's name: pass --model NAME or set {MODEL_VARIABLE}\n")
        return 1
    prompt = read_prompt(args, stdin)
    if not prompt.strip():
        stderr.write(NO_PROMPT + "\n")
        return 1
    try:
        configs = load_mcp_configs(list(args.get("mcp-config", [])))  # type: ignore[arg-type]
    except ConfigProblem as exc:
        stderr.write(f"Error: Invalid MCP configuration:\n{exc}\n")
        return 1
    try:
        endpoint: EndpointConfig | EndpointConfigError = EndpointConfig.from_environ(environ)
    except EndpointConfigError as exc:
        endpoint = exc
    if budget is not None and isinstance(endpoint, EndpointConfig) and endpoint.pricing is None:
        stderr.write(f"{PROGRAM}: --max-budget-usd is not enforced: no token prices are configured (see docs/agents.md)\n")
    sink = stdout if output_format == "stream-json" else io.StringIO()
    writer = StreamWriter(
        out=sink, model=model, version=AGENT_VERSION, assistant_model=model,
        api_key_source=API_KEY_VARIABLE if environ.get(API_KEY_VARIABLE) else "none",
        cost_usd=0.0 if isinstance(endpoint, EndpointConfig) and endpoint.pricing is not None else None,
        _id_tag="agent",
    )
    if args.get("session-id"):
        writer.session_id = str(args.get("session-id"))
    connection = McpConnection(
        servers=[McpServer(name, config) for name, config in configs.items()],
        permissions=Permissions.from_args(args), stderr=stderr, environ=environ, program=PROGRAM,
        # Issue 12's contract: the model agent reaches the phone through the official MCP client.
        client="sdk", device_hint=serial_from_system_prompt(args.get("append-system-prompt")),
    )
    settings = LoopSettings(model=model, max_turns=max_turns, system_prompt=_system_prompt(args), budget_usd=budget)
    result = anyio.run(
        lambda: run_session(connection=connection, writer=writer, settings=settings, endpoint=endpoint, prompt=prompt,
                            environ=environ, cwd=cwd)
    )
    if output_format != "stream-json":
        write_summary(sink.getvalue(), output_format, stdout)  # type: ignore[union-attr]
    return result.exit_status if result is not None else 1


def main(argv: list[str] | None = None) -> int:
    """Console entry point of `agentbench-agent`."""
    return run(
        list(sys.argv[1:] if argv is None else argv),
        stdin=sys.stdin, stdout=sys.stdout, stderr=sys.stderr, environ=dict(os.environ), cwd=os.getcwd(),
    )


if __name__ == "__main__":
    sys.exit(main())
