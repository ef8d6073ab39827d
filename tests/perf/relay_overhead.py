"""A stdio MCP server called directly vs through the harness's relay (agentbench-relay -> unix socket -> hub -> server); prints the median added per tool call.

Run: `python tests/perf/relay_overhead.py [CALLS]` (default 400 per side and result size).

The server is a small echo MCP server (answers at once, results of 2 KB and 60 KB: a short text
and a screen dump), so the difference is the relay's cost alone: two more pipe/socket hops,
the hub's parsing, validation and re-framing of each request and response (docs/relay.md) and
its relay.jsonl lines (one before forwarding the request, one before the answer). The hub runs in a process of
its own, as it does inside the pytest process while the agent is another process. Not a timed
assertion: it prints the numbers (issue 19's target: at most 5 ms median added per call).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from pytest_agentbench.run.invocation import relay_entry
from pytest_agentbench.servers.mcpclient import StdioClient

ECHO_SERVER = textwrap.dedent('''
    import json, sys
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        if method == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "echo", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "observe", "inputSchema": {"type": "object"}}]}
        else:
            size = message["params"]["arguments"].get("size", 2000)
            result = {"content": [{"type": "text", "text": "x" * size}], "isError": False}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\\n")
        sys.stdout.flush()
''')

HUB = textwrap.dedent('''
    import sys
    from pathlib import Path
    from pytest_agentbench.run.relay_hub import RelayHub, ServerLaunch
    socket_dir, run_dir, server = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    launch = ServerLaunch(argv=(sys.executable, server), env={}, cwd=run_dir)
    hub = RelayHub(socket_dir=socket_dir, log_path=run_dir / "relay.jsonl", servers={"echo": launch}, stderr_dir=run_dir).start()
    print("ready", flush=True)
    sys.stdin.read()
    hub.stop()
''')


def timed_calls(client: StdioClient, calls: int, size: int) -> list[float]:
    client.initialize(timeout_s=30)
    client.list_tools(timeout_s=30)
    for _ in range(20):  # warm up
        client.call_tool("observe", {"size": size}, timeout_s=30)
    seconds = []
    for _ in range(calls):
        start = time.perf_counter()
        client.call_tool("observe", {"size": size}, timeout_s=30)
        seconds.append(time.perf_counter() - start)
    return seconds


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    with tempfile.TemporaryDirectory(prefix="relay-perf-") as scratch_name:
        scratch = Path(scratch_name)
        server = scratch / "echo_server.py"
        server.write_text(ECHO_SERVER, encoding="utf-8")
        socket_dir = Path(tempfile.mkdtemp(prefix="agentbench-relay-"))
        hub = subprocess.Popen([sys.executable, "-c", HUB, str(socket_dir), str(scratch), str(server)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert hub.stdout is not None and hub.stdout.readline().strip() == "ready"
            entry = relay_entry(socket_dir, "echo")
            rows = []
            for size in (2000, 60000):
                with StdioClient(sys.executable, [str(server)]) as direct:
                    plain = timed_calls(direct, calls, size)
                with StdioClient(entry["command"], entry["args"]) as relayed_client:
                    relayed = timed_calls(relayed_client, calls, size)
                rows.append((size, statistics.median(plain), statistics.median(relayed)))
        finally:
            if hub.stdin is not None:
                hub.stdin.close()
            hub.wait(timeout=30)
        logged = sum(1 for line in (scratch / "relay.jsonl").read_text(encoding="utf-8").splitlines() if json.loads(line)["event"] == "call")
    print(f"{calls} calls per side and size; the relay logged {logged} calls (with warm-ups)")
    for size, plain, relayed in rows:
        print(f"result {size:>6} chars: direct median {plain * 1000:.3f} ms, through the relay {relayed * 1000:.3f} ms, "
              f"added {(relayed - plain) * 1000:.3f} ms per call (x{relayed / plain:.2f})")
    worst = max(relayed - plain for _, plain, relayed in rows)
    print(f"relay overhead: {worst * 1000:.3f} ms median added per tool call (target: <= 5 ms)")


if __name__ == "__main__":
    main()
