"""The agent's stdio <-> the harness's unix socket: agentbench-relay, the one MCP server command the agent's --mcp-config names.

A dumb pipe, standard library only (it starts in tens of milliseconds): the bytes the agent's
MCP client writes on our stdin go to the socket, and what comes back goes to our stdout. The
harness's hub (`run/relay_hub.py`) at the other end starts the real server, outside the agent's
reach, and records every call. The relay knows nothing but the socket path: no adb endpoint, no
server environment. It does not frame or parse anything on purpose: the hub is the one framing
authority (docs/relay.md), so nothing this process could be made to do changes what is logged.
"""

from __future__ import annotations

import os
import socket
import sys
import threading

_CHUNK = 1 << 16


def _socket_to_stdout(sock: socket.socket) -> None:
    try:
        while True:
            data = sock.recv(_CHUNK)
            if not data:
                break
            view = memoryview(data)
            while view:
                written = os.write(1, view)
                view = view[written:]
    except OSError:
        pass
    # The hub closed the connection (its server ended): nothing more will come, so end at once,
    # even while the main thread still waits on stdin.
    os._exit(0)


def main(argv: list[str] | None = None) -> int:
    """`agentbench-relay --socket PATH`: pipe stdin/stdout to the unix socket until either side ends."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "--socket":
        sys.stderr.write("usage: agentbench-relay --socket PATH\n")
        return 2
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(args[1])
    except OSError as exc:
        sys.stderr.write(f"agentbench-relay: cannot reach the harness's MCP hub at {args[1]}: {exc.strerror or exc}\n")
        return 1
    threading.Thread(target=_socket_to_stdout, args=(sock,), daemon=True).start()
    try:
        while True:
            data = os.read(0, _CHUNK)
            if not data:
                break
            sock.sendall(data)
    except OSError:
        pass
    # The client closed our stdin (the MCP way to end a server): tell the hub, then wait for
    # it to close its side (the reader thread exits the process).
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        return 0
    threading.Event().wait(30.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
