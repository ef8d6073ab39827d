"""SIGINT, SIGTERM and SIGHUP to pytest -> a bounded shutdown: the first interrupts the session as Ctrl+C does, a second ends the process at once.

The first signal raises KeyboardInterrupt (SIGTERM and SIGHUP raise its subclass
`SessionTerminated`) in the main thread, so pytest's own interrupt path runs: the runner stops
the agent's process group (TERM, then KILL after the grace), fixtures release claims and locks
and stop what the session started (simulated phones, an adb server it started), and pytest
exits 2 (interrupted). A second signal, or the first one's shutdown outlasting
`SHUTDOWN_DEADLINE_S`, ends the process at once: every agent group is killed, the quick
clean-ups registered with `on_force_exit` run, and the process exits 2 without waiting for
anything else.

A signal that was ignored when pytest started (SIGHUP under nohup, SIGINT in a background job)
stays ignored, and a handler someone else installed is left alone.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

from pytest_agentbench.run.runner import kill_all_groups, wait_until_gone
from pytest_agentbench.run.stream import block_main_thread_signals

#: Once the first signal arrived, the process is ended by force if it still runs this long after.
SHUTDOWN_DEADLINE_S = 60.0
#: The exit status of an interrupted session (pytest's ExitCode.INTERRUPTED), forced or not.
EXIT_STATUS = 2
#: A forced exit waits this long for the killed groups to be gone (SIGKILL takes effect
#: asynchronously), so nothing of ours is left when the process has exited.
KILLED_GROUPS_WAIT_S = 1.0

_HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class SessionTerminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP reached pytest; it is handled exactly as Ctrl+C is."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"{signal.Signals(signum).name} received: stopping the agent and what the session started")


class _Guard:
    def __init__(self) -> None:
        self.depth = 0
        self.previous: dict[int, object] = {}
        self.first: int | None = None
        self.deadline_s = SHUTDOWN_DEADLINE_S
        self.watchdog: threading.Event | None = None
        self.callbacks: dict[int, Callable[[], object]] = {}
        self.tokens = itertools.count(1)
        # The terminal's stderr, kept before pytest captures fd 2 around a test: a forced exit
        # says why there, not into a capture file nobody reads.
        self.stderr_fd: int | None = None


_guard = _Guard()


def install(*, deadline_s: float = SHUTDOWN_DEADLINE_S) -> bool:
    """Take over SIGINT, SIGTERM and SIGHUP for this process (nested calls count).

    Args:
        deadline_s: How long the shutdown after a first signal may take before it is forced.

    Returns:
        False when called outside the main thread (signals can only be handled there).
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    _guard.depth += 1
    if _guard.depth > 1:
        return True
    _guard.deadline_s = deadline_s
    _guard.first = None
    with contextlib.suppress(OSError):
        _guard.stderr_fd = os.dup(2)
    for signum in _HANDLED:
        current = signal.getsignal(signum)
        ours = current is signal.default_int_handler if signum == signal.SIGINT else current == signal.SIG_DFL
        if ours:
            _guard.previous[signum] = current
            signal.signal(signum, _handle)
    return True


def uninstall() -> None:
    """Give the signals back (at the outermost call) and cancel a pending forced exit."""
    if threading.current_thread() is not threading.main_thread() or _guard.depth == 0:
        return
    _guard.depth -= 1
    if _guard.depth:
        return
    for signum, previous in _guard.previous.items():
        if signal.getsignal(signum) is _handle:
            signal.signal(signum, previous)  # type: ignore[arg-type]
    _guard.previous.clear()
    if _guard.watchdog is not None:
        _guard.watchdog.set()
        _guard.watchdog = None
    _guard.first = None
    if _guard.stderr_fd is not None:
        with contextlib.suppress(OSError):
            os.close(_guard.stderr_fd)
        _guard.stderr_fd = None


def on_force_exit(callback: Callable[[], object]) -> int:
    """Run `callback` if the process is ended by force; it must be quick and must not wait.

    Returns:
        A token for `forget`.
    """
    token = next(_guard.tokens)
    _guard.callbacks[token] = callback
    return token


def forget(token: int) -> None:
    """Drop a callback registered with `on_force_exit` (its resource was cleaned up normally)."""
    _guard.callbacks.pop(token, None)


def signal_received() -> int | None:
    """The first handled signal this session got, or None."""
    return _guard.first


def _handle(signum: int, frame: FrameType | None) -> None:
    if _guard.first is not None:
        force_exit(f"a second signal ({signal.Signals(signum).name})")
    _guard.first = signum
    cancelled = threading.Event()
    threading.Thread(target=_deadline, args=(cancelled, _guard.deadline_s), name="agentbench-shutdown-deadline", daemon=True).start()
    _guard.watchdog = cancelled
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SessionTerminated(signum)


def _deadline(cancelled: threading.Event, seconds: float) -> None:
    block_main_thread_signals()
    if not cancelled.wait(seconds):
        force_exit(f"the shutdown took longer than {seconds:g} s")


def force_exit(why: str) -> None:
    """Kill every agent group, run the registered quick clean-ups, and exit the process now."""
    killed = kill_all_groups()
    for callback in list(_guard.callbacks.values()):
        with contextlib.suppress(BaseException):
            callback()
    with contextlib.suppress(BaseException):
        wait_until_gone(killed, KILLED_GROUPS_WAIT_S)
    note = f"agentbench: {why}: killed {len(killed)} agent process group(s), exiting now\n"
    with contextlib.suppress(OSError):
        os.write(2 if _guard.stderr_fd is None else _guard.stderr_fd, note.encode())
    os._exit(EXIT_STATUS)
