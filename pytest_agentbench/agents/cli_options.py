"""Claude Code 2.1.197 command line -> parsed options, with its commander-style errors."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, TextIO

Arity = Literal["flag", "value", "optional", "variadic"]


class UsageError(Exception):
    """A command line Claude Code would refuse; the message is what it prints on stderr."""


@dataclass(frozen=True)
class OptionSpec:
    """One option: its spellings, what it takes, and its help line."""

    names: tuple[str, ...]
    arity: Arity
    metavar: str = ""
    help: str = ""
    choices: tuple[str, ...] = ()
    hidden: bool = False

    @property
    def key(self) -> str:
        """The attribute name: the first long spelling without dashes (`allowedTools`)."""
        long_names = [name for name in self.names if name.startswith("--")]
        return long_names[0][2:]

    @property
    def usage(self) -> str:
        """How commander names the option in an error (`--model <model>`)."""
        long_name = [name for name in self.names if name.startswith("--")][-1]
        return f"{long_name} {self.metavar}".rstrip()


def _o(names: str, arity: Arity, metavar: str = "", help: str = "", **kwargs) -> OptionSpec:
    return OptionSpec(tuple(names.split(", ")), arity, metavar, help, **kwargs)


# Every option of `claude --help` (2.1.197) plus the hidden --max-turns, so any command line
# the harness (or a person) builds for Claude is accepted; replay's own two come last.
OPTIONS: tuple[OptionSpec, ...] = (
    _o("--add-dir", "variadic", "<directories...>", "Accepted and ignored"),
    _o("--agent", "value", "<agent>", "Accepted and ignored"),
    _o("--agents", "value", "<json>", "Accepted and ignored"),
    _o("--allow-dangerously-skip-permissions", "flag", help="Accepted and ignored"),
    _o("--allowedTools, --allowed-tools", "variadic", "<tools...>", "Comma or space-separated tool names to allow"),
    _o("--append-system-prompt", "value", "<prompt>", "Accepted; a plan does not read it"),
    _o("--ax-screen-reader", "flag", help="Accepted and ignored"),
    _o("--bg, --background", "flag", help="Accepted and ignored"),
    _o("--bare", "flag", help="Accepted and ignored"),
    _o("--betas", "variadic", "<betas...>", "Accepted and ignored"),
    _o("--brief", "flag", help="Accepted and ignored"),
    _o("--chrome", "flag", help="Accepted and ignored"),
    _o("-c, --continue", "flag", help="Accepted and ignored"),
    _o("--dangerously-skip-permissions", "flag", help="Allow every tool that is not disallowed"),
    _o("-d, --debug", "optional", "[filter]", "Accepted and ignored"),
    _o("--debug-file", "value", "<path>", "Accepted and ignored"),
    _o("--disable-slash-commands", "flag", help="Accepted and ignored"),
    _o("--disallowedTools, --disallowed-tools", "variadic", "<tools...>", "Comma or space-separated tool names to deny"),
    _o("--effort", "value", "<level>", "Accepted and ignored"),
    _o("--exclude-dynamic-system-prompt-sections", "flag", help="Accepted and ignored"),
    _o("--fallback-model", "value", "<model>", "Accepted and ignored"),
    _o("--file", "variadic", "<specs...>", "Accepted and ignored"),
    _o("--fork-session", "flag", help="Accepted and ignored"),
    _o("--from-pr", "optional", "[value]", "Accepted and ignored"),
    _o("-h, --help", "flag", help="Display help for command"),
    _o("--ide", "flag", help="Accepted and ignored"),
    _o("--include-hook-events", "flag", help="Accepted and ignored"),
    _o("--include-partial-messages", "flag", help="Accepted and ignored"),
    _o("--input-format", "value", "<format>", "Only \"text\" is played", choices=("text", "stream-json")),
    _o("--json-schema", "value", "<schema>", "Accepted and ignored"),
    _o("--max-budget-usd", "value", "<amount>", "Spend cap; a replay costs nothing"),
    _o("--max-turns", "value", "<turns>", "Stop with error_max_turns after this many turns", hidden=True),
    _o("--mcp-config", "variadic", "<configs...>", "MCP servers from JSON files or strings"),
    _o("--model", "value", "<model>", "Model name written into the transcript (default \"replay\")"),
    _o("-n, --name", "value", "<name>", "Accepted and ignored"),
    _o("--no-chrome", "flag", help="Accepted and ignored"),
    _o("--no-session-persistence", "flag", help="Accepted and ignored"),
    _o("--output-format", "value", "<format>", "\"text\", \"json\" or \"stream-json\"", choices=("text", "json", "stream-json")),
    _o(
        "--permission-mode",
        "value",
        "<mode>",
        "bypassPermissions allows every tool that is not disallowed",
        choices=("acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"),
    ),
    _o("--plugin-dir", "value", "<path>", "Accepted and ignored"),
    _o("--plugin-url", "value", "<url>", "Accepted and ignored"),
    _o("-p, --print", "flag", help="Print response and exit (the only mode replay has)"),
    _o("--prompt-suggestions", "optional", "[value]", "Accepted and ignored"),
    _o("--remote-control", "optional", "[name]", "Accepted and ignored"),
    _o("--remote-control-session-name-prefix", "value", "<prefix>", "Accepted and ignored"),
    _o("--replay-user-messages", "flag", help="Accepted and ignored"),
    _o("-r, --resume", "optional", "[value]", "Accepted and ignored"),
    _o("--safe-mode", "flag", help="Accepted and ignored"),
    _o("--session-id", "value", "<uuid>", "Session id written into the transcript"),
    _o("--setting-sources", "value", "<sources>", "Accepted and ignored"),
    _o("--settings", "value", "<file-or-json>", "Accepted and ignored"),
    _o("--strict-mcp-config", "flag", help="Only use MCP servers from --mcp-config (always true for replay)"),
    _o("--system-prompt", "value", "<prompt>", "Accepted and ignored"),
    _o("--tmux", "optional", "[mode]", "Accepted and ignored"),
    _o("--tools", "variadic", "<tools...>", "Accepted and ignored"),
    _o("--verbose", "flag", help="Required with -p --output-format stream-json, as for Claude Code"),
    _o("-v, --version", "flag", help="Output the version number"),
    _o("-w, --worktree", "optional", "[name]", "Accepted and ignored"),
    _o("--plan", "value", "<file>", "The plan to play (default: $AGENTBENCH_PLAN, else beside $AGENTBENCH_SUITE_FILE)"),
    _o("--replay-transcript", "value", "<file>", "Replay the MCP tool calls and final answer of an earlier claude.jsonl"),
)
#: Claude Code's own options only (the model agent adds none of its own).
CLAUDE_OPTIONS: tuple[OptionSpec, ...] = OPTIONS[:-2]

_BY_NAME = {name: spec for spec in OPTIONS for name in spec.names}


@dataclass
class ParsedArgs:
    """Option values by key (flags True, variadics lists, repeated values last-wins) and the prompt."""

    values: dict[str, object] = field(default_factory=dict)
    prompt: str | None = None

    def get(self, key: str, default: object = None) -> object:
        """The value of option `key` (`allowedTools`, `print`, ...)."""
        return self.values.get(key, default)

    def has(self, key: str) -> bool:
        """Whether option `key` was given."""
        return key in self.values


def parse_args(argv: list[str], options: tuple[OptionSpec, ...] = OPTIONS) -> ParsedArgs:
    """Parse a command line the way Claude Code's commander does.

    Args:
        argv: The arguments after the program name.
        options: The options this program accepts (default: Claude's plus replay's own).

    Returns:
        The parsed options and the optional positional prompt.

    Raises:
        UsageError: With commander's message (`error: unknown option '--foo'`).
    """
    by_name = _BY_NAME if options is OPTIONS else {name: spec for spec in options for name in spec.names}
    parsed = ParsedArgs()
    positionals: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        index += 1
        if arg == "--":
            positionals.extend(argv[index:])
            break
        if not arg.startswith("-") or arg == "-":
            positionals.append(arg)
            continue
        name, has_inline, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        spec = by_name.get(name)
        if spec is None:
            raise UsageError(f"error: unknown option '{arg if not has_inline else name}'")
        if spec.arity == "flag":
            if has_inline:
                raise UsageError(f"error: unknown option '{arg}'")
            parsed.values[spec.key] = True
        elif spec.arity == "optional":
            if has_inline:
                parsed.values[spec.key] = inline
            elif index < len(argv) and not argv[index].startswith("-"):
                parsed.values[spec.key] = argv[index]
                index += 1
            else:
                parsed.values[spec.key] = True
        elif spec.arity == "value":
            if has_inline:
                value = inline
            elif index < len(argv):
                value = argv[index]
                index += 1
            else:
                raise UsageError(f"error: option '{spec.usage}' argument missing")
            if spec.choices and value not in spec.choices:
                allowed = ", ".join(spec.choices)
                raise UsageError(f"error: option '{spec.usage}' argument '{value}' is invalid. Allowed choices are {allowed}.")
            parsed.values[spec.key] = value
        else:
            items: list[str] = [inline] if has_inline else []
            # A variadic option takes every following argument up to the next option.
            while index < len(argv) and not argv[index].startswith("-"):
                items.append(argv[index])
                index += 1
            if not items:
                raise UsageError(f"error: option '{spec.usage}' argument missing")
            existing = parsed.values.setdefault(spec.key, [])
            existing.extend(items)  # type: ignore[union-attr]
    if len(positionals) > 1:
        raise UsageError(f"error: too many arguments. Expected 1 argument but got {len(positionals)}.")
    parsed.prompt = positionals[0] if positionals else None
    return parsed


def split_tool_list(values: list[str]) -> list[str]:
    """Split `--allowedTools` values on commas and spaces, keeping `Bash(git *)` whole.

    Args:
        values: The raw values as given (each may hold several names).

    Returns:
        The tool rules in order, without empty ones.
    """
    rules: list[str] = []
    for value in values:
        rules.extend(match.group(0) for match in re.finditer(r"[^\s,()]+(?:\([^)]*\))?", value))
    return rules


REPLAY_DESCRIPTION = (
    "A scripted agent that speaks Claude Code's print-mode contract: it reads the prompt on",
    "stdin, starts the MCP servers of --mcp-config, plays a plan's tool calls through them and",
    "writes Claude Code 2.1.197 stream-json. It costs nothing and calls no model.",
)


def help_text(
    program: str,
    *,
    description: tuple[str, ...] = REPLAY_DESCRIPTION,
    options: tuple[OptionSpec, ...] = OPTIONS,
    overrides: dict[str, str] | None = None,
) -> str:
    """The `--help` text, laid out like commander's (`overrides`: option key -> its help line here)."""
    overrides = overrides or {}
    lines = [
        f"Usage: {program} [options] [prompt]",
        "",
        *description,
        "",
        "Arguments:",
        "  prompt".ljust(42) + "Your prompt (default: read from stdin)",
        "",
        "Options:",
    ]
    for spec in options:
        if spec.hidden and spec.key not in overrides:
            continue
        shown = overrides.get(spec.key, spec.help)
        left = f"  {', '.join(spec.names)} {spec.metavar}".rstrip()
        lines.append(left.ljust(42) + shown if len(left) < 41 else f"{left}\n{'':42}{shown}")
    return "\n".join(lines) + "\n"


def print_mode_problem(args: ParsedArgs, program: str) -> str | None:
    """Why a parsed command line cannot run in print mode (Claude Code's own wording), or None.

    Args:
        args: The parsed arguments.
        program: The agent's name, for the messages.

    Returns:
        The error line to print on stderr (exit status 1), or None when the flags fit.
    """
    if not args.has("print"):
        return f"Error: {program} has only print mode; pass -p/--print"
    if str(args.get("output-format", "text")) == "stream-json" and not args.has("verbose"):
        return "Error: When using --print, --output-format=stream-json requires --verbose"
    if args.get("input-format") == "stream-json":
        return f"Error: {program} reads a text prompt only; --input-format stream-json is not supported"
    return None


def read_prompt(args: ParsedArgs, stdin: TextIO) -> str:
    """The prompt: the positional argument, else stdin (nothing from a terminal)."""
    if args.prompt is not None:
        return args.prompt
    return "" if stdin.isatty() else stdin.read()


#: Claude Code's words when no prompt came.
NO_PROMPT = "Error: Input must be provided either through stdin or as a prompt argument when using --print"
