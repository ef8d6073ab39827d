"""An operator's HTTP proxy for tests: a CONNECT proxy that opens a tunnel to any host and port it is asked for.

It stands for the corporate proxy a user's `HTTPS_PROXY` names, at its most permissive: it would
happily tunnel to the adb server's port. `routes` maps a host the test names (api.anthropic.com:443)
to a loopback address (the fake API), as the real proxy would reach the real host. It records every
CONNECT target it was asked for, so a test can show what reached it. Threads of the test process;
`close` (or the context manager) stops them.
"""

from __future__ import annotations

import contextlib
import socket
import threading

_CHUNK = 65536


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(_CHUNK):
            target.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)


class PermissiveProxy:
    """`with PermissiveProxy(routes={...}) as proxy:` -> `proxy.url`; `proxy.asked` lists every CONNECT target in order."""

    def __init__(self, routes: dict[str, tuple[str, int]] | None = None, *, authorization: str | None = None) -> None:
        self.routes = dict(routes or {})
        self.authorization = authorization
        self.asked: list[str] = []
        self.refused_auth = 0
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(32)
        self.port = self._sock.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name="test-proxy", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        header = b""
        while b"\r\n\r\n" not in header:
            chunk = client.recv(4096)
            if not chunk:
                client.close()
                return
            header += chunk
        head, _, rest = header.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = (lines[0].split() + ["", "", ""])[:3]
        if self.authorization is not None and f"proxy-authorization: {self.authorization}".lower() not in (line.lower() for line in lines[1:]):
            with self._lock:
                self.refused_auth += 1
            client.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nConnection: close\r\n\r\n")
            client.close()
            return
        with self._lock:
            self.asked.append(target)
        if method.upper() != "CONNECT":
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\n\r\n")
            client.close()
            return
        host, _, port = target.rpartition(":")
        address = self.routes.get(target, (host.strip("[]"), int(port) if port.isdigit() else 0))
        try:
            upstream = socket.create_connection(address, timeout=5)
        except OSError:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n")
            client.close()
            return
        upstream.settimeout(None)
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        if rest:
            upstream.sendall(rest)
        with self._lock:
            self._open.update((client, upstream))
        back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
        back.start()
        _pump(client, upstream)
        back.join()
        with self._lock:
            self._open.difference_update((client, upstream))
        client.close()
        upstream.close()

    def close(self) -> None:
        self._sock.close()
        with self._lock:
            still = list(self._open)
        for sock in still:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=2)

    def __enter__(self) -> PermissiveProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
