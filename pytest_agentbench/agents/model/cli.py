"""agentbench-agent: a prompt on stdin + Claude's print-mode flags -> seed 004's loop over an OpenAI-compatible model, as Claude Code stream-json.

It speaks the same contract as Claude Code and agentbench-replay (see docs/agents.md): the harness,
its checks and its reports treat its runs exactly as they treat Claude's.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import TextIO

import anyio

from pytest_agentbench import __version__
from pytest_agentbench.agents.cli_options import CLAUDE_OPTIONS, ParsedArgs
from pytest_agentbench.agents.front_door import FrontDoor, enter
from pytest_agentbench.agents.mcp_client import McpConnection, connect_timeout
from pytest_agentbench.agents.model.agent import DEFAULT_MAX_TURNS, SYSTEM_PROMPT, AgentLoop, EpisodeResult, LoopSettings, Step
from pytest_agentbench.agents.model.endpoint import API_KEY_VARIABLE, ChatClient, EndpointConfig, EndpointConfigError
from pytest_agentbench.agents.model.mcp_device import McpDevice
from pytest_agentbench.agents.stream import StreamWriter
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
DOOR = FrontDoor(PROGRAM, AGENT_VERSION, options=CLAUDE_OPTIONS, description=_DESCRIPTION, help_overrides=_HELP,
                 default_max_turns=DEFAULT_MAX_TURNS)


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


def _needs_model(environ: Mapping[str, str]) -> Callable[[ParsedArgs], str | None]:
    def check(args: ParsedArgs) -> str | None:
        if args.get("model") or environ.get(MODEL_VARIABLE):
            return None
        return f"Error: {PROGRAM} needs the served model's name: pass --model NAME or set {MODEL_VARIABLE}"
    return check


def run(argv: list[str], *, stdin: TextIO, stdout: TextIO, stderr: TextIO, environ: Mapping[str, str], cwd: str) -> int:
    """Run agentbench-agent with explicit streams (the console script and the tests call this).

    Returns:
        The exit status: 0 when the run ended in a successful result, else 1.
    """
    request = enter(DOOR, argv, stdin=stdin, stdout=stdout, stderr=stderr, check=_needs_model(environ))
    if isinstance(request, int):
        return request
    args = request.args
    model = str(args.get("model") or environ.get(MODEL_VARIABLE))
    try:
        endpoint: EndpointConfig | EndpointConfigError = EndpointConfig.from_environ(environ)
    except EndpointConfigError as exc:
        endpoint = exc
    if request.budget_usd is not None and isinstance(endpoint, EndpointConfig) and endpoint.pricing is None:
        stderr.write(f"{PROGRAM}: --max-budget-usd is not enforced: no token prices are configured (see docs/agents.md)\n")
    sink = request.sink(stdout)
    writer = StreamWriter(
        out=sink, model=model, version=AGENT_VERSION, assistant_model=model,
        api_key_source=API_KEY_VARIABLE if environ.get(API_KEY_VARIABLE) else "none",
        cost_usd=0.0 if isinstance(endpoint, EndpointConfig) and endpoint.pricing is not None else None,
        _id_tag="agent",
    )
    request.name_session(writer)
    # Issue 12's contract: the model agent reaches the phone through the official MCP client.
    connection = request.connection(stderr=stderr, environ=environ, client="sdk")
    settings = LoopSettings(model=model, max_turns=request.max_turns or DEFAULT_MAX_TURNS, system_prompt=_system_prompt(args),
                            budget_usd=request.budget_usd)
    result = anyio.run(
        lambda: run_session(connection=connection, writer=writer, settings=settings, endpoint=endpoint, prompt=request.prompt,
                            environ=environ, cwd=cwd)
    )
    request.finish(sink, stdout)
    status = result.exit_status if result is not None else 1
    if status != 0 and writer.ended_with:
        # The last words on stderr say why: the harness quotes them for a non-zero exit, and a
        # warning written at the start (the budget) must not be the reason the run is known by.
        said = next((line.strip() for line in writer.ended_with.splitlines() if line.strip()), writer.ended_with)
        stderr.write(f"{PROGRAM}: the run ended in an error: {said}\n")
    return status


def main(argv: list[str] | None = None) -> int:
    """Console entry point of `agentbench-agent`."""
    return run(
        list(sys.argv[1:] if argv is None else argv),
        stdin=sys.stdin, stdout=sys.stdout, stderr=sys.stderr, environ=dict(os.environ), cwd=os.getcwd(),
    )


if __name__ == "__main__":
    sys.exit(main())
