"""agentbench-replay: a prompt on stdin + a plan -> tool calls through the MCP server and Claude Code stream-json on stdout."""

from __future__ import annotations

import io
import json
import os
import re
import sys
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pytest_agentbench.agents.cli_options import ParsedArgs, UsageError, help_text, parse_args, split_tool_list
from pytest_agentbench.agents.plan import (
    Plan,
    ToolStep,
    WaitStep,
    fill_placeholders,
    find_plan_path,
    load_plan,
    plan_from_transcript,
    suite_package_name,
)
from pytest_agentbench.agents.stream import DEFAULT_MODEL, REPLAY_VERSION, StreamWriter, mcp_tool_result_shape
from pytest_agentbench.audit.transcript import parse_file, short_tool_name
from pytest_agentbench.errors import AgentbenchError
from pytest_agentbench.servers.mcpclient import McpClientError, StdioClient

PROGRAM = "agentbench-replay"
# How long a server may take to start and list its tools; Claude's knob, honoured the same way.
DEFAULT_CONNECT_TIMEOUT_S = 30.0
DEVICE_SERIAL_VARIABLE = "AGENTBENCH_DEVICE_SERIAL"
# A device action on a slow phone can take a while; the harness's timeoutSeconds bounds the run.
TOOL_CALL_TIMEOUT_S = 600.0


class ConfigProblem(Exception):
    """An invalid --mcp-config; the message is what Claude Code prints."""


@dataclass
class McpServer:
    """One configured server and, once connected, its client and tool names."""

    name: str
    config: dict[str, Any]
    status: str = "failed"
    client: StdioClient | None = None
    tools: list[str] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        env = self.config.get("env") or {}
        return {str(key): str(value) for key, value in env.items()} if isinstance(env, Mapping) else {}


