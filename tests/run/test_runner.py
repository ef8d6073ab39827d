"""The agent process: its own process group, streamed stdout with arrival times, timeout, idle timeout, lingering after the result, signals, nothing left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from pytest_agentbench.errors import AgentProcessError
from pytest_agentbench.run import runner
from pytest_agentbench.run.runner import StreamProgress, _group_has_members, run_agent
from pytest_agentbench.run.stream import read_arrivals


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


# ----------------------------------------------------------------------------- streaming, idle, linger


RESULT_LINE = '{"type": "result", "subtype": "success", "is_error": false, "result": "done"}'
TOOL_USE_LINE = ('{"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t1", '
                 '"name": "mcp__agentbench__observe", "input": {}}, {"type": "tool_use", "id": "t2", "name": "x", "input": {}}]}}')


def _run_with(tmp_path: Path, argv: list[str], **kwargs) -> tuple:
    out, err, timing = tmp_path / "claude.jsonl", tmp_path / "claude.stderr", tmp_path / "claude.timing.jsonl"
    options = {"timeout_s": 60, "grace_s": 1, **kwargs}
    result = run_agent(argv, env=dict(os.environ), cwd=tmp_path, prompt="hello", stdout_path=out,
                       stderr_path=err, timing_path=timing, **options)
    return result, out.read_bytes(), read_arrivals(timing)


def test_stream_is_kept_byte_for_byte_with_an_arrival_time_per_line(tmp_path):
    argv = _script(tmp_path, """
        import sys, time
        sys.stdout.write('{"type": "system", "subtype": "init"}\\n')
        sys.stdout.flush()
        time.sleep(0.3)
        sys.stdout.write('{"type": "assistant", "message": {}}\\nno newline at the end')
        sys.stdout.flush()
    """)
    result, out, arrivals = _run_with(tmp_path, argv)
    assert result.exit_code == 0 and not result.stream_cut
    assert out == b'{"type": "system", "subtype": "init"}\n{"type": "assistant", "message": {}}\nno newline at the end'
    assert sorted(arrivals) == [1, 2, 3]
    assert 0 < arrivals[1] <= arrivals[2] - 0.25 <= arrivals[3] - 0.25 <= result.wall_clock_seconds


def test_an_agent_lingering_after_its_result_is_ended_after_the_grace(tmp_path):
    argv = _script(tmp_path, f"""
        import sys, time
        print({RESULT_LINE!r}, flush=True)
        time.sleep(600)
    """)
    started = time.monotonic()
    result, _, arrivals = _run_with(tmp_path, argv, after_result_grace_s=0.5)
    assert result.ended_after_result and result.signal == signal.SIGTERM and not result.timed_out
    assert result.stopped_because is None
    assert result.outcome.ended_after_result
    assert arrivals[1] + 0.5 <= result.wall_clock_seconds < time.monotonic() - started


def test_an_agent_exiting_soon_after_its_result_is_not_ended_by_the_harness(tmp_path):
    argv = _script(tmp_path, f"""
        import time
        print({RESULT_LINE!r}, flush=True)
        time.sleep(0.2)
    """)
    result, _, _ = _run_with(tmp_path, argv, after_result_grace_s=5)
    assert result.exit_code == 0 and not result.ended_after_result


def test_a_silent_agent_is_stopped_at_the_idle_timeout(tmp_path):
    argv = _script(tmp_path, """
        import time
        print('{"type": "system", "subtype": "init"}', flush=True)
        time.sleep(600)
    """)
    result, _, arrivals = _run_with(tmp_path, argv, idle_timeout_s=0.5)
    assert result.stopped_because == "no output for 0.5 s (claude.idleTimeoutSeconds)"
    assert not result.timed_out and result.signal == signal.SIGTERM
    assert result.wall_clock_seconds >= arrivals[1] + 0.5


def test_an_agent_that_keeps_talking_is_not_idle(tmp_path):
    argv = _script(tmp_path, """
        import time
        for n in range(12):
            print('{"type": "system", "subtype": "tick"}', flush=True)
            time.sleep(0.1)
    """)
    result, _, arrivals = _run_with(tmp_path, argv, idle_timeout_s=0.6)
    assert result.exit_code == 0 and result.stopped_because is None and len(arrivals) == 12


def test_progress_reports_tool_calls_as_they_stream(tmp_path):
    argv = _script(tmp_path, f"""
        import time
        print({TOOL_USE_LINE!r}, flush=True)
        time.sleep(0.5)
        print({TOOL_USE_LINE!r}, flush=True)
        time.sleep(0.5)
    """)
    seen: list[StreamProgress] = []
    result, _, _ = _run_with(tmp_path, argv, on_progress=seen.append)
    assert result.exit_code == 0
    counts = [progress.tool_calls for progress in seen]
    assert counts == sorted(counts) and counts[0] in (0, 2) and counts[-1] == 4, counts
    assert all(later.seconds >= earlier.seconds for earlier, later in zip(seen, seen[1:]))


def test_a_failing_progress_callback_does_not_end_the_run(tmp_path):
    def broken(progress: StreamProgress) -> None:
        raise RuntimeError("display broke")

    result, _, _ = _run_with(tmp_path, _script(tmp_path, "import time; time.sleep(0.4)"), on_progress=broken)
    assert result.exit_code == 0


@pytest.mark.timeout(120)
def test_a_big_prompt_to_an_agent_that_never_reads_it_still_times_out(tmp_path):
    # The prompt does not fit the pipe: writing it must not block the runner past timeoutSeconds.
    argv = _script(tmp_path, "import time; time.sleep(600)")
    started = time.monotonic()
    out, err = tmp_path / "claude.jsonl", tmp_path / "claude.stderr"
    result = run_agent(argv, env=dict(os.environ), cwd=tmp_path, prompt="x" * 4_000_000, stdout_path=out,
                       stderr_path=err, timeout_s=1, grace_s=1)
    assert result.timed_out
    assert time.monotonic() - started < 60


@pytest.mark.timeout(120)
def test_a_detached_process_holding_stdout_does_not_keep_the_run_waiting(tmp_path):
    pid_file = tmp_path / "daemon.pid"
    argv = _script(tmp_path, f"""
        import subprocess, sys
        # Leaves the group (new session) but keeps our stdout: a daemon that detached.
        daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
        open({str(pid_file)!r}, "w").write(str(daemon.pid))
        print('{{"type": "system", "subtype": "init"}}', flush=True)
    """)
    try:
        result, out, _ = _run_with(tmp_path, argv)
        assert result.exit_code == 0 and result.stream_cut
        assert out == b'{"type": "system", "subtype": "init"}\n'
    finally:
        os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_a_second_interrupt_during_the_grace_kills_the_group_at_once(tmp_path, monkeypatch):
    proc = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(600)"],
        start_new_session=True, stdout=subprocess.PIPE,
    )
    try:
        proc.stdout.readline()

        def interrupted(pgid: int) -> bool:
            # The second Ctrl+C arrives while the group gets its grace.
            raise KeyboardInterrupt

        monkeypatch.setattr(runner, "_group_alive", interrupted)
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            runner.stop_process_group(proc.pid, grace_s=30)
        monkeypatch.undo()
        assert proc.wait(timeout=10) == -signal.SIGKILL
        assert time.monotonic() - started < 10
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_kill_all_groups_kills_every_live_agent_group(tmp_path):
    pid_file = tmp_path / "agent.pid"
    argv = _script(tmp_path, f"""
        import os, time
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        time.sleep(600)
    """)
    outcome: list = []
    thread = threading.Thread(target=lambda: outcome.append(_run_with(tmp_path, argv, timeout_s=60)))
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not runner.live_groups():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert int(pid_file.read_text()) in runner.kill_all_groups()
        thread.join(30)
        (result, _, _), = outcome
        assert result.signal == signal.SIGKILL
    finally:
        runner.kill_all_groups()
        thread.join(30)


def test_wait_until_gone_waits_for_killed_groups_and_gives_up_on_live_ones():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    try:
        assert not runner.wait_until_gone([proc.pid], 0.2)
        os.killpg(proc.pid, signal.SIGKILL)
        assert runner.wait_until_gone([proc.pid], 10)
    finally:
        proc.kill()
        proc.wait()
