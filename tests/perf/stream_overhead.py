"""A large synthetic stream-json transcript -> the time to stream it through the runner (pipe, reader thread, timing sidecar) vs plain `cat > file`; prints the ratio.

Run: `python tests/perf/stream_overhead.py [MEGABYTES]` (default 200).

Both sides run `cat TRANSCRIPT` as the "agent", so the writer is as fast as the machine allows
and any cost of the runner's reader shows as back-pressure on it. Plain: cat's stdout is the
output file, as the runner did before it read the stream itself. Runner: `run_agent`, which
copies every chunk to claude.jsonl as it arrives, stamps every line in claude.timing.jsonl and
watches event types and tool_use blocks. Best of three each; the copies are compared byte for
byte. A real agent writes kilobytes per second, so the printed throughput is the headroom.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_agentbench.run.runner import run_agent
from pytest_agentbench.run.stream import read_arrivals

ROUNDS = 3


def synthetic_transcript(path: Path, megabytes: int) -> int:
    """Write a transcript shaped like Claude Code's (init, tool_use, tool results of mixed sizes, result); return its lines."""
    init = {"type": "system", "subtype": "init", "session_id": "s", "tools": ["mcp__agentbench__observe"],
            "mcp_servers": [{"name": "agentbench", "status": "connected"}], "model": "m", "claude_code_version": "2.1.197"}
    lines = 0
    target = megabytes * 1024 * 1024
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps(init) + "\n")
        lines += 1
        size, turn = 0, 0
        while size < target:
            turn += 1
            call = {"type": "assistant", "message": {"id": f"msg_{turn}", "role": "assistant", "model": "m", "content": [
                {"type": "text", "text": "Looking at the screen to find the button. " * 4},
                {"type": "tool_use", "id": f"toolu_{turn}", "name": "mcp__agentbench__observe", "input": {"device": "emulator-5554"}},
            ]}, "session_id": "s"}
            # Mostly small results, every tenth a large screen dump (as observe returns).
            body = ("<node text=\"Item\" bounds=\"[0,0][100,100]\"/>" * (4000 if turn % 10 == 0 else 60))
            result = {"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{turn}", "content": [{"type": "text", "text": body}]}]},
                "session_id": "s"}
            chunk = json.dumps(call) + "\n" + json.dumps(result) + "\n"
            out.write(chunk)
            size += len(chunk)
            lines += 2
        out.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "done"}) + "\n")
        lines += 1
    return lines


def plain(source: Path, target: Path) -> float:
    started = time.perf_counter()
    with open(target, "wb") as out:
        subprocess.run(["cat", str(source)], stdout=out, check=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - started


def through_runner(source: Path, work: Path) -> float:
    started = time.perf_counter()
    exit_ = run_agent(["cat", str(source)], env=dict(os.environ), cwd=work, prompt="", stdout_path=work / "claude.jsonl",
                      stderr_path=work / "claude.stderr", timeout_s=600, timing_path=work / "claude.timing.jsonl")
    took = time.perf_counter() - started
    if exit_.exit_code != 0:
        raise SystemExit(f"cat exited {exit_.exit_code}")
    return took


def digest(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def main() -> int:
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory(prefix="agentbench-stream-perf-") as scratch:
        work = Path(scratch)
        source = work / "transcript.jsonl"
        lines = synthetic_transcript(source, megabytes)
        size_mb = source.stat().st_size / 1e6
        plain_s = min(plain(source, work / "plain.jsonl") for _ in range(ROUNDS))
        runner_s = min(through_runner(source, work) for _ in range(ROUNDS))
        same = digest(source) == digest(work / "claude.jsonl")
        timed = len(read_arrivals(work / "claude.timing.jsonl") or {})
    print(f"stream: {size_mb:.0f} MB, {lines} lines (best of {ROUNDS})")
    print(f"plain cat > file:      {plain_s:6.2f} s  ({size_mb / plain_s:7.0f} MB/s)")
    print(f"through the runner:    {runner_s:6.2f} s  ({size_mb / runner_s:7.0f} MB/s, {lines / runner_s:,.0f} lines/s)")
    print(f"ratio runner / cat:    {runner_s / plain_s:6.2f}")
    print(f"copy identical: {same}; lines timed: {timed} of {lines}")
    return 0 if same and timed == lines else 1


if __name__ == "__main__":
    raise SystemExit(main())
