"""The command line + this machine -> which suites it names, and the usage errors found before collection: the agent program, its settings, the device.

A benchmark that cannot run should say so once, before anything is collected, not as one
error per suite after each suite's preflight. Every check here runs only for a session that
names suites (`pytest benchmark/`, a suite file) and will run them: a dry run, a re-render,
`--collect-only` and the project's own `pytest tests/` are never refused for want of a phone.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest

from pytest_agentbench.device.adb import Adb, AdbEndpoint
from pytest_agentbench.device.pool import candidates_for, ensure_server
from pytest_agentbench.device.selection import parse_device_entries
from pytest_agentbench.errors import DeviceUnavailable
from pytest_agentbench.options import AgentbenchOptions
from pytest_agentbench.run.execute import agent_kind

#: The one line every device refusal ends with: how to look, and how to run without a phone.
DEVICE_REMEDY = ("check what adb sees with `adb devices`, name a phone with `--device SERIAL`, "
                 "or run on a simulated phone with `--device sim --claude agentbench-replay`")
named_paths_key = pytest.StashKey[tuple[Path, ...]]()


def named_paths(config: pytest.Config) -> tuple[Path, ...]:
    """The paths the command line names itself (not pytest's testpaths or the current directory), absolute.

    Node ids keep their file part (`suites/a.yml::a[r1]` names `suites/a.yml`).
    """
    cached = config.stash.get(named_paths_key, None)
    if cached is not None:
        return cached
    paths: tuple[Path, ...] = ()
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        invocation = Path(config.invocation_params.dir)
        paths = tuple(Path(os.path.abspath(invocation / arg.split("::", 1)[0])) for arg in config.args if arg and not arg.startswith("-"))
    config.stash[named_paths_key] = paths
    return paths


def is_named(file_path: Path, named: Iterable[Path]) -> bool:
    """Whether a suite file is named on the command line: itself, or a directory holding it."""
    path = Path(os.path.abspath(file_path))
    return any(path == entry or path.is_relative_to(entry) for entry in named)


def names_suites(named: Sequence[Path], suite_dirs: Sequence[str], norecurse: Sequence[str] = ()) -> bool:
    """Whether any named path is a suite file or a directory with one below it (pytest's `norecursedirs` skipped)."""
    for entry in named:
        if entry.is_file():
            if entry.suffix == ".yml" and entry.parent.name in suite_dirs:
                return True
            continue
        if entry.name in suite_dirs and any(entry.glob("*.yml")):
            return True
        for root, dirs, files in os.walk(entry):
            dirs[:] = [d for d in dirs if not any(fnmatch.fnmatch(d, pattern) for pattern in norecurse)]
            if Path(root).name in suite_dirs and any(name.endswith(".yml") for name in files):
                return True
    return False


def uses_devices(config: pytest.Config, options: AgentbenchOptions) -> bool:
    """Whether this session drives devices (not a dry run, a re-render or --collect-only)."""
    return not (options.dry_run or options.from_results or config.option.collectonly)


def runs_agents(config: pytest.Config, options: AgentbenchOptions) -> bool:
    """Whether this session starts agents (it drives devices, and is neither a proof nor the doctor, which play no agent)."""
    return uses_devices(config, options) and not options.prove and not options.doctor


def agent_problem(command: str, environ: Mapping[str, str]) -> str | None:
    """Why `--claude COMMAND` cannot be started here, or None.

    A command with a slash is a path that must be an executable file; a bare name must be on PATH.
    """
    if os.sep in command:
        if os.path.isfile(command) and os.access(command, os.X_OK):
            return None
        what = "is not executable" if os.path.isfile(command) else "does not exist"
        return f"the agent program {command} (--claude) {what}: pass the path of an executable agent program"
    if shutil.which(command, path=environ.get("PATH")):
        return None
    hint = ""
    if command == "claude":
        hint = ": install Claude Code (`npm install -g @anthropic-ai/claude-code`),"
    elif command.startswith("agentbench-"):
        hint = ": it is this package's console script, so activate the virtualenv it is installed in, pass its full path,"
    return (f"the agent program {command!r} (--claude) is not on PATH{hint} or pass another agent with --claude "
            "(without a model, `--claude agentbench-replay` plays each suite's scripted plan)")


def agent_settings_problem(command: str, environ: Mapping[str, str]) -> str | None:
    """Why the agent's required settings are missing or malformed (agentbench-agent's endpoint), or None."""
    if agent_kind(command) != "openai":
        return None
    # Imported only here: the endpoint module pulls in the OpenAI client.
    from pytest_agentbench.agents.model.endpoint import EndpointConfig, EndpointConfigError

    try:
        EndpointConfig.from_environ(environ)
    except EndpointConfigError as exc:
        return f"the agent {command} (--claude) needs its model endpoint: {exc} (docs/agents.md)"
    return None


def device_problem(options: AgentbenchOptions, *, pinnable: bool, adb: Adb) -> str | None:
    """Why the session's `--device` has no phone to run on, or None (simulated phones always have one).

    The session's adb server must already run (see `ensure_server`); servers named by
    `HOST:PORT/SERIAL` are asked as they are.
    """
    sim_count, entries = parse_device_entries(options.device)
    if sim_count:
        return None
    try:
        candidates_for(adb, entries, pinnable=pinnable)
    except DeviceUnavailable as exc:
        return f"{exc}; {DEVICE_REMEDY}"
    return None


def uses_own_server(options: AgentbenchOptions) -> bool:
    """Whether the session's device needs the session's own adb server (not only servers named HOST:PORT)."""
    sim_count, entries = parse_device_entries(options.device)
    return bool(sim_count) or not entries or any(entry.endpoint is None for entry in entries)


def check_before_collection(config: pytest.Config, options: AgentbenchOptions, *, pinnable: bool,
                            environ: Mapping[str, str] | None = None) -> Adb | None:
    """Refuse, with every reason at once, a session that names suites it cannot run.

    Returns:
        The adb client of a server this check started (the caller stops it at the end of the
        session), or None.

    Raises:
        pytest.UsageError: One message per problem, each saying what to do.
    """
    environ = os.environ if environ is None else environ
    if not uses_devices(config, options):
        return None
    norecurse = tuple(config.getini("norecursedirs") or ())
    if not names_suites(named_paths(config), options.suite_dirs, norecurse):
        return None
    problems = []
    if runs_agents(config, options):
        problems += [p for p in (agent_problem(options.claude, environ), agent_settings_problem(options.claude, environ)) if p]
    started = None
    sim_count, _ = parse_device_entries(options.device)
    if not sim_count:
        adb = Adb(AdbEndpoint.from_environ())
        try:
            if uses_own_server(options) and ensure_server(adb):
                started = adb
            problem = device_problem(options, pinnable=pinnable, adb=adb)
        except DeviceUnavailable as exc:
            problem = f"{exc}; {DEVICE_REMEDY}"
        if problem:
            problems.append(problem)
    if problems:
        if started is not None:
            started.kill_server()
        raise pytest.UsageError(*problems)
    return started
