"""The agent process: its own process group, streamed stdout, timeout, signals, nothing left behind."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_agentbench.errors import AgentProcessError
from pytest_agentbench.run.runner import _group_has_members, run_agent


def _script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "agent.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


def _alive(pid: int) -> bool:
    # A killed orphan may linger as a zombie until init reaps it; that is not a running process.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _run(tmp_path: Path, argv: list[str], *, timeout_s: float = 30, prompt: str = "hello") -> tuple:
    out, err = tmp_path / "claude.jsonl", tmp_path / "claude.stderr"
    result = run_agent(argv, env=dict(os.environ), cwd=tmp_path, prompt=prompt, stdout_path=out,
                       stderr_path=err, timeout_s=timeout_s, grace_s=1)
    return result, out.read_text(), err.read_text()


def test_prompt_goes_to_stdin_and_streams_are_kept(tmp_path):
    argv = _script(tmp_path, """
        import sys
        prompt = sys.stdin.read()
        print('{"type": "echo", "prompt": %r}' % prompt)
        print("warning", file=sys.stderr)
    """)
    result, out, err = _run(tmp_path, argv, prompt="do the task")
    assert result.exit_code == 0 and not result.timed_out and result.signal is None
    assert "do the task" in out
    assert err.strip() == "warning"


def test_non_zero_exit_is_reported(tmp_path):
    result, _, _ = _run(tmp_path, _script(tmp_path, "raise SystemExit(3)"))
    assert result.exit_code == 3


def test_timeout_stops_the_whole_group_including_grandchildren(tmp_path):
    pid_file = tmp_path / "child.pid"
    argv = _script(tmp_path, f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        print("started", flush=True)
        time.sleep(600)
    """)
    result, out, _ = _run(tmp_path, argv, timeout_s=2)
    assert result.timed_out
    assert result.signal == signal.SIGTERM
    assert "started" in out, "output streamed before the timeout is kept"
    assert not _alive(int(pid_file.read_text()))


def test_leftover_children_are_stopped_after_a_normal_exit(tmp_path):
    pid_file = tmp_path / "server.pid"
    argv = _script(tmp_path, f"""
        import subprocess, sys
        server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pid_file)!r}, "w").write(str(server.pid))
    """)
    result, _, _ = _run(tmp_path, argv)
    assert result.exit_code == 0
    server = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not _alive(server):
            break
        time.sleep(0.05)
    else:
        pytest.fail("the MCP-server-like child outlived the agent")


def test_term_ignoring_agent_is_killed(tmp_path):
    argv = _script(tmp_path, """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ready", flush=True)
        time.sleep(600)
    """)
    result, _, _ = _run(tmp_path, argv, timeout_s=1.5)
    assert result.timed_out and result.signal == signal.SIGKILL


def test_agent_killed_by_a_signal(tmp_path):
    result, _, _ = _run(tmp_path, _script(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
    assert result.exit_code is None and result.signal == signal.SIGKILL and not result.timed_out


def test_missing_command_is_a_clear_error(tmp_path):
    with pytest.raises(AgentProcessError, match="could not start the agent command"):
        _run(tmp_path, [str(tmp_path / "no-such-agent")])


def test_agent_that_never_reads_stdin(tmp_path):
    result, _, _ = _run(tmp_path, _script(tmp_path, "pass"), prompt="x" * 1_000_000)
    assert result.exit_code == 0


def test_group_membership_ignores_unrelated_groups():
    assert not _group_has_members(2**22 + 12345)
