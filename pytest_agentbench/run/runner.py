"""Agent argv + env -> a finished process in its own process group: stdin prompt, its stream on disk with arrival times, and how and why it ended.

The runner owns the agent's process group (and so the MCP server the agent starts): it stops the
group when the agent exits, at `timeoutSeconds`, when the stream has been silent for
`idleTimeoutSeconds`, a few seconds after the `result` event if the agent lingers, and on
Ctrl+C/SIGTERM. Every wait here has a bound.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.errors import AgentProcessError, AgentStreamError
from pytest_agentbench.records.run import ProcessOutcome
from pytest_agentbench.run.stream import StreamRecorder, block_main_thread_signals

#: Seconds between SIGTERM and SIGKILL when a process group is stopped.
DEFAULT_GRACE_SECONDS = 5.0
#: Seconds an agent may go on living after its `result` event before the harness ends its group.
AFTER_RESULT_GRACE_SECONDS = 5.0
#: How often the runner looks at the process, the clocks and the stream.
_TICK_S = 0.1
#: How long the reader may take to drain the pipe once the group is gone.
_DRAIN_S = 5.0

_live_groups: set[int] = set()
_live_lock = threading.Lock()


@dataclass(frozen=True)
class StreamProgress:
    """The stream so far, as the runner reports it while the agent runs."""

    tool_calls: int
    lines: int
    seconds: float


@dataclass(frozen=True)
class AgentExit:
    """How the agent process ended.

    Attributes:
        exit_code: The exit status, or None when the process was killed by a signal.
        signal: The signal that ended it, if any (our own TERM/KILL after a timeout included).
        timed_out: True when `timeoutSeconds` ran out and the harness stopped the group.
        interrupted: True when Ctrl+C (or pytest's exit) stopped the run.
        wall_clock_seconds: From spawn to exit; covers only the agent step.
        stopped_because: Why the harness ended the run early (no output for N s), else None.
        ended_after_result: The harness ended the group after the stream's `result` event,
            because the agent lingered; the run had finished, the signal is the harness's.
        stream_cut: The pipe was still held open (by a process that left the group) when the
            reader stopped; the transcript has everything up to then.
    """

    exit_code: int | None
    signal: int | None
    timed_out: bool
    interrupted: bool
    wall_clock_seconds: float
    stopped_because: str | None = None
    ended_after_result: bool = False
    stream_cut: bool = False

    @property
    def outcome(self) -> ProcessOutcome:
        """The audit's view of this exit (`records.run.ProcessOutcome`)."""
        return ProcessOutcome(
            exit_code=self.exit_code, timed_out=self.timed_out, signal=self.signal,
            wall_clock_seconds=self.wall_clock_seconds, stopped_because=self.stopped_because,
            ended_after_result=self.ended_after_result,
        )


def track_group(pgid: int) -> None:
    """Count a process group the harness started (an MCP server behind the relay) among those
    `stop_all_groups` and `kill_all_groups` end, until `stop_process_group` stops it."""
    with _live_lock:
        _live_groups.add(pgid)


def stop_process_group(pgid: int, *, grace_s: float = DEFAULT_GRACE_SECONDS) -> None:
    """TERM a whole process group, then KILL what is left after `grace_s` seconds.

    A KeyboardInterrupt during the grace (a second Ctrl+C) kills the group at once and is
    re-raised.

    Args:
        pgid: The process group id (the leader's pid, as `start_new_session` makes it).
        grace_s: How long the group gets to exit after SIGTERM.
    """
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        _forget(pgid)
        return
    try:
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if not _group_alive(pgid):
                _forget(pgid)
                return
            time.sleep(0.05)
    except KeyboardInterrupt:
        _kill_group(pgid)
        raise
    _kill_group(pgid)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    _forget(pgid)


def stop_all_groups() -> None:
    """Stop every process group this module started and has not yet stopped (pytest exit, Ctrl+C)."""
    with _live_lock:
        groups = list(_live_groups)
    for pgid in groups:
        stop_process_group(pgid, grace_s=1.0)


def kill_all_groups() -> list[int]:
    """SIGKILL every live agent group now, without waiting (a second signal: end at once).

    Safe to call from a signal handler: it takes no lock (the handler may interrupt a holder).

    Returns:
        The groups that were signalled.
    """
    for _ in range(3):
        try:
            groups = tuple(_live_groups)
            break
        except RuntimeError:  # the set changed size while it was copied
            continue
    else:
        groups = ()
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    return list(groups)


def wait_until_gone(groups: Sequence[int], timeout_s: float) -> bool:
    """Wait up to `timeout_s` for killed groups to have no live member (death is asynchronous).

    Returns:
        True when every group is gone.
    """
    deadline = time.monotonic() + timeout_s
    while any(_group_alive(pgid) for pgid in groups):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def live_groups() -> frozenset[int]:
    """The agent process groups started and not yet stopped."""
    with _live_lock:
        return frozenset(_live_groups)


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
    timing_path: Path | None = None,
    idle_timeout_s: float | None = None,
    after_result_grace_s: float = AFTER_RESULT_GRACE_SECONDS,
    on_progress: Callable[[StreamProgress], None] | None = None,
    pass_fds: Sequence[int] = (),
    on_started: Callable[[], None] | None = None,
) -> AgentExit:
    """Run the agent command to completion in its own process group.

    The prompt goes to stdin (from a thread, so an agent that never reads it cannot block us);
    stdout is read through a pipe and written to `stdout_path` chunk by chunk as it arrives (so a
    crash keeps everything streamed so far), each line's arrival time to `timing_path`; stderr
    goes to `stderr_path`. When the agent exits, whatever it left running in its group (an MCP
    server) is stopped.

    Args:
        argv: The full command line; argv[0] is the agent executable.
        env: The complete environment for the agent (already scrubbed).
        cwd: The empty working directory the agent runs in.
        prompt: Text written to the agent's stdin.
        stdout_path: Where stream-json goes (`claude.jsonl`).
        stderr_path: Where stderr goes (`claude.stderr`).
        timeout_s: `timeoutSeconds`: the group is stopped when it runs out.
        grace_s: Seconds between TERM and KILL.
        timing_path: The timing sidecar (`claude.timing.jsonl`), or None for none.
        idle_timeout_s: `idleTimeoutSeconds`: the group is stopped when the stream has been
            silent this long (None: never).
        after_result_grace_s: Seconds the agent may live on after its `result` event.
        on_progress: Called from this thread about ten times a second while the agent runs.
        pass_fds: File descriptors the child keeps (the sandbox's `--info-fd`).
        on_started: Called once the process exists (the sandbox closes its fd copies).

    Returns:
        An AgentExit.

    Raises:
        AgentProcessError: The command could not be started at all.
        KeyboardInterrupt: Re-raised after the group was stopped (Ctrl+C, SIGTERM, SIGHUP).
    """
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    try:
        with open(stderr_path, "wb") as err:
            proc = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE, stdout=write_fd, stderr=err,
                cwd=str(cwd), env=dict(env), start_new_session=True, pass_fds=tuple(pass_fds),
            )
    except OSError as exc:
        os.close(read_fd)
        stdout_path.write_bytes(b"")
        raise AgentProcessError(
            f"could not start the agent command {argv[0]!r}: {exc.strerror or exc}. "
            "Check --claude (an executable on PATH or an absolute path)."
        ) from exc
    finally:
        os.close(write_fd)
    with _live_lock:
        _live_groups.add(proc.pid)
    if on_started is not None:
        on_started()
    recorder = StreamRecorder(read_fd, stdout_path, timing_path, started=started).start()
    threading.Thread(target=_write_prompt, args=(proc, prompt), name="agentbench-prompt", daemon=True).start()
    ended = _Ending()
    try:
        _watch(proc, recorder, ended, started=started, timeout_s=timeout_s, idle_timeout_s=idle_timeout_s,
               after_result_grace_s=after_result_grace_s, on_progress=on_progress)
    except KeyboardInterrupt:
        ended.interrupted = True
        raise
    finally:
        wall = time.monotonic() - started
        # Always end the group: on timeout and Ctrl+C the agent itself, and on a normal exit
        # whatever it left behind (its MCP server, a wrapper's children).
        stop_process_group(proc.pid, grace_s=grace_s)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s + 5)
        complete = recorder.finish(_DRAIN_S)
    if recorder.error is not None:
        raise AgentStreamError(f"could not write the agent's stream to {stdout_path}: {recorder.error}") from recorder.error
    code = proc.returncode
    return AgentExit(
        exit_code=code if code is not None and code >= 0 else None,
        signal=-code if code is not None and code < 0 else None,
        timed_out=ended.timed_out,
        interrupted=ended.interrupted,
        wall_clock_seconds=round(wall, 3),
        stopped_because=ended.stopped_because,
        ended_after_result=ended.after_result,
        stream_cut=not complete,
    )


