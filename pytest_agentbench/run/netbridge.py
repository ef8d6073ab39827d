"""The sandbox's allowed endpoints -> unix sockets outside it: one carries to one TCP endpoint, one is an allowlisting CONNECT proxy.

The agent's network namespace has only loopback. Inside, `run/sandbox_forward.py` listens on the
loopback ports the agent is told about and carries each connection to one of these sockets;
here each socket leads to exactly one endpoint (a local model API) or, for the proxy socket, to
a host the `CONNECT` request names if it is on the allowlist (the model provider's host). Behind
the operator's own proxy (`HTTPS_PROXY` of the harness, loopback or remote), an allowed tunnel is
opened through it with a `CONNECT` of ours naming the same host, so the agent never holds a pipe
to the upstream proxy itself and cannot ask it for anything else. A refused `CONNECT` is answered
403 and remembered (`NetBridge.refused`), so the run's record can say what the agent tried to reach. Given a `record` callable (`run/bridgelog.py`'s writer), every
upstream connection it opened, and whether it could, is recorded too: the harness's own evidence of
a model host that could not be reached. Threads of the harness's own process; `close` ends them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.run.sandbox_forward import pump
from pytest_agentbench.run.stream import block_main_thread_signals

_CHUNK = 65536
_MAX_HEADER = 16384
_CONNECT_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Endpoint:
    """A TCP endpoint the agent may reach: `host` as the agent names it, and its port."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def _pump(source: socket.socket, target: socket.socket) -> None:
    # A bridge thread of the harness: Ctrl+C belongs to the main thread.
    block_main_thread_signals()
    pump(source, target)


