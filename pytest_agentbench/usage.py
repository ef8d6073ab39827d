"""The command line + this machine -> which suites it names, and the usage errors found before collection: the agent program, its settings, the device.

A benchmark that cannot run should say so once, before anything is collected, not as one
error per suite after each suite's preflight. Every check here runs only for a session that
names suites (`pytest benchmark/`, a suite file) and will run them: a dry run, a re-render,
an informational command (`--collect-only`, `--fixtures`, `--markers`, `--help`) and the
project's own `pytest tests/` are never refused for want of a phone, an agent or a sandbox.

The entry point imports this module for `named_paths` and `names_suites` (wake.py), so the
device layer and the run stage are imported only inside the checks that need them.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_agentbench.device.adb import Adb
    from pytest_agentbench.options import AgentbenchOptions

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


#: pytest's options (their dests) that print something and run no test: they need no agent, device or sandbox.
INFORMATIONAL = ("collectonly", "showfixtures", "show_fixtures_per_test", "markers", "help", "version")


def informational(config: pytest.Config) -> bool:
    """Whether the command only shows something (`--co`, `--fixtures`, `--fixtures-per-test`, `--markers`, `--help`, `--version`)."""
    return any(getattr(config.option, dest, False) for dest in INFORMATIONAL)


def uses_devices(config: pytest.Config, options: AgentbenchOptions) -> bool:
    """Whether this session drives devices (not a dry run, a re-render or an informational command)."""
    return not (options.dry_run or options.from_results or informational(config))


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
    ours = console_scripts()
    close = difflib.get_close_matches(command, sorted(set(ours) | set(path_programs(environ))), n=1, cutoff=0.8)
    hint = ""
    if command == "claude":
        hint = ": install Claude Code (`npm install -g @anthropic-ai/claude-code`),"
    elif command in ours:
        hint = ": it is this package's console script, so activate the virtualenv it is installed in, pass its full path,"
    elif close:
        # A typo of a program that exists (`agentbench-replai`): name it rather than send the user to their virtualenv.
        return f"the agent program {command!r} (--claude) is not on PATH: did you mean `--claude {close[0]}`?"
    return (f"the agent program {command!r} (--claude) is not on PATH{hint} or pass another agent with --claude "
            "(without a model, `--claude agentbench-replay` plays each suite's scripted plan)")


def console_scripts() -> tuple[str, ...]:
    """This package's console scripts (`agentbench-replay`, `agentbench-agent`, ...), from its installed metadata."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        entry_points = distribution("pytest-agentbench").entry_points
    except PackageNotFoundError:
        return ()
    return tuple(entry.name for entry in entry_points if entry.group == "console_scripts")


def path_programs(environ: Mapping[str, str]) -> set[str]:
    """The names of the executables on PATH (what a mistyped `--claude` is compared with)."""
    names: set[str] = set()
    for directory in (environ.get("PATH") or "").split(os.pathsep):
        try:
            with os.scandir(directory or ".") as entries:
                names |= {entry.name for entry in entries if entry.is_file() and os.access(entry.path, os.X_OK)}
        except OSError:
            continue
    return names


def agent_settings_problem(command: str, environ: Mapping[str, str], model: str | None = None) -> str | None:
    """Why the agent's required settings are missing or malformed, or its model server does not answer (agentbench-agent's endpoint), or None."""
    from pytest_agentbench.run.execute import agent_kind

    if agent_kind(command) != "openai":
        return None
    # Imported only here: the endpoint module pulls in the OpenAI client.
    from pytest_agentbench.agents.model.endpoint import EndpointConfig, EndpointConfigError, endpoint_problem

    try:
        config = EndpointConfig.from_environ(environ)
    except EndpointConfigError as exc:
        return f"the agent {command} (--claude) needs its model endpoint: {exc} (docs/agents.md)"
    problem = endpoint_problem(config, model)
    return f"the agent {command} (--claude): {problem}" if problem else None


def device_problem(options: AgentbenchOptions, *, pinnable: bool, adb: Adb) -> str | None:
    """Why the session's `--device` has no phone to run on, or None (simulated phones always have one).

    The session's adb server must already run (see `ensure_server`); servers named by
    `HOST:PORT/SERIAL` are asked as they are.
    """
    from pytest_agentbench.device.pool import candidates_for
    from pytest_agentbench.device.selection import parse_device_entries
    from pytest_agentbench.errors import DeviceUnavailable

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
    from pytest_agentbench.device.selection import parse_device_entries

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
        problems += [p for p in (agent_problem(options.claude, environ), agent_settings_problem(options.claude, environ, options.model),
                                 sandbox_problem(options)) if p]
        if not problems:
            problems += confined_agent_problems(options, environ, project_root=Path(config.rootpath))
    started, problem = _session_server(options, pinnable=pinnable)
    if problem:
        problems.append(problem)
    if problems:
        if started is not None:
            from pytest_agentbench.device.pool import stop_server

            stop_server(started)
        raise pytest.UsageError(*problems)
    return started


def sandbox_problem(options: AgentbenchOptions) -> str | None:
    """Why `--agentbench-sandbox on` cannot be had here, or None; the one place a session that runs agents probes bwrap early."""
    resolve = getattr(options.sandbox, "resolve", None)
    if resolve is None:
        return None
    try:
        resolve()
    except ValueError as exc:
        return str(exc)
    return None


def confined_agent_problems(options: AgentbenchOptions, environ: Mapping[str, str], *, project_root: Path) -> list[str]:
    """Why a confined agent could not run here although bwrap can: its program hidden, or its sign-in about to end."""
    mode = options.sandbox
    try:
        if not mode.on:
            return []
    except ValueError:
        return []  # sandbox_problem said it
    from pytest_agentbench.run.execute import agent_kind, find_sign_in, unshowable_program

    problems = []
    tree = unshowable_program(options.claude, environ, [project_root, options.output])
    if tree is not None:
        problems.append(f"the agent program {options.claude} (--claude) runs from its package {tree}, which holds the project or "
                        "the output tree that a confined agent must not see: install it outside them (for an npm package, "
                        "`npm install --prefix ~/.local/share/agentbench-agents PACKAGE`) or run with --agentbench-sandbox off "
                        "(unconfined, flagged in every result)")
    if agent_kind(options.claude) == "claude":
        sign_in = find_sign_in(environ)
        problem = sign_in.problem() if sign_in is not None else None
        if problem:
            problems.append(problem)
    return problems


def _session_server(options: AgentbenchOptions, *, pinnable: bool) -> tuple[Adb | None, str | None]:
    """The session's own adb server, answering (started when none listens), and why its devices cannot be had, or None.

    A stuck server is named here, once, rather than as `stopped answering` in every run.
    """
    from pytest_agentbench.device.adb import Adb, AdbEndpoint
    from pytest_agentbench.device.pool import ensure_answering, ensure_server
    from pytest_agentbench.device.selection import parse_device_entries
    from pytest_agentbench.errors import DeviceUnavailable

    adb = Adb(AdbEndpoint.from_environ())
    sim_count, _ = parse_device_entries(options.device)
    started = None
    if uses_own_server(options):
        # Simulated phones need no device listed: the pool starts the server with them, so only a stuck one is looked at here.
        try:
            started = adb if (ensure_answering(adb) if sim_count else ensure_server(adb)) else None
        except DeviceUnavailable as exc:
            return None, str(exc)
    if sim_count:
        return started, None
    try:
        return started, device_problem(options, pinnable=pinnable, adb=adb)
    except DeviceUnavailable as exc:
        return started, f"{exc}; {DEVICE_REMEDY}"