def load_mcp_configs(values: list[str]) -> dict[str, dict[str, Any]]:
    """Merge every `--mcp-config` value (a JSON file or a JSON string) into name -> server config.

    Args:
        values: The raw `--mcp-config` values.

    Returns:
        The servers by name, later configs winning.

    Raises:
        ConfigProblem: A file is missing, a value is not JSON, or `mcpServers` is not a mapping.
    """
    servers: dict[str, dict[str, Any]] = {}
    for value in values:
        text = value.strip()
        if text.startswith("{"):
            source = "the --mcp-config JSON string"
        else:
            source = value
            try:
                text = Path(value).read_text(encoding="utf-8")
            except FileNotFoundError:
                raise ConfigProblem(f"MCP config file not found: {value}") from None
            except OSError as exc:
                raise ConfigProblem(f"MCP config file {value} cannot be read: {exc.strerror}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigProblem(f"{source} is not valid JSON: {exc.msg} (line {exc.lineno})") from None
        entries = data.get("mcpServers") if isinstance(data, dict) else None
        if not isinstance(entries, dict) or not all(isinstance(entry, dict) for entry in entries.values()):
            raise ConfigProblem(f"{source}: expected {{\"mcpServers\": {{NAME: {{\"command\": ..., \"args\": [...]}}}}}}")
        servers.update(entries)
    return servers


def rule_matches(rule: str, tool_name: str) -> bool:
    """Whether a permission rule names a tool, as Claude Code matches them.

    `mcp__srv` and `mcp__srv__*` cover every tool of that server, `mcp__srv__tool` one tool,
    and a built-in name (`Bash`) itself; content rules such as `Bash(git *)` never cover a whole tool.
    """
    if "(" in rule:
        return False
    if rule == tool_name:
        return True
    if rule.startswith("mcp__") and tool_name.startswith("mcp__"):
        if rule.endswith("__*"):
            return tool_name.startswith(rule[:-1])
        if rule.count("__") == 1:
            return tool_name.startswith(rule + "__")
    return False


@dataclass
class Permissions:
    """The run's tool permissions: --allowedTools, --disallowedTools, --permission-mode."""

    allowed: list[str]
    disallowed: list[str]
    bypass: bool = False

    def disallowed_tool(self, name: str) -> bool:
        """A denied tool is removed from the agent's tool list altogether."""
        return any(rule_matches(rule, name) for rule in self.disallowed)

    def granted(self, name: str) -> bool:
        """Whether a call may run without asking (in print mode nobody can be asked)."""
        return self.bypass or any(rule_matches(rule, name) for rule in self.allowed)


@dataclass
class ReplayRun:
    """One replay: the servers, the permissions, the plan and the writer."""

    servers: list[McpServer]
    permissions: Permissions
    plan: Plan
    writer: StreamWriter
    stderr: TextIO
    max_turns: int | None
    environ: Mapping[str, str]

    def connect(self, stack: ExitStack, timeout_s: float) -> None:
        for server in self.servers:
            self._connect_one(server, stack, timeout_s)

    def _connect_one(self, server: McpServer, stack: ExitStack, timeout_s: float) -> None:
        transport = server.config.get("type", "stdio")
        command = server.config.get("command")
        if transport != "stdio" or not isinstance(command, str):
            self._warn(f"MCP server {server.name!r}: only stdio servers with a 'command' can be replayed")
            return
        args = [str(arg) for arg in server.config.get("args") or []]
        # Claude Code starts a server with its own whole environment, the config's env on top; in
        # this process group, so stopping the agent's group stops the server too.
        deadline = time.monotonic() + timeout_s
        try:
            client = StdioClient(command, args, env={**self.environ, **server.env}, errlog=_file_backed(self.stderr))
        except McpClientError as exc:
            self._warn(f"MCP server {server.name!r} failed to start: {exc}")
            return
        try:
            client.initialize(timeout_s=deadline - time.monotonic())
            listing = client.list_tools(timeout_s=deadline - time.monotonic())
        except McpClientError as exc:
            self._warn(f"MCP server {server.name!r} failed to start: {exc}")
            client.close()
            return
        stack.callback(client.close)
        server.client = client
        server.status = "connected"
        server.tools = [tool["name"] for tool in listing]

    def _warn(self, message: str) -> None:
        self.stderr.write(f"{PROGRAM}: {message}\n")
        self.stderr.flush()

    def tool_names(self) -> list[str]:
        """The init event's `tools`: every connected server's tools that are not disallowed."""
        names = [f"mcp__{server.name}__{tool}" for server in self.servers for tool in server.tools]
        return [name for name in names if not self.permissions.disallowed_tool(name)]

    def resolve(self, tool: str) -> tuple[str, McpServer | None]:
        """A plan's tool name -> its full MCP name and the server that has it."""
        short = short_tool_name(tool)
        if tool.startswith("mcp__"):
            server_name = tool[len("mcp__"):].rsplit("__", 1)[0]
            for server in self.servers:
                if server.name == server_name:
                    return tool, server
            if len(self.servers) != 1:
                return tool, None
            # A transcript recorded against another server name (mcp__auto-mobile__observe).
        for server in self.servers:
            if short in server.tools:
                return f"mcp__{server.name}__{short}", server
        if len(self.servers) == 1:
            return f"mcp__{self.servers[0].name}__{short}", self.servers[0]
        return tool, None

    def pinned_device(self) -> str | None:
        """The device serial the server is pinned to (its config env), else the first listed device."""
        for server in self.servers:
            if server.env.get(DEVICE_SERIAL_VARIABLE):
                return server.env[DEVICE_SERIAL_VARIABLE]
        if self.environ.get(DEVICE_SERIAL_VARIABLE):
            return self.environ[DEVICE_SERIAL_VARIABLE]
        for server in self.servers:
            if server.client is not None and "listDevices" in server.tools:
                result = server.client.call_tool("listDevices", {}, timeout_s=TOOL_CALL_TIMEOUT_S)
                if not result.get("isError"):
                    return device_from_listing(result.get("structuredContent"), _text_of(result.get("content") or []))
        return None

    def play(self) -> int:
        """Play the plan; returns the exit status."""
        needs_device = self.plan.uses_placeholder("device") or any(
            "device" in step.args for step in self.plan.tool_steps if step.tool.startswith("mcp__")
        )
        device = self.pinned_device() if needs_device else None
        values = {"device": device, "packageName": self.plan.package_name or suite_package_name(self.environ)}
        for number, step in enumerate(self.plan.steps, start=1):
            if isinstance(step, WaitStep):
                time.sleep(step.seconds)
                continue
            if self._turns_exhausted():
                return 1
            self._think()
            self._call(number, step, values)
        if self._turns_exhausted():
            return 1
        self._think()
        self.writer.begin_turn()
        self.writer.text(self.plan.final)
        self.writer.result_success(self.plan.final)
        return 0

    def _think(self) -> None:
        # The plan's thinkSeconds stands in for model latency before every action and the answer.
        if self.plan.think_seconds:
            time.sleep(self.plan.think_seconds)

    def _turns_exhausted(self) -> bool:
        if self.max_turns is not None and self.writer.turns >= self.max_turns:
            self.writer.result_max_turns(self.max_turns)
            return True
        return False

    def _call(self, number: int, step: ToolStep, values: Mapping[str, str | None]) -> None:
        name, server = self.resolve(step.tool)
        arguments = fill_placeholders(step.args, values)
        if step.tool.startswith("mcp__") and values.get("device") and "device" in arguments:
            # A replayed transcript names the device of its own run; this run has its own.
            arguments["device"] = values["device"]
        self.writer.begin_turn()
        tool_use_id = self.writer.tool_use(name, arguments, server=server.name if server and server.client else None)
        available = server is not None and server.client is not None and short_tool_name(name) in server.tools
        if self.permissions.disallowed_tool(name) or not available:
            self.writer.no_such_tool(tool_use_id, name)
            errored = True
        elif not self.permissions.granted(name):
            self.writer.deny(tool_use_id, name, arguments)
            errored = True
        else:
            try:
                result = server.client.call_tool(short_tool_name(name), arguments, timeout_s=TOOL_CALL_TIMEOUT_S)
            except McpClientError as exc:
                # A server that died or hung mid-run: the agent sees a failed call, as Claude's does.
                result = {"content": [{"type": "text", "text": f"MCP server {server.name!r}: {exc}"}], "isError": True}
            blocks = [block for block in result.get("content") or [] if isinstance(block, dict)]
            errored = bool(result.get("isError"))
            content, tool_use_result = mcp_tool_result_shape(blocks, result.get("structuredContent"), errored)
            self.writer.tool_result(tool_use_id, content, tool_use_result, is_error=errored)
        if errored != step.expect_error:
            expected = "an error" if step.expect_error else "success"
            self._warn(f"step {number} ({name}): the plan expected {expected}, the call {'failed' if errored else 'succeeded'}")


def _file_backed(stream: TextIO) -> TextIO:
    """A stream a child process can inherit: `stream` itself when it has a file descriptor."""
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        # In-memory streams (tests) have no descriptor; the server's stderr goes to ours.
        return sys.__stderr__
    return stream


def _text_of(content: list[Any]) -> str:
    return "\n".join(str(block.get("text", "")) for block in content if isinstance(block, dict))


def device_from_listing(structured: Any, text: str) -> str | None:
    """The first device serial in a `listDevices` result (structured content or text)."""
    candidates: list[Any] = []
    if isinstance(structured, Mapping):
        candidates = list(structured.get("devices") or structured.get("result") or [])
        if isinstance(structured.get("result"), str):
            text = structured["result"]
            candidates = []
    for item in candidates:
        if isinstance(item, str):
            return item
        if isinstance(item, Mapping):
            for key in ("serial", "deviceId", "id", "name"):
                if isinstance(item.get(key), str):
                    return item[key]
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        data = None
    if data is not None and data != structured and isinstance(data, (Mapping, list)):
        return device_from_listing(data if isinstance(data, Mapping) else {"devices": data}, "")
    match = re.search(r"\b(emulator-\d+|[\w.-]+:\d+|[A-Za-z0-9]{6,})\b", text or "")
    return match.group(1) if match else None


def _read_prompt(args: ParsedArgs, stdin: TextIO) -> str:
    if args.prompt is not None:
        return args.prompt
    if stdin.isatty():
        return ""
    return stdin.read()


def _load_plan(args: ParsedArgs, environ: Mapping[str, str]) -> Plan:
    transcript_path = args.get("replay-transcript")
    if transcript_path:
        path = Path(str(transcript_path))
        return plan_from_transcript(parse_file(path), path)
    plan_path = find_plan_path(args.get("plan"), environ)  # type: ignore[arg-type]
    if plan_path is None:
        raise AgentbenchError(
            "no plan: pass --plan FILE or --replay-transcript FILE, or set AGENTBENCH_SUITE_FILE "
            "(plan beside the suites in ../plans/<suite>.yml) or AGENTBENCH_PLAN"
        )
    return load_plan(plan_path)


def _max_turns(args: ParsedArgs) -> int | None:
    raw = args.get("max-turns")
    if raw is None:
        return None
    try:
        value = int(str(raw))
    except ValueError:
        raise UsageError(f"error: --max-turns must be a positive integer, got '{raw}'") from None
    if value < 1:
        raise UsageError(f"error: --max-turns must be a positive integer, got '{raw}'")
    return value


def _check_budget(args: ParsedArgs) -> None:
    raw = args.get("max-budget-usd")
    if raw is None:
        return
    try:
        value = float(str(raw))
    except ValueError:
        value = -1.0
    if not value > 0:
        raise UsageError("error: --max-budget-usd must be a positive number greater than 0")
    # A replay costs $0, so the cap is never reached.


def run(argv: list[str], *, stdin: TextIO, stdout: TextIO, stderr: TextIO, environ: Mapping[str, str], cwd: str) -> int:
    """Run agentbench-replay with explicit streams (the console script and the tests call this).

    Args:
        argv: The arguments after the program name.
        stdin: Where the prompt is read from.
        stdout: Where stream-json (or text / json) goes.
        stderr: Where errors and warnings go.
        environ: The environment (plan lookup, device serial, the MCP server's base environment).
        cwd: The working directory written into the init event.

    Returns:
        The exit status: 0 when the run ended in a successful result, else 1.
    """
    try:
        args = parse_args(argv)
        if args.has("help"):
            stdout.write(help_text(PROGRAM))
            return 0
        if args.has("version"):
            stdout.write(f"{REPLAY_VERSION} ({PROGRAM})\n")
            return 0
        max_turns = _max_turns(args)
        _check_budget(args)
    except UsageError as exc:
        stderr.write(f"{exc}\n")
        return 1
    if not args.has("print"):
        stderr.write(f"Error: {PROGRAM} has only print mode; pass -p/--print\n")
        return 1
    output_format = str(args.get("output-format", "text"))
    if output_format == "stream-json" and not args.has("verbose"):
        stderr.write("Error: When using --print, --output-format=stream-json requires --verbose\n")
        return 1
    if args.get("input-format") == "stream-json":
        stderr.write(f"Error: {PROGRAM} reads a text prompt only; --input-format stream-json is not supported\n")
        return 1
    prompt = _read_prompt(args, stdin)
    if not prompt.strip():
        stderr.write("Error: Input must be provided either through stdin or as a prompt argument when using --print\n")
        return 1
    try:
        configs = load_mcp_configs(list(args.get("mcp-config", [])))  # type: ignore[arg-type]
    except ConfigProblem as exc:
        stderr.write(f"Error: Invalid MCP configuration:\n{exc}\n")
        return 1
    try:
        plan = _load_plan(args, environ)
    except AgentbenchError as exc:
        stderr.write(f"Error: {exc}\n")
        return 1
    permission_mode = args.get("permission-mode")
    permissions = Permissions(
        allowed=split_tool_list(list(args.get("allowedTools", []))),  # type: ignore[arg-type]
        disallowed=split_tool_list(list(args.get("disallowedTools", []))),  # type: ignore[arg-type]
        bypass=permission_mode == "bypassPermissions" or args.has("dangerously-skip-permissions"),
    )
    sink = stdout if output_format == "stream-json" else io.StringIO()
    writer = StreamWriter(out=sink, model=str(args.get("model") or DEFAULT_MODEL))
    if args.get("session-id"):
        writer.session_id = str(args.get("session-id"))
    replay = ReplayRun(
        servers=[McpServer(name, config) for name, config in configs.items()],
        permissions=permissions,
        plan=plan,
        writer=writer,
        stderr=stderr,
        max_turns=max_turns,
        environ=environ,
    )
    timeout_s = _connect_timeout(environ)
    status = _play(replay, cwd, timeout_s)
    if output_format != "stream-json":
        _write_summary(sink.getvalue(), output_format, stdout)  # type: ignore[union-attr]
    return status


def _connect_timeout(environ: Mapping[str, str]) -> float:
    try:
        return float(environ["MCP_CONNECT_TIMEOUT_MS"]) / 1000
    except (KeyError, ValueError):
        return DEFAULT_CONNECT_TIMEOUT_S


def _play(replay: ReplayRun, cwd: str, timeout_s: float) -> int:
    with ExitStack() as stack:
        replay.connect(stack, timeout_s)
        replay.writer.init(
            cwd=cwd,
            tools=replay.tool_names(),
            mcp_servers=[{"name": server.name, "status": server.status} for server in replay.servers],
        )
        return replay.play()


def _write_summary(stream_json: str, output_format: str, stdout: TextIO) -> None:
    # Claude's text and json formats print only the outcome: the last (result) event.
    result = json.loads(stream_json.strip().splitlines()[-1])
    if output_format == "json":
        stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    elif result.get("subtype") == "success":
        stdout.write(f"{result.get('result', '')}\n")
    else:
        stdout.write(f"Error: {'; '.join(result.get('errors', [])) or result.get('subtype')}\n")


def main(argv: list[str] | None = None) -> int:
    """Console entry point of `agentbench-replay`."""
    return run(
        list(sys.argv[1:] if argv is None else argv),
        stdin=sys.stdin,
        stdout=sys.stdout,
        stderr=sys.stderr,
        environ=dict(os.environ),
        cwd=os.getcwd(),
    )


if __name__ == "__main__":
    sys.exit(main())
