"""The session guard in tests/conftest.py: a process a test leaves running (its own group, or daemonized) fails the session by name; a stopped one does not."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")

LEAVES_A_GROUP = """
import subprocess, sys
def test_starts_a_server(tmp_path_factory):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "left-in-its-group"], start_new_session=True)
    open({pids!r}, "a").write(f"{{proc.pid}}\\n")
"""

DAEMONIZES = """
import os, subprocess, sys, time
def test_starts_a_daemon():
    # Double fork: the daemon is re-parented away from pytest, as `adb start-server` does.
    code = "import os, sys, time\\nif os.fork(): sys.exit(0)\\nos.setsid()\\nopen(%r, 'a').write(str(os.getpid()) + '\\\\n')\\ntime.sleep(120)\\n" % {pids!r}
    subprocess.run([sys.executable, "-c", code, "daemonized"], check=True)
    deadline = time.monotonic() + 30
    while not open({pids!r}).read().strip() and time.monotonic() < deadline:
        time.sleep(0.05)
"""

STOPS_IT = """
import subprocess, sys
def test_starts_and_stops():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    proc.kill()
    proc.wait()
"""


@pytest.mark.parametrize(
    ("body", "leaked", "named"),
    [(LEAVES_A_GROUP, True, "left-in-its-group"), (DAEMONIZES, True, "os.setsid()"), (STOPS_IT, False, "")],
    ids=["own-group-left", "daemon-left", "stopped"],
)
def test_guard_fails_the_session_for_a_leftover(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, body: str, leaked: bool,
                                               named: str) -> None:
    # The conftest registers the shared fixtures from the helpers beside it (adbserver, ...).
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(CONFTEST.parent), os.environ.get("PYTHONPATH")])))
    pids = pytester.path / "pids.txt"
    pids.write_text("", encoding="utf-8")
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8").replace("SETTLE_S = 10.0", "SETTLE_S = 1.0"))
    pytester.makepyfile(test_leak=body.format(pids=str(pids)))
    try:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    finally:
        for pid in pids.read_text(encoding="utf-8").split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
    output = result.stdout.str()
    if leaked:
        assert result.ret == 1, output
        assert "processes started by the tests are still alive after the session" in output
        assert named in output, output
    else:
        assert result.ret == 0, output
        assert "still alive" not in output
