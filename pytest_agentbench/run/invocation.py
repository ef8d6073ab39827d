"""Suite + options + server profile -> the agent's argv, scrubbed environment and MCP config (pure, no I/O)."""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

from pytest_agentbench.errors import ConfigError
from pytest_agentbench.redact import mask_secrets
from pytest_agentbench.servers import COORDINATION_DIR_NAMES, RUN_TOKEN_ENV, ServerProfile
from pytest_agentbench.suite import Suite, fill_placeholders

# Claude Code tools that the agent must never fall back to: raw adb through a shell would bypass
# the MCP server being measured.
ALWAYS_DISALLOWED = ("Bash", "PowerShell")
SETTING_SOURCES = "project,local"
# Claude Code 2.1.197 waits only ~2 s for MCP servers in print mode and then runs without their
# tools (reference/claude-code-stream/mcp_slow.jsonl); blocking with a fixed timeout makes every
# run start with the server connected or visibly failed.
MCP_CONNECT_TIMEOUT_MS = "30000"
DEFAULT_CLAIM_ROOT = "~/.auto-mobile/adb-servers"
ADB_ENDPOINT_VARIABLES = ("ADB_SERVER_SOCKET", "ANDROID_ADB_SERVER_ADDRESS", "ANDROID_ADB_SERVER_PORT")
SDK_VARIABLES = ("ANDROID_HOME", "ANDROID_SDK_ROOT")
#: The adb variables the agent never gets (the server gets the endpoint ones in its own block).
ADB_AGENT_VARIABLES = (*ADB_ENDPOINT_VARIABLES, "ANDROID_SERIAL", "ADB_VENDOR_KEYS", "ADB_MDNS_OPENSCREEN", "ADB_LIBUSB")


class RunShapingVariable(NamedTuple):
    """An inherited Claude Code variable that changes how a run behaves, so it is removed."""

    name: str
    family: str
    why: str


