"""A Unix socket + pre-imported programs -> one forked, warm process per launcher request (and the owner's start and stop).

The server imports the programs once (`PROGRAMS`), binds its socket only when that is done,
and then forks one child per request: the child puts itself in a new process group, takes the
launcher's stdin, stdout and stderr, environment, argv and working directory, and runs the
program's `main`. The server reports the child's pid and then its exit to the launcher. If a
launcher's connection closes while its child runs (the launcher was killed), the child's group
is killed. Stopping the server (SIGTERM) stops every child's group first.

`start_fork_server(directory)` is the owner's side: the pytest session starts one, points
`AGENTBENCH_WARM_SOCKET` at it, and stops it (by process group) at the end.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import importlib
import io
import json
import os
import resource
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentbench.warm.launch import SOCKET_VARIABLE, STARTING_SUFFIX, group_members, mark_warm_child, package_root, stop_group

#: Program name -> "module:function"; the function takes no arguments and returns an exit status.
PROGRAMS = {
    "agentbench-mcp": "pytest_agentbench.mcp_server.__main__:main",
    "agentbench-replay": "pytest_agentbench.agents.replay:main",
}
#: What the server imports before it binds: everything the programs import at start-up.
PRELOAD = ("pytest_agentbench.mcp_server.__main__", "pytest_agentbench.mcp_server.server", "pytest_agentbench.agents.replay")
SOCKET_NAME = "fork.sock"
LOG_NAME = "forkserver.log"
_MAX_HEADER = 16 * 1024 * 1024


@dataclass
class _Child:
    pid: int
    program: str
    conn: socket.socket
    started: float = field(default_factory=time.monotonic)


class ForkServer:
    """The server loop: one listening socket, one connection per running child, SIGCHLD as a wake-up."""

    def __init__(self, path: Path, log: io.TextIOBase, programs: dict[str, str] | None = None) -> None:
        self.path = path
        self.log = log
        self.programs = {**PROGRAMS, **(programs or {})}
        self.children: dict[int, _Child] = {}
        self.selector = selectors.DefaultSelector()
        self.stopping = False
        self._inherited: list[int] = []
        self._owner = os.getppid()

    def serve(self) -> None:
        """Bind (atomically: a launcher never finds a half-ready server), then serve until SIGTERM."""
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_read, False)
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._inherited = [wake_read, wake_write, listener.fileno()]
        staging = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        listener.bind(str(staging))
        listener.listen(64)
        os.replace(staging, self.path)
        _release_starting_lock()
        self._log(f"ready pid={os.getpid()} socket={self.path}")
        self.selector.register(listener, selectors.EVENT_READ, "listener")
        self.selector.register(wake_read, selectors.EVENT_READ, "wake")
        try:
            while not self.stopping:
                for key, _ in self.selector.select(timeout=1.0):
                    if key.data == "listener":
                        self._accept(listener)
                    elif key.data == "wake":
                        with contextlib.suppress(BlockingIOError):
                            os.read(wake_read, 4096)
                    else:
                        self._launcher_event(key.data)
                self._reap()
                if os.getppid() != self._owner:
                    # The owner died without stopping us (SIGKILL): nothing may outlive it.
                    self._log("owner went away; stopping")
                    break
        finally:
            with contextlib.suppress(OSError):
                self.path.unlink()
            listener.close()
            for child in list(self.children.values()):
                stop_group(child.pid)
            self._reap()
            usage = resource.getrusage(resource.RUSAGE_SELF)
            self._log(f"stopped; own cpu {usage.ru_utime + usage.ru_stime:.3f}s")

    def _stop(self, _signum: int, _frame: Any) -> None:
        self.stopping = True

    def _log(self, message: str) -> None:
        self.log.write(f"{time.strftime('%H:%M:%S')} {message}\n")
        self.log.flush()

    # ---------------------------------------------------------------- requests

    def _accept(self, listener: socket.socket) -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        try:
            request, fds = _read_request(conn)
        except (OSError, ValueError) as exc:
            self._log(f"refused a request: {exc}")
            conn.close()
            return
        try:
            problem = self._check(conn, request)
            if problem:
                self._log(f"refused {request.get('program')!r}: {problem}")
                _send(conn, {"refused": problem})
                conn.close()
                return
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child never returns here (coverage cannot see it)
                self._become(request, fds, conn)
            with contextlib.suppress(OSError):
                os.setpgid(pid, pid)  # also done by the child: whichever runs first wins the race
        finally:
            for fd in fds:
                os.close(fd)
        self.children[pid] = _Child(pid, request["program"], conn)
        self.selector.register(conn, selectors.EVENT_READ, pid)
        _send(conn, {"pid": pid})

    def _check(self, conn: socket.socket, request: dict) -> str | None:
        if request.get("program") not in self.programs:
            return f"unknown program {request.get('program')!r}"
        if request.get("package") != package_root():
            # Another checkout's launcher: this server's code is not its code.
            return f"launcher runs {request.get('package')}, this server {package_root()}"
        if hasattr(socket, "SO_PEERCRED"):
            _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
            if uid != os.getuid():
                return f"launcher runs as uid {uid}, not {os.getuid()}"
        return None

    def _become(self, request: dict, fds: list[int], conn: socket.socket) -> None:
        """In the child: become the program (own group, the launcher's stdio and environment), then exit."""
        code = 1
        try:
            os.setpgid(0, 0)
            mark_warm_child()
            for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE):
                signal.signal(sig, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.set_wakeup_fd(-1)
            self.selector.close()
            for fd in self._inherited:
                with contextlib.suppress(OSError):
                    os.close(fd)
            conn.close()
            for child in self.children.values():
                child.conn.close()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            for fd in fds:
                os.close(fd)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            sys.argv = [request["program"], *request["argv"]]
            sys.stdin = open(0, "r", encoding="utf-8", closefd=False)  # noqa: SIM115 - the process's own stdio
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
            module, _, function = self.programs[request["program"]].partition(":")
            try:
                result = getattr(importlib.import_module(module), function)()
                code = result if isinstance(result, int) else 0
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
                if not isinstance(exit_.code, int) and exit_.code is not None:
                    sys.stderr.write(f"{exit_.code}\n")
            except KeyboardInterrupt:
                # As the interpreter does for an uncaught Ctrl+C: die by SIGINT.
                sys.stderr.flush()
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGINT)
            except BaseException:  # noqa: BLE001 - an uncaught error prints and exits 1, as python does
                traceback.print_exc()
                code = 1
            atexit._run_exitfuncs()
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
        finally:
            os._exit(code)

    # ---------------------------------------------------------------- children

    def _launcher_event(self, pid: int) -> None:
        child = self.children.get(pid)
        if child is None:
            return
        try:
            data = child.conn.recv(4096)
        except OSError:
            data = b""
        if not data:
            # The stand-in died while its program ran (SIGKILL): nobody may outlive it.
            self._log(f"launcher of {child.program} pid={pid} went away; killing its group")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            self.selector.unregister(child.conn)

    def _reap(self) -> None:
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            child = self.children.pop(pid, None)
            if child is None:
                continue
            reply = {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"exit": os.WEXITSTATUS(status)}
            cpu = usage.ru_utime + usage.ru_stime
            self._log(f"exit {child.program} pid={pid} {reply} cpu={cpu:.3f}s wall={time.monotonic() - child.started:.2f}s")
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(child.conn)
            with contextlib.suppress(OSError):
                _send(child.conn, reply)
            child.conn.close()