@dataclass
class _Ending:
    timed_out: bool = False
    interrupted: bool = False
    after_result: bool = False
    stopped_because: str | None = None


def _watch(proc: subprocess.Popen, recorder: StreamRecorder, ended: _Ending, *, started: float, timeout_s: float,
           idle_timeout_s: float | None, after_result_grace_s: float,
           on_progress: Callable[[StreamProgress], None] | None) -> None:
    """Wait until the agent exits or the harness must end it; say which in `ended`."""
    while True:
        try:
            proc.wait(timeout=_TICK_S)
            return
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic() - started
        if now >= timeout_s:
            ended.timed_out = True
            return
        if recorder.result_at is not None:
            if now - recorder.result_at >= after_result_grace_s:
                ended.after_result = True
                return
        elif idle_timeout_s is not None and now - (recorder.last_output_at or 0.0) >= idle_timeout_s:
            ended.stopped_because = f"no output for {idle_timeout_s:g} s (claude.idleTimeoutSeconds)"
            return
        if on_progress is not None:
            try:
                on_progress(StreamProgress(tool_calls=recorder.tool_calls, lines=recorder.lines, seconds=round(now, 1)))
            except Exception:  # noqa: BLE001 - a display problem must not end a run
                on_progress = None


def _write_prompt(proc: subprocess.Popen, prompt: str) -> None:
    block_main_thread_signals()
    assert proc.stdin is not None
    try:
        proc.stdin.write(prompt.encode("utf-8"))
        proc.stdin.close()
    except (BrokenPipeError, OSError, ValueError):
        # The agent exited before reading its prompt; its exit status tells the story.
        pass
