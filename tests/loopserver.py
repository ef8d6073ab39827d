"""A loopback TCP server for tests whose every connection gets one answer -> it stands for adb, a model API or a model host.

`LoopbackServer(answer)`: `answer(first_bytes)` returns what to send back (the request's first
read, up to 64 KiB); `accepted` counts connections. Threads of the test process; `close` stops
accepting.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable


class LoopbackServer:
    """Accepts on 127.0.0.1 (a free port), reads once, answers `answer(data)`, closes; counts what it accepted."""

    def __init__(self, answer: Callable[[bytes], bytes]) -> None:
        self.answer = answer
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, name="test-loopback", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            with client:
                client.settimeout(10)
                try:
                    client.sendall(self.answer(client.recv(65536)))
                except OSError:
                    continue

    def close(self) -> None:
        self.sock.close()