def _send(conn: socket.socket, message: dict) -> None:
    conn.sendall(json.dumps(message).encode("utf-8") + b"\n")


def _read_request(conn: socket.socket) -> tuple[dict, list[int]]:
    conn.settimeout(10)
    data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError(f"expected 3 descriptors (stdin, stdout, stderr), got {len(fds)}")
    while len(data) < 4:
        more = conn.recv(65536)
        if not more:
            raise ValueError("the request ended early")
        data += more
    (length,) = struct.unpack(">I", data[:4])
    if length > _MAX_HEADER:
        raise ValueError(f"a request header of {length} bytes")
    while len(data) < 4 + length:
        more = conn.recv(65536)
        if not more:
            raise ValueError("the request ended early")
        data += more
    conn.settimeout(None)
    return json.loads(data[4 : 4 + length].decode("utf-8", "surrogateescape")), fds


#: The descriptor of the starting file's lock, handed over by `start_fork_server`.
STARTING_FD_VARIABLE = "AGENTBENCH_WARM_STARTING_FD"


def _release_starting_lock() -> None:
    # Launchers wait on this lock while the programs import; once bound, it has done its work.
    fd = os.environ.pop(STARTING_FD_VARIABLE, "")
    if fd.isdigit():
        with contextlib.suppress(OSError):
            os.close(int(fd))