def _splice(client: socket.socket, upstream: socket.socket, connections: set[socket.socket], lock: threading.Lock) -> None:
    with lock:
        connections.update((client, upstream))
    back = threading.Thread(target=_pump, args=(upstream, client), name="agentbench-net", daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    with lock:
        connections.difference_update((client, upstream))
    client.close()
    upstream.close()


def _read_header(client: socket.socket) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(4096)
        if not chunk or len(data) > _MAX_HEADER:
            return None
        data += chunk
    return data


def parse_connect(header: bytes) -> Endpoint | None:
    """The target of an HTTP `CONNECT host:port HTTP/1.x` request, or None for anything else."""
    first = header.split(b"\r\n", 1)[0].decode("latin-1").split()
    if len(first) != 3 or first[0].upper() != "CONNECT":
        return None
    host, _, port = first[1].rpartition(":")
    if not host or not port.isdigit():
        return None
    return Endpoint(host.strip("[]").lower().rstrip("."), int(port))


@dataclass(frozen=True)
class UpstreamProxy:
    """The operator's HTTP proxy every allowed tunnel goes through; `authorization` is a `Proxy-Authorization` value (never recorded)."""

    endpoint: Endpoint
    authorization: str | None = None

    def __repr__(self) -> str:
        return f"UpstreamProxy({self.endpoint})"


class UpstreamRefused(OSError):
    """The upstream proxy answered our `CONNECT` with something other than 200."""


def connect_through(proxy: UpstreamProxy, target: Endpoint, timeout_s: float = _CONNECT_TIMEOUT_S) -> tuple[socket.socket, bytes]:
    """A tunnel to `target` through `proxy`: the connected socket and any bytes the proxy sent past its answer.

    Raises:
        OSError: The proxy could not be reached, or (UpstreamRefused) it answered other than 200.
    """
    sock = socket.create_connection((proxy.endpoint.host, proxy.endpoint.port), timeout=timeout_s)
    try:
        request = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
        if proxy.authorization:
            request += f"Proxy-Authorization: {proxy.authorization}\r\n"
        sock.sendall((request + "\r\n").encode("latin-1"))
        answer = _read_header(sock)
        if answer is None:
            raise UpstreamRefused(errno.ECONNRESET, f"the upstream proxy {proxy.endpoint} closed the connection")
        status_line = answer.split(b"\r\n", 1)[0].decode("latin-1", "replace")
        parts = status_line.split(None, 2)
        if len(parts) < 2 or parts[1] != "200":
            raise UpstreamRefused(errno.ECONNREFUSED, f"the upstream proxy {proxy.endpoint} answered {status_line!r}")
    except BaseException:
        sock.close()
        raise
    sock.settimeout(None)
    return sock, answer.split(b"\r\n\r\n", 1)[1]


def _describe(exc: OSError) -> str:
    """An OSError as the record keeps it: its errno name and text (`ECONNREFUSED: Connection refused`)."""
    name = errno.errorcode.get(exc.errno, "") if isinstance(exc.errno, int) else ""
    if isinstance(exc, socket.gaierror):
        name = "EAI"
    elif isinstance(exc, (socket.timeout, TimeoutError)) and not name:
        name = "ETIMEDOUT"
    text = exc.strerror or str(exc) or type(exc).__name__
    return f"{name}: {text}" if name else text


class NetBridge:
    """Unix sockets in `directory` leading to the sandbox's allowed endpoints (threads of this process)."""

    def __init__(self, directory: Path, record: Callable[[dict], None] | None = None) -> None:
        self.directory = Path(directory)
        self.refused: list[str] = []
        self._record = record
        self._open = 0
        self._listeners: dict[socket.socket, tuple[str, object]] = {}
        self._paths: list[Path] = []
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._upstream_proxy: UpstreamProxy | None = None

    def _listen(self, name: str, kind: str, target: object) -> Path:
        path = self.directory / f"{name}.sock"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
        sock.listen(64)
        self._listeners[sock] = (kind, target)
        self._paths.append(path)
        return path

    @property
    def paths(self) -> tuple[Path, ...]:
        """The socket files, in the order they were made."""
        return tuple(self._paths)

    def forward(self, name: str, target: Endpoint) -> Path:
        """A socket whose every connection is carried to `target`; returns its path."""
        return self._listen(name, "forward", target)

    def proxy(self, name: str, allowed: Iterable[Endpoint], upstream: UpstreamProxy | None = None) -> Path:
        """A CONNECT proxy socket that opens tunnels only to `allowed` (through `upstream` when given); returns its path."""
        self._upstream_proxy = upstream
        return self._listen(name, "proxy", frozenset(Endpoint(e.host.lower(), e.port) for e in allowed))

    def start(self) -> NetBridge:
        """Start accepting (one thread for every socket, a thread pair per connection)."""
        for sock in self._listeners:
            self._selector.register(sock, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._thread = threading.Thread(target=self._accept_loop, name="agentbench-netbridge", daemon=True)
        self._thread.start()
        return self

    def _accept_loop(self) -> None:
        block_main_thread_signals()
        while not self._closed:
            for key, _ in self._selector.select():
                if key.fileobj == self._wake_r:
                    return
                try:
                    client, _ = key.fileobj.accept()  # type: ignore[union-attr]
                except OSError:
                    continue
                kind, target = self._listeners[key.fileobj]  # type: ignore[index]
                handler = self._forward if kind == "forward" else self._tunnel
                threading.Thread(target=self._handle, args=(handler, client, target), name="agentbench-net", daemon=True).start()

    def _handle(self, handler: Callable[[socket.socket, object], None], client: socket.socket, target: object) -> None:
        # Counts the agent's connections in flight: the record says how many were open when one
        # failed, so a failure the agent's own flood caused is told from the model host's.
        with self._lock:
            self._open += 1
        try:
            handler(client, target)
        finally:
            with self._lock:
                self._open -= 1

    def _note(self, event: str, **fields: object) -> None:
        if self._record is not None:
            with self._lock:
                opened = self._open
            self._record({"event": event, **fields, **({"open": opened} if event == "connect" else {})})

    def _upstream(self, target: Endpoint, via: str) -> tuple[socket.socket, bytes]:
        """Connect to an allowed endpoint for the agent (through the upstream proxy for a tunnel), and record whether it could (OSError when not)."""
        chained = self._upstream_proxy if via == "proxy" else None
        route = f"upstream proxy {chained.endpoint}" if chained is not None else via
        try:
            if chained is not None:
                upstream, early = connect_through(chained, target)
            else:
                upstream, early = socket.create_connection((target.host, target.port), timeout=_CONNECT_TIMEOUT_S), b""
                upstream.settimeout(None)
        except OSError as exc:
            self._note("connect", endpoint=str(target), via=route, ok=False, error=_describe(exc))
            raise
        self._note("connect", endpoint=str(target), via=route, ok=True)
        return upstream, early

    def _forward(self, client: socket.socket, target: Endpoint) -> None:
        block_main_thread_signals()
        try:
            upstream, _ = self._upstream(target, "forward")
        except OSError:
            client.close()
            return
        _splice(client, upstream, self._connections, self._lock)

    def _tunnel(self, client: socket.socket, allowed: frozenset[Endpoint]) -> None:
        block_main_thread_signals()
        try:
            header = _read_header(client)
            target = parse_connect(header) if header is not None else None
            if target is None or target not in allowed:
                what = str(target) if target is not None else "a request that is not CONNECT"
                with self._lock:
                    self.refused.append(what)
                self._note("refused", target=what)
                client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
                               + f"agentbench sandbox: {what} is not an endpoint this run needs\n".encode())
                client.close()
                return
            try:
                upstream, early = self._upstream(target, "proxy")
            except OSError as exc:
                client.sendall(f"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n{_describe(exc)}\n".encode())
                client.close()
                return
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n" + early)
            # Bytes the client sent after the header (a TLS hello) go on first.
            rest = header.split(b"\r\n\r\n", 1)[1] if header else b""
            if rest:
                upstream.sendall(rest)
        except OSError:
            client.close()
            return
        _splice(client, upstream, self._connections, self._lock)

    def close(self) -> None:
        """Stop accepting, close every socket and connection, remove the socket files."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        with self._lock:
            open_connections = list(self._connections)
        for sock in open_connections:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for sock in self._listeners:
            sock.close()
        for path in self._paths:
            with contextlib.suppress(OSError):
                path.unlink()
        self._selector.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
