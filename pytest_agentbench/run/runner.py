"""Agent argv + env -> a finished process in its own process group, with its streams on disk and its wall clock."""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from pytest_agentbench.errors import AgentProcessError

#: Seconds between SIGTERM and SIGKILL when a process group is stopped.
DEFAULT_GRACE_SECONDS = 5.0

_live_groups: set[int] = set()
_live_lock = threading.Lock()


@dataclass(frozen=True)
class AgentExit:
    """How the agent process ended.

    Attributes:
        exit_code: The exit status, or None when the process was killed by a signal.
        signal: The signal that ended it, if any (our own TERM/KILL after a timeout included).
        timed_out: True when `timeoutSeconds` ran out and the harness stopped the group.
        interrupted: True when Ctrl+C (or pytest's exit) stopped the run.
        wall_clock_seconds: From spawn to exit; covers only the agent step.
    """

    exit_code: int | None
    signal: int | None
    timed_out: bool
    interrupted: bool
    wall_clock_seconds: float


def stop_process_group(pgid: int, *, grace_s: float = DEFAULT_GRACE_SECONDS) -> None:
    """TERM a whole process group, then KILL what is left after `grace_s` seconds.

    Args:
        pgid: The process group id (the leader's pid, as `start_new_session` makes it).
        grace_s: How long the group gets to exit after SIGTERM.
    """
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        _forget(pgid)
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            _forget(pgid)
            return
        time.sleep(0.05)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _forget(pgid)


def stop_all_groups() -> None:
    """Stop every process group this module started and has not yet stopped (pytest exit, Ctrl+C)."""
    with _live_lock:
        groups = list(_live_groups)
    for pgid in groups:
        stop_process_group(pgid, grace_s=1.0)


atexit.register(stop_all_groups)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # killpg succeeds while an unreaped (zombie) leader remains; only live members count.
    # The leader is never reaped here: that would steal its exit status from Popen.
    return _group_has_members(pgid)


def _group_has_members(pgid: int) -> bool:
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the command name: state ppid pgrp ...; the name may hold spaces.
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _forget(pgid: int) -> None:
    with _live_lock:
        _live_groups.discard(pgid)


def run_agent(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    prompt: str,
    stdout_path: Path,
    stderr_path: Path,
    timeout_s: float,
    grace_s: float = DEFAULT_GRACE_SECONDS,
) -> AgentExit:
    """Run the agent command to completion in its own process group.

    The prompt goes to stdin; stdout is written straight to `stdout_path` as the agent
    produces it (so a crash keeps everything streamed so far), stderr to `stderr_path`.
    When the agent exits, whatever it left running in its group (an MCP server) is stopped.

    Args:
        argv: The full command line; argv[0] is the agent executable.
        env: The complete environment for the agent (already scrubbed).
        cwd: The empty working directory the agent runs in.
        prompt: Text written to the agent's stdin.
        stdout_path: Where stream-json goes (`claude.jsonl`).
        stderr_path: Where stderr goes (`claude.stderr`).
        timeout_s: `timeoutSeconds`: the group is stopped when it runs out.
        grace_s: Seconds between TERM and KILL.

    Returns:
        An AgentExit.

    Raises:
        AgentProcessError: The command could not be started at all.
        KeyboardInterrupt: Re-raised after the group was stopped.
    """
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                cwd=str(cwd),
                env=dict(env),
                start_new_session=True,
            )
        except OSError as exc:
            raise AgentProcessError(
                f"could not start the agent command {argv[0]!r}: {exc.strerror or exc}. "
                "Check --claude (an executable on PATH or an absolute path)."
            ) from exc
        with _live_lock:
            _live_groups.add(proc.pid)
        timed_out = interrupted = False
        try:
            _write_prompt(proc, prompt)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            wall = time.monotonic() - started
            # Always end the group: on timeout and Ctrl+C the agent itself, and on a normal exit
            # whatever it left behind (its MCP server, a wrapper's children).
            stop_process_group(proc.pid, grace_s=grace_s)
            try:
                proc.wait(timeout=grace_s + 5)
            except subprocess.TimeoutExpired:  # pragma: no cover - KILL cannot be ignored
                pass
    code = proc.returncode
    return AgentExit(
        exit_code=code if code is not None and code >= 0 else None,
        signal=-code if code is not None and code < 0 else None,
        timed_out=timed_out,
        interrupted=interrupted,
        wall_clock_seconds=round(wall, 3),
    )


def _write_prompt(proc: subprocess.Popen, prompt: str) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(prompt.encode("utf-8"))
        proc.stdin.close()
    except BrokenPipeError:
        # The agent exited before reading its prompt; its exit status tells the story.
        pass