def main(argv: list[str] | None = None) -> int:
    """`python -m pytest_agentbench.warm.forkserver SOCKET [NAME=MODULE:FUNCTION ...]`: preload the programs, then serve."""
    args = sys.argv[1:] if argv is None else argv
    extra = dict(arg.split("=", 1) for arg in args[1:] if "=" in arg)
    if not args or len(extra) != len(args) - 1:
        sys.stderr.write("usage: python -m pytest_agentbench.warm.forkserver SOCKET_PATH [NAME=MODULE:FUNCTION ...]\n")
        return 2
    for module in (*PRELOAD, *(target.partition(":")[0] for target in extra.values())):
        importlib.import_module(module)
    ForkServer(Path(args[0]), sys.stderr, extra).serve()
    return 0


# ------------------------------------------------------------------------- the owner's side


@dataclass
class WarmStarts:
    """A running fork server owned by this process: its socket, its process, its log."""

    socket_path: Path
    process: subprocess.Popen
    directory: Path
    log_path: Path
    _stopped: bool = False

    def environ(self) -> dict[str, str]:
        """The variable that sends launchers here."""
        return {SOCKET_VARIABLE: str(self.socket_path)}

    def wait_ready(self, timeout_s: float = 30.0) -> bool:
        """Wait until the socket is in place (the programs are imported); False if the server died or timed out."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.socket_path.exists():
                return True
            if self.process.poll() is not None:
                return False
            time.sleep(0.02)
        return False

    def ask_to_stop(self) -> None:
        """SIGTERM the server without waiting (a forced exit): it stops every program's group, then itself."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGTERM)

    def stop(self, grace_s: float = 5.0) -> None:
        """Stop the server and every program it runs (their groups first, then its own group); safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=grace_s)
        if group_members(self.process.pid):  # pragma: no cover - KILL cannot be ignored
            stop_group(self.process.pid)
        for path in (self.socket_path, self.socket_path.with_name(self.socket_path.name + STARTING_SUFFIX)):
            with contextlib.suppress(OSError):
                path.unlink()
        with contextlib.suppress(OSError):
            self.directory.rmdir()


def start_fork_server(
    directory: Path | None = None,
    *,
    log_path: Path | None = None,
    programs: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> WarmStarts:
    """Start a fork server in its own process group; it is ready once `wait_ready()` says so.

    Launchers that come before it is ready find no socket and run their program in process, so
    the caller need not wait. `stop()` (also registered at exit) ends it and its programs.

    Args:
        directory: A private directory for the socket (default: a new temp dir, 0700; a Unix
            socket path must stay short, so not under a deep artifact root).
        log_path: Where the server logs each program's exit and CPU (default: in `directory`).
        programs: More programs to serve, name -> "module:function" (tests).
        env: The server's environment (default ours); programs get their launcher's.

    Returns:
        The handle.
    """
    directory = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="agentbench-warm-"))
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    socket_path = directory / SOCKET_NAME
    log_path = Path(log_path) if log_path is not None else directory / LOG_NAME
    log_path.parent.mkdir(parents=True, exist_ok=True)
    extra = [f"{name}={target}" for name, target in (programs or {}).items()]
    # Locked here and handed to the server, so a launcher that comes while the server imports
    # waits for it (warm/launch.py `_started`) from the first instant, and stops waiting if it dies.
    starting = os.open(str(socket_path) + STARTING_SUFFIX, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(starting, fcntl.LOCK_EX)
    server_env = {key: value for key, value in (os.environ if env is None else env).items() if key != SOCKET_VARIABLE}
    server_env[STARTING_FD_VARIABLE] = str(starting)
    try:
        with open(log_path, "a", encoding="utf-8") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "pytest_agentbench.warm.forkserver", str(socket_path), *extra],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
                env=server_env, pass_fds=(starting,),
            )
    finally:
        os.close(starting)  # the server's copy holds the lock now (or, if it did not start, nobody does)
    handle = WarmStarts(socket_path=socket_path, process=process, directory=directory, log_path=log_path)
    atexit.register(handle.stop)
    return handle


if __name__ == "__main__":
    sys.exit(main())
