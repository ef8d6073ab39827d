"""Signals to the harness (run/shutdown.py): the first interrupts as Ctrl+C does, a second or a stuck shutdown ends the process at once; ignored signals stay ignored.

Each case is a small Python process (signals are per process), started with default dispositions.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_agentbench.run.shutdown import EXIT_STATUS

PRELUDE = """
import os, signal, sys, time
from pathlib import Path
from pytest_agentbench.run import shutdown
ran = Path(sys.argv[1])
"""


def _defaults() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def run(tmp_path: Path, body: str, *, preexec=_defaults) -> tuple[subprocess.CompletedProcess[str], float]:
    script = tmp_path / "case.py"
    script.write_text(PRELUDE + textwrap.dedent(body), encoding="utf-8")
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "ran")], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, preexec_fn=preexec)
    return done, time.monotonic() - started


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_the_first_signal_raises_keyboard_interrupt(tmp_path: Path, signum: int) -> None:
    done, _ = run(tmp_path, f"""
        shutdown.install()
        try:
            os.kill(os.getpid(), {int(signum)})
            time.sleep(5)
            print("not interrupted")
        except KeyboardInterrupt as exc:
            print(type(exc).__name__, exc, shutdown.signal_received())
        shutdown.uninstall()
        print("restored", signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    """)
    assert done.returncode == 0, done.stderr
    name = signal.Signals(signum).name
    first = "KeyboardInterrupt  2" if signum == signal.SIGINT else f"SessionTerminated {name} received: stopping the agent and what the session started {int(signum)}"
    assert done.stdout.splitlines() == [first, "restored True True"]


def test_a_second_signal_runs_the_quick_cleanups_and_exits_at_once(tmp_path: Path) -> None:
    done, took = run(tmp_path, """
        shutdown.install()
        shutdown.on_force_exit(lambda: ran.write_text("cleaned"))
        forgotten = shutdown.on_force_exit(lambda: ran.write_text("forgotten ran"))
        shutdown.forget(forgotten)
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except KeyboardInterrupt:
            # The interrupted session's own shutdown is slow; the user signals again.
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)
        print("never")
    """)
    assert done.returncode == EXIT_STATUS
    assert "never" not in done.stdout
    assert "agentbench: a second signal (SIGINT): killed 0 agent process group(s), exiting now" in done.stderr
    assert (tmp_path / "ran").read_text() == "cleaned"
    assert took < 20


def test_a_shutdown_that_outlasts_the_deadline_is_forced(tmp_path: Path) -> None:
    done, took = run(tmp_path, """
        shutdown.install(deadline_s=0.5)
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except KeyboardInterrupt:
            time.sleep(30)  # a teardown that never ends
        print("never")
    """)
    assert done.returncode == EXIT_STATUS
    assert "the shutdown took longer than 0.5 s" in done.stderr
    assert took < 20


def test_uninstall_cancels_the_deadline(tmp_path: Path) -> None:
    done, _ = run(tmp_path, """
        shutdown.install(deadline_s=0.3)
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except KeyboardInterrupt:
            shutdown.uninstall()
        time.sleep(1)
        print("finished normally")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "finished normally", done.stderr


def _ignore_hup_and_int() -> None:
    _defaults()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # nohup
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job


def test_signals_ignored_at_start_stay_ignored(tmp_path: Path) -> None:
    done, _ = run(tmp_path, """
        shutdown.install()
        os.kill(os.getpid(), signal.SIGHUP)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        print(signal.getsignal(signal.SIGHUP) == signal.SIG_IGN, signal.getsignal(signal.SIGINT) == signal.SIG_IGN,
              signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)
    """, preexec=_ignore_hup_and_int)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True"]


def test_nested_installs_keep_the_handlers_until_the_outermost_uninstall(tmp_path: Path) -> None:
    done, _ = run(tmp_path, """
        shutdown.install()
        shutdown.install()   # an in-process pytester session inside a session
        shutdown.uninstall()
        print(signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)
        shutdown.uninstall()
        print(signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)
    """)
    assert done.stdout.split() == ["True", "True"], done.stderr
