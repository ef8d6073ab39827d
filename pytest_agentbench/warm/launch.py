"""A console script's argv, environment and stdio -> the program run by the warm fork server, this process standing in for it.

Standard library only and imported before anything heavy: the point is to skip the imports.

The stand-in keeps the process-group rules: it stays in the agent's group for as long as the
forked program (and anything that program started, in the program's own group) runs. A signal
it gets is passed on to that whole group, and it exits only once that group is empty, so
stopping the agent's group stops everything. If the stand-in itself is killed (SIGKILL cannot be
passed on), the fork server sees its connection close and kills the program's group at once.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

#: Where the session's fork server listens; unset means every program runs in process.
SOCKET_VARIABLE = "AGENTBENCH_WARM_SOCKET"
#: Seconds the forked program's leftovers get between SIGTERM and SIGKILL once it has exited.
GRACE_S = 2.0
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
_CONNECT_TIMEOUT_S = 2.0
#: Next to the socket while the server imports: a file whose lock the server holds until it binds.
STARTING_SUFFIX = ".starting"
#: How long a launcher waits for a server that is still importing (it binds within seconds).
START_WAIT_S = 30.0
# Set in a forked child: its program is already warm and must not hand off to the server again.
_in_warm_child = False


def mark_warm_child() -> None:
    """Record that this process is a fork server's child, so `handoff` runs programs here."""
    global _in_warm_child
    _in_warm_child = True


def package_root() -> str:
    """The pytest_agentbench directory this code runs from; the fork server must run the same code."""
    return str(Path(__file__).resolve().parent.parent)


def encode_request(program: str, argv: Sequence[str], cwd: str, environ: Mapping[str, str]) -> bytes:
    """The request header: a 4-byte big-endian length, then JSON (program, argv, cwd, environment, code location)."""
    body = json.dumps(
        {"program": program, "argv": list(argv), "cwd": cwd, "env": dict(environ), "package": package_root()},
        ensure_ascii=False,
    ).encode("utf-8", "surrogateescape")
    return struct.pack(">I", len(body)) + body


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes in a process group; on systems without /proc, the group itself if it exists."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def stop_group(pgid: int, *, grace_s: float = GRACE_S) -> None:
    """SIGTERM a process group, then SIGKILL whatever is left after grace_s; returns once it is empty."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not group_members(pgid):
            return
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and group_members(pgid):
            time.sleep(0.02)


class _Channel:
    """The connection to the fork server: newline-delimited JSON replies."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def read(self) -> dict | None:
        while b"\n" not in self.buffer:
            try:
                chunk = self.sock.recv(4096)
            except InterruptedError:  # pragma: no cover - PEP 475 retries; kept for clarity
                continue
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)


def _connect(path: str) -> socket.socket | None:
    for attempt in range(2):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(_CONNECT_TIMEOUT_S)
        try:
            sock.connect(path)
            return sock
        except FileNotFoundError:
            sock.close()
            if attempt or not _started(path):
                return None
        except OSError:
            sock.close()
            return None
    return None


def _started(path: str, timeout_s: float = START_WAIT_S) -> bool:
    """Wait for a server that is still importing to bind `path`; False when none is starting or it died.

    Running the program here instead would import it a second time beside the server doing the
    same: twice the CPU for the same start on a busy machine (the first run's tools probe and
    programs come while the session's server is still importing). The server holds a lock on
    the starting file until it binds, so a server that died while importing is not waited for.
    """
    try:
        marker = os.open(path + STARTING_SUFFIX, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if os.path.exists(path):
                return True
            try:
                fcntl.flock(marker, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                time.sleep(0.02)
                continue
            return os.path.exists(path)  # the lock is free: the server bound, or it is gone
        return False
    finally:
        os.close(marker)


def handoff(program: str, argv: Sequence[str] | None = None, *, environ: Mapping[str, str] | None = None) -> int | None:
    """Run `program` in the fork server with this process's stdio, standing in for it until it ends.

    Args:
        program: The registered program name (`agentbench-mcp`, `agentbench-replay`).
        argv: Its arguments (default `sys.argv[1:]`).
        environ: Its environment (default `os.environ`).

    Returns:
        The program's exit status, or None when there is no fork server to use (no variable, no
        answer, or it refused before starting the program): then the caller runs it in process.
        A program killed by a signal makes this process die by the same signal instead.
    """
    environ = os.environ if environ is None else environ
    path = environ.get(SOCKET_VARIABLE, "").strip()
    if not path or _in_warm_child:
        return None
    sock = _connect(path)
    if sock is None:
        return None
    pending: list[int] = []
    pgid: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        # Passed on to the program's whole group: the agent's group being stopped reaches it.
        if pgid:
            try:
                os.killpg(pgid[0], signum)
            except ProcessLookupError:
                pass
        else:
            pending.append(signum)

    previous = {sig: signal.signal(sig, forward) for sig in _FORWARDED}
    try:
        with sock:
            try:
                socket.send_fds(sock, [encode_request(program, list(sys.argv[1:] if argv is None else argv), os.getcwd(), environ)], [0, 1, 2])
                sock.settimeout(None)
                channel = _Channel(sock)
                started = channel.read()
            except OSError:
                started = None
            if not started or "pid" not in started:
                return None  # refused or gone before the program started: run it here instead
            pgid.append(int(started["pid"]))
            _release_stdio()
            for signum in pending:
                forward(signum, None)
            try:
                ended = channel.read()
            except OSError:
                ended = None
        # The program has exited (or the server went away); its leftovers go before we do.
        stop_group(pgid[0])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if not ended:
        sys.stderr.write(f"{program}: the warm-start server went away while the program ran\n")
        return 1
    if ended.get("signal"):
        signum = int(ended["signal"])
        if signum not in (signal.SIGKILL, signal.SIGSTOP):  # the two that have no handler to reset
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    return int(ended.get("exit", 1))


def _release_stdio() -> None:
    # The program holds our stdin and stdout now; our copies must not keep a pipe open after it
    # exits (a reader waits for every writer to close). stderr stays, for the message above.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    os.close(devnull)