# Inherited Claude Code variables removed from the agent's environment: each one would make two
# operators' runs of the same suite and model measure different things. Auth, provider, proxy
# and model-routing variables (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, CLAUDE_CODE_USE_BEDROCK,
# HTTPS_PROXY, ANTHROPIC_MODEL, ...) are deliberately NOT here: they choose who answers, and the
# observed model is recorded in every result. `is_run_shaping_variable` adds whole families.
RUN_SHAPING_VARIABLES: tuple[RunShapingVariable, ...] = (
    RunShapingVariable("CLAUDE_CODE_EFFORT_LEVEL", "effort and thinking", "changes how long the model thinks per turn"),
    RunShapingVariable("MAX_THINKING_TOKENS", "effort and thinking", "caps or forces extended thinking"),
    RunShapingVariable("DISABLE_INTERLEAVED_THINKING", "effort and thinking", "changes thinking between tool calls"),
    RunShapingVariable("CLAUDE_CODE_DISABLE_ADAPTIVE_THINKING", "effort and thinking", "changes when the model thinks"),
    RunShapingVariable("CLAUDE_CODE_SUBAGENT_MODEL", "subagent model and limits", "runs subagents on another model"),
    RunShapingVariable("CLAUDE_CODE_MAX_SUBAGENTS", "subagent model and limits", "limits parallel subagents"),
    RunShapingVariable("CLAUDE_CODE_MAX_TURNS", "turn and output caps", "ends runs early"),
    RunShapingVariable("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "turn and output caps", "truncates replies"),
    RunShapingVariable("MAX_MCP_OUTPUT_TOKENS", "turn and output caps", "truncates MCP tool results the agent reads"),
    RunShapingVariable("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "context and compaction", "changes when the context is compacted"),
    RunShapingVariable("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "context and compaction", "changes when the context is compacted"),
    RunShapingVariable("DISABLE_AUTO_COMPACT", "context and compaction", "keeps a full context that would be compacted"),
    RunShapingVariable("DISABLE_COMPACT", "context and compaction", "turns compaction off"),
    RunShapingVariable("CLAUDE_CODE_DISABLE_1M_CONTEXT", "context and compaction", "changes the context window"),
    RunShapingVariable("BASH_DEFAULT_TIMEOUT_MS", "Bash and MCP limits and timeouts", "changes tool timeouts"),
    RunShapingVariable("BASH_MAX_TIMEOUT_MS", "Bash and MCP limits and timeouts", "changes tool timeouts"),
    RunShapingVariable("BASH_MAX_OUTPUT_LENGTH", "Bash and MCP limits and timeouts", "truncates tool output"),
    RunShapingVariable("MCP_TIMEOUT", "Bash and MCP limits and timeouts", "changes MCP server start-up waiting"),
    RunShapingVariable("MCP_TOOL_TIMEOUT", "Bash and MCP limits and timeouts", "fails slow device tools early"),
    RunShapingVariable("MCP_CONNECT_TIMEOUT_MS", "Bash and MCP limits and timeouts", "set by the harness instead"),
    RunShapingVariable("MCP_CONNECTION_NONBLOCKING", "Bash and MCP limits and timeouts", "set by the harness instead"),
    RunShapingVariable("MCP_SERVER_CONNECTION_BATCH_SIZE", "Bash and MCP limits and timeouts", "changes MCP start-up"),
    RunShapingVariable("CLAUDE_CODE_MAX_RETRIES", "retries", "changes how API errors end a run"),
    RunShapingVariable("API_MAX_RETRIES", "retries", "changes how API errors end a run"),
    RunShapingVariable("ENABLE_TOOL_SEARCH", "tool search", "defers MCP tools behind ToolSearch (one more turn)"),
    RunShapingVariable("CLAUDE_CODE_ENABLE_TOOL_SEARCH", "tool search", "defers MCP tools behind ToolSearch"),
    RunShapingVariable("CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD", "extra CLAUDE.md directories", "loads instructions from elsewhere"),
    RunShapingVariable("DISABLE_PROMPT_CACHING", "prompt caching", "changes cost and token counts"),
    RunShapingVariable("ENABLE_PROMPT_CACHING_1H_BEDROCK", "prompt caching", "changes cost and token counts"),
    RunShapingVariable("FORCE_PROMPT_CACHING_5M", "prompt caching", "changes cost and token counts"),
    RunShapingVariable("API_TIMEOUT_MS", "timeouts and watchdogs", "ends slow API calls differently"),
    RunShapingVariable("CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS", "timeouts and watchdogs", "ends idle streams differently"),
    RunShapingVariable("CLAUDE_STREAM_IDLE_TIMEOUT_MS", "timeouts and watchdogs", "ends idle streams differently"),
    RunShapingVariable("CLAUDE_ENABLE_STREAM_WATCHDOG", "timeouts and watchdogs", "aborts stalled streams"),
    RunShapingVariable("ANTHROPIC_BETAS", "API beta control", "turns API features on"),
    RunShapingVariable("CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS", "API beta control", "turns API features off"),
    RunShapingVariable("CLAUDE_CODE_USE_POWERSHELL_TOOL", "shell fallback", "would give the agent a shell to reach adb"),
    RunShapingVariable("CLAUDE_CODE_MCP_ALLOWLIST_ENV", "MCP server environment", "would hide PATH (and the fingerprinted adb) from the server"),
    RunShapingVariable("CLAUDE_CODE_DISABLE_CLAUDE_MDS", "isolation switches", "set to 1 by the harness"),
    RunShapingVariable("CLAUDE_CODE_DISABLE_POLICY_SKILLS", "isolation switches", "set to 1 by the harness"),
)
_RUN_SHAPING_NAMES = frozenset(variable.name for variable in RUN_SHAPING_VARIABLES)
_PROMPT_CACHING_PREFIXES = ("DISABLE_PROMPT_CACHING", "ENABLE_PROMPT_CACHING", "FORCE_PROMPT_CACHING")
_TIMEOUT_FAMILY_PREFIXES = ("CLAUDE_", "API_", "MCP_", "BASH_")


def is_run_shaping_variable(name: str) -> bool:
    """Tell whether an inherited variable changes how a run behaves and must be removed.

    Args:
        name: An environment variable name.

    Returns:
        True for every name in ``RUN_SHAPING_VARIABLES``, every prompt-caching switch
        (``DISABLE_/ENABLE_/FORCE_PROMPT_CACHING*``), and every ``CLAUDE_*``, ``API_*``,
        ``MCP_*`` or ``BASH_*`` name containing ``TIMEOUT`` or ``WATCHDOG``.
    """
    if name in _RUN_SHAPING_NAMES or name.startswith(_PROMPT_CACHING_PREFIXES):
        return True
    return name.startswith(_TIMEOUT_FAMILY_PREFIXES) and ("TIMEOUT" in name or "WATCHDOG" in name)


class InvocationOptions(Protocol):
    """What build_invocation reads from the session's options."""

    claude: str
    model: str | None
    server_instructions: bool


@dataclass(frozen=True)
class Invocation:
    """Everything needed to start the agent, and to show what would start in a dry run."""

    argv: list[str]
    env: dict[str, str]
    env_removed: tuple[str, ...]
    env_set: dict[str, str]
    mcp_config: dict
    prompt: str
    mcp_config_path: Path
    workdir: Path
    #: Files the harness copies into the workdir before the agent starts: destination -> source
    #: (the replay agent's plan, `AGENTBENCH_PLAN`); the agent reads nothing of the checkout.
    staged: dict[Path, Path] = field(default_factory=dict)
    #: The run directory's copy of the MCP config (an artifact; the agent reads `mcp_config_path`).
    mcp_config_artifact: Path | None = None
    #: The real servers' config (`{"mcpServers": {name: {command, args, env}}}`): what the
    #: harness's relay hub starts, never shown to the agent.
    server_config: dict = field(default_factory=dict)
    #: The directory of the hub's unix sockets (`<server>.sock`), outside the run directory: the
    #: only harness path the agent's relay needs, so the one a sandbox must bind.
    relay_socket_dir: Path | None = None

    def server_environ(self, name: str) -> dict[str, str]:
        """The whole environment the hub starts server `name` with: the scrubbed inherited one under its `env` block."""
        return {**self.env, **(self.server_config["mcpServers"][name].get("env") or {})}

    def describe(self) -> str:
        """Render argv, environment changes and MCP config for a terminal, secrets masked."""
        masked_config = json.loads(json.dumps(self.server_config or self.mcp_config))
        for server in masked_config.get("mcpServers", {}).values():
            server["env"] = mask_secrets(server.get("env", {}))
        lines = ["argv:", "  " + shlex.join(self.argv), f"workdir: {self.workdir}"]
        lines.append("environment removed: " + (", ".join(self.env_removed) or "(none)"))
        lines.append("environment set:")
        lines += [f"  {name}={value}" for name, value in mask_secrets(self.env_set).items()]
        lines.append(f"mcp config ({self.mcp_config_path}):")
        lines += ["  " + line for line in json.dumps(self.mcp_config, indent=2).splitlines()]
        if self.server_config:
            lines.append(f"servers the harness starts behind the relay (sockets in {self.relay_socket_dir}):")
            lines += ["  " + line for line in json.dumps(masked_config, indent=2).splitlines()]
        lines.append(f"prompt: {len(self.prompt)} characters on stdin")
        return "\n".join(lines)


def expand_tool_name(tool: str, server_name: str) -> str:
    """Give a bare MCP tool name its server prefix; Claude Code tools and full names stay.

    Claude Code's own tools are PascalCase (``Bash``, ``Read``); MCP servers' tools start with a
    lowercase letter (``openLink``, ``mobile_take_screenshot``), so that is what "bare" means.

    Args:
        tool: A name from ``allowedTools``/``disallowedTools``.
        server_name: The configured profile's MCP server name.

    Returns:
        ``mcp__<server>__<tool>`` for a bare name, otherwise the name unchanged.
    """
    if tool.startswith("mcp__") or not tool[:1].islower():
        return tool
    return f"mcp__{server_name}__{tool}"


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _format_usd(amount: float) -> str:
    return f"{amount:.10f}".rstrip("0").rstrip(".")


def _absolute(value: str, environ: Mapping[str, str]) -> str:
    expanded = value
    if value.startswith("~") and environ.get("HOME"):
        expanded = environ["HOME"] + value[1:]
    return os.path.abspath(os.path.expanduser(expanded))


def _endpoint_value(name: str, value: str, environ: Mapping[str, str]) -> str:
    # Only a unix-socket endpoint carries a path; tcp:HOST:PORT, addresses and ports are already
    # independent of the server's working directory.
    if name == "ADB_SERVER_SOCKET" and value.startswith("localfilesystem:"):
        return "localfilesystem:" + _absolute(value.removeprefix("localfilesystem:"), environ)
    return value


def server_environment(
    profile: ServerProfile,
    *,
    run_dir: Path,
    serial: str,
    server_instructions: bool,
    environ: Mapping[str, str],
    private_dirs: Mapping[str, Path] | None = None,
    run_token: str | None = None,
    screenshots: bool = False,
) -> dict[str, str]:
    """Build the env block of the MCP server in the generated config.

    Args:
        profile: The configured server profile.
        run_dir: The run directory; private state goes below it unless ``private_dirs`` is given.
        serial: The device serial the harness prepared.
        server_instructions: Whether ``--server-instructions`` was given.
        environ: The harness's environment (claim root, adb endpoint and SDK are read from it).
        private_dirs: Variable -> directory, overriding ``profile.private_dirs(run_dir)``.
        run_token: This run's token (``AGENTBENCH_RUN_TOKEN``), inherited by whatever the server
            starts, so its leftover daemons can be found after the agent.
        screenshots: Ask the server for a screenshot after each device call (``--agentbench-html``);
            ignored for a profile that cannot take them.

    Returns:
        Variable -> value; paths are absolute because the server runs from a temp directory.

    Raises:
        ConfigError: ``server_instructions`` for a profile without an instructions switch.
    """
    env: dict[str, str] = dict(profile.fixed_env)
    if run_token:
        env[RUN_TOKEN_ENV] = run_token
    dirs = dict(private_dirs) if private_dirs is not None else profile.private_dirs(run_dir)
    env.update({name: str(Path(path).absolute()) for name, path in dirs.items()})
    if profile.pinnable and profile.pin_env:
        env[profile.pin_env] = serial
    if server_instructions:
        if not profile.instructions_env:
            raise ConfigError(f"--server-instructions: the {profile.name} MCP server has no instructions switch; drop the option")
        env[profile.instructions_env] = "1"
    if screenshots and profile.screenshots_env:
        env[profile.screenshots_env] = "1"
    current, legacy = COORDINATION_DIR_NAMES
    env[current] = _absolute(environ.get(current) or environ.get(legacy) or DEFAULT_CLAIM_ROOT, environ)
    if environ.get(legacy):
        env[legacy] = _absolute(environ[legacy], environ)
    for name in ADB_ENDPOINT_VARIABLES:
        if environ.get(name):
            env[name] = _endpoint_value(name, environ[name], environ)
    for name in SDK_VARIABLES:
        if environ.get(name):
            env[name] = _absolute(environ[name], environ)
    return env


def device_sentence(serial: str, package_name: str) -> str:
    """The sentence the harness always appends to the system prompt."""
    return (
        f"Use only the Android device with serial {serial}; the app under test is {package_name}. "
        "Do not act on any other device."
    )


def build_invocation(
    suite: Suite,
    *,
    options: InvocationOptions,
    profile: ServerProfile,
    run_dir: Path,
    workdir: Path,
    serial: str,
    environ: Mapping[str, str],
    private_dirs: Mapping[str, Path] | None = None,
    run_token: str | None = None,
    relay_socket_dir: Path | None = None,
) -> Invocation:
    """Build the exact agent command, its environment and its MCP config for one run.

    Args:
        suite: The validated suite.
        options: The session's options (``claude`` command, ``model`` override,
            ``server_instructions``).
        profile: The configured MCP server profile.
        run_dir: The run directory (``mcp-config.json`` goes there).
        workdir: The empty directory the agent runs in.
        serial: The prepared device's serial.
        environ: The environment the agent would inherit (``os.environ`` in a real run).
        private_dirs: Optional override of where the server's private state lives.
        run_token: This run's token for the server's environment (see ``server_environment``).
        relay_socket_dir: The directory of the relay hub's sockets (made by the caller, outside
            the run directory); default: a name under the temp directory (dry runs).

    Returns:
        The Invocation; nothing is written or started.

    Raises:
        ConfigError: The options ask for something the profile cannot do.
    """
    run_dir = Path(run_dir).absolute()
    # The agent's copy lives in its workdir: a confined agent cannot read the run directory.
    mcp_config_path = Path(workdir).absolute() / MCP_CONFIG_NAME
    placeholders = {"device_serial": serial, "package_name": suite.app.package_name, "run_directory": str(run_dir)}

    allowed = suite.claude.allowed_tools or (f"mcp__{profile.name}",)
    allowed_tools = _unique([expand_tool_name(tool, profile.name) for tool in allowed])
    disallowed_tools = _unique([*ALWAYS_DISALLOWED, *(expand_tool_name(t, profile.name) for t in suite.claude.disallowed_tools)])
    system_prompt = device_sentence(serial, suite.app.package_name)
    if suite.claude.append_system_prompt and suite.claude.append_system_prompt.strip():
        system_prompt = fill_placeholders(suite.claude.append_system_prompt, **placeholders).rstrip() + "\n\n" + system_prompt

    argv = [
        options.claude, "-p", "--verbose", "--output-format", "stream-json",
        "--mcp-config", str(mcp_config_path), "--strict-mcp-config",
        "--setting-sources", SETTING_SOURCES,
        "--allowedTools", ",".join(allowed_tools),
        "--disallowedTools", ",".join(disallowed_tools),
    ]
    model = options.model or suite.claude.model
    if model:
        argv += ["--model", model]
    argv += ["--append-system-prompt", system_prompt]
    if suite.claude.max_budget_usd is not None:
        argv += ["--max-budget-usd", _format_usd(suite.claude.max_budget_usd)]

    # An inherited run token would make this run's daemons look like another run's, and back.
    removed = sorted(name for name in environ if is_run_shaping_variable(name) or profile.scrubs(name) or name == RUN_TOKEN_ENV)
    env_set = {
        "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
        "CLAUDE_CODE_DISABLE_POLICY_SKILLS": "1",
        "MCP_CONNECTION_NONBLOCKING": "false",
        "MCP_CONNECT_TIMEOUT_MS": MCP_CONNECT_TIMEOUT_MS,
        "AGENTBENCH_SUITE": suite.name,
    }
    # No harness path reaches the agent (the suite file once did: an agent could rewrite it). Only
    # the scripted replay agent gets its plan, copied into its workdir; a model never sees it.
    staged: dict[Path, Path] = {}
    plan = replay_plan(suite, options.claude)
    if plan is not None:
        staged[Path(workdir).absolute() / PLAN_NAME] = plan
        env_set["AGENTBENCH_PLAN"] = str(Path(workdir).absolute() / PLAN_NAME)
        env_set["AGENTBENCH_APP_PACKAGE"] = suite.app.package_name
    # The agent reaches the device only through the relay: where the adb server listens (and
    # which phone is ours) is the MCP server's business, given to it in its own environment.
    removed = sorted({*removed, *(name for name in (*HARNESS_PATH_VARIABLES, *ADB_AGENT_VARIABLES, *COORDINATION_DIR_NAMES)
                                  if name in environ)})
    env = {name: value for name, value in environ.items() if name not in set(removed)}
    env.update(env_set)

    server_env = server_environment(
        profile, run_dir=run_dir, serial=serial, server_instructions=options.server_instructions,
        environ=environ, private_dirs=private_dirs, run_token=run_token,
        # Only AgentbenchOptions knows about the HTML report; other option objects mean "off".
        screenshots=bool(getattr(options, "screenshots", False)),
    )
    command, *args = profile.command
    server_config = {"mcpServers": {profile.name: {"type": "stdio", "command": command, "args": args, "env": server_env}}}
    socket_dir = Path(relay_socket_dir) if relay_socket_dir is not None else Path(tempfile.gettempdir()) / f"agentbench-relay-{run_dir.name}"
    mcp_config = {"mcpServers": {profile.name: relay_entry(socket_dir, profile.name)}}
    return Invocation(
        argv=argv,
        env=env,
        env_removed=tuple(removed),
        env_set=env_set,
        mcp_config=mcp_config,
        prompt=fill_placeholders(suite.prompt_text, **placeholders),
        mcp_config_path=mcp_config_path,
        workdir=Path(workdir),
        staged=staged,
        mcp_config_artifact=run_dir / MCP_CONFIG_NAME,
        server_config=server_config,
        relay_socket_dir=socket_dir,
    )


#: The agent's MCP config and the replay plan, by name in the agent's workdir.
MCP_CONFIG_NAME = "mcp-config.json"
PLAN_NAME = "agentbench-plan.yml"
#: The agent command that plays plans (`agents/replay.py`), by file name.
REPLAY_COMMAND = "agentbench-replay"
#: Harness variables an inherited environment may carry that name harness paths.
HARNESS_PATH_VARIABLES = ("AGENTBENCH_SUITE_FILE", "AGENTBENCH_PLAN", "AGENTBENCH_APP_PACKAGE")


def replay_plan(suite: Suite, agent_command: str) -> Path | None:
    """The plan the replay agent plays for this suite (`<suites>/../plans/<suite>.yml`), None for any other agent or no plan."""
    if Path(agent_command).name != REPLAY_COMMAND:
        return None
    plan = Path(suite.path).absolute().parent.parent / "plans" / f"{suite.name}.yml"
    return plan if plan.is_file() else None


#: The module `agentbench-relay` runs (`mcp_server/relay.py`); started as `python -m` so the
#: agent needs no PATH entry for it.
RELAY_MODULE = "pytest_agentbench.mcp_server.relay"


def relay_socket_path(socket_dir: Path, server: str) -> Path:
    """The unix socket of one declared server in the run's relay directory."""
    return Path(socket_dir) / f"{server}.sock"


def relay_entry(socket_dir: Path, server: str) -> dict:
    """The agent's `--mcp-config` entry for one server: the relay and its socket, no env, no adb endpoint."""
    path = relay_socket_path(socket_dir, server)
    return {"type": "stdio", "command": sys.executable, "args": ["-m", RELAY_MODULE, "--socket", str(path)], "env": {}}
