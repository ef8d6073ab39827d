"""Claude's print-mode arguments + stdin -> a checked AgentRequest, or the exit status a usage problem ends with.

The front door agentbench-agent and agentbench-replay share, so both answer `--help`, `--version`,
a bad `--max-turns` or `--max-budget-usd`, a missing `-p`, an empty prompt and a broken
`--mcp-config` exactly as Claude Code does (docs/agents.md), and both write stream-json, text or
json the same way.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from pytest_agentbench.agents.cli_options import (
    NO_PROMPT,
    OPTIONS,
    REPLAY_DESCRIPTION,
    OptionSpec,
    ParsedArgs,
    UsageError,
    help_text,
    parse_args,
    print_mode_problem,
    read_prompt,
)
from pytest_agentbench.agents.mcp_client import ConfigProblem, McpConnection, McpServer, Permissions, load_mcp_configs, serial_from_system_prompt
from pytest_agentbench.agents.stream import StreamWriter, write_summary


@dataclass(frozen=True)
class FrontDoor:
    """What differs between the agents at the door: their name, version, flags and help.

    Attributes:
        program: The console script's name, as errors and `--version` say it.
        version: What `--version` prints before the program name.
        options: The flags it accepts (`cli_options.OPTIONS` or `CLAUDE_OPTIONS`).
        description: `--help`'s lines before the options.
        help_overrides: Option name -> the help line this program says instead.
        default_max_turns: The step budget without `--max-turns` (None: no budget).
    """

    program: str
    version: str
    options: tuple[OptionSpec, ...] = OPTIONS
    description: tuple[str, ...] = REPLAY_DESCRIPTION
    help_overrides: Mapping[str, str] = field(default_factory=dict)
    default_max_turns: int | None = None

    def help(self) -> str:
        return help_text(self.program, description=self.description, options=self.options, overrides=dict(self.help_overrides))


@dataclass(frozen=True)
class AgentRequest:
    """A checked request: the arguments, the prompt, the MCP configs, the budgets and where the output goes."""

    door: FrontDoor
    args: ParsedArgs
    prompt: str
    configs: Mapping[str, Any]
    max_turns: int | None
    budget_usd: float | None

    @property
    def output_format(self) -> str:
        return str(self.args.get("output-format", "text"))

    def sink(self, stdout: TextIO) -> TextIO:
        """Where the stream goes: stdout itself for stream-json, else a buffer `finish` summarises."""
        return stdout if self.output_format == "stream-json" else io.StringIO()

    def finish(self, sink: TextIO, stdout: TextIO) -> None:
        """Text or json output: the stream's summary, as Claude Code prints it."""
        if self.output_format != "stream-json":
            write_summary(sink.getvalue(), self.output_format, stdout)  # type: ignore[attr-defined]

    def name_session(self, writer: StreamWriter) -> None:
        """`--session-id` names the stream's session."""
        if self.args.get("session-id"):
            writer.session_id = str(self.args.get("session-id"))

    def connection(self, *, stderr: TextIO, environ: Mapping[str, str], **kwargs: Any) -> McpConnection:
        """The MCP servers of `--mcp-config`, with the permissions of the tool flags and the system prompt's device hint."""
        return McpConnection(
            servers=[McpServer(name, config) for name, config in self.configs.items()],
            permissions=Permissions.from_args(self.args), stderr=stderr, environ=environ, program=self.door.program,
            device_hint=serial_from_system_prompt(self.args.get("append-system-prompt")), **kwargs,
        )


def positive_int(args: ParsedArgs, key: str, default: int | None) -> int | None:
    """`--KEY N`, a positive integer, or the default when the flag is not given."""
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


def budget(args: ParsedArgs) -> float | None:
    """`--max-budget-usd`, a positive number, or None when not given."""
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


def enter(door: FrontDoor, argv: list[str], *, stdin: TextIO, stdout: TextIO, stderr: TextIO,
          check: Callable[[ParsedArgs], str | None] | None = None) -> AgentRequest | int:
    """Parse and check the command line and read the prompt.

    Args:
        door: The program's name, version, flags and help.
        argv: The arguments after the program name.
        stdin, stdout, stderr: The program's streams (help and version go to stdout, problems to stderr).
        check: The program's own check after the print-mode one (a problem sentence, or None).

    Returns:
        The request, or the exit status to end with: 0 after `--help` or `--version`, 1 after a
        problem (its sentence written to stderr).
    """
    try:
        args = parse_args(argv, door.options)
        if args.has("help"):
            stdout.write(door.help())
            return 0
        if args.has("version"):
            stdout.write(f"{door.version} ({door.program})\n")
            return 0
        max_turns = positive_int(args, "max-turns", door.default_max_turns)
        budget_usd = budget(args)
    except UsageError as exc:
        stderr.write(f"{exc}\n")
        return 1
    problem = print_mode_problem(args, door.program) or (check(args) if check is not None else None)
    if problem:
        stderr.write(problem + "\n")
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
    return AgentRequest(door, args, prompt, configs, max_turns, budget_usd)
