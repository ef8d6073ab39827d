"""A script of turns -> a fake model API on a free loopback port: the server lifecycle, request log and held requests the fakes share.

tests/fake_openai_responses.py and tests/fake_gemini.py subclass `ScriptedFake` with their
wire format: a request handler class and how a turn's failure is answered.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Protocol, TypeVar


class LoggedRequest(Protocol):
    """What the fake keeps of every request: its script turn (None for side requests) and how it was answered."""

    turn: int | None
    outcome: str


RequestT = TypeVar("RequestT", bound=LoggedRequest)
#: Outcome values meaning "the fake is holding this request": never answered, or a stream stopped midway.
HELD = ("hang", "stalled")


class ScriptedFake(Generic[RequestT]):
    """Serves `script` (one turn per agent-loop request, `after_script` once it is used up) from a background thread.

    Subclasses provide `handler_class()` (the HTTP handler, which calls `record` and `next_outcome`)
    and `script_failed(turn, error)` (the answer to a turn whose function raised).
    """

    thread_name = "fake-api"

    def __init__(self, script: Sequence[Callable[[RequestT], Any]], after_script: Callable[[RequestT], Any]) -> None:
        self.script = list(script)
        self.after_script = after_script
        self.requests: list[RequestT] = []
        #: Exceptions raised by script turns (each answered as an error): a test asserts this is empty.
        self.script_errors: list[str] = []
        self.lock = threading.Lock()
        #: Set when the fake stops: held requests wait on it.
        self.stopping = threading.Event()
        self._turns = itertools.count()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def script_failed(self, turn: int, error: Exception) -> Any:
        raise NotImplementedError

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the fake first"
        return self._server.server_address[1]

    @property
    def agent_requests(self) -> list[RequestT]:
        """The agent-loop requests (those answered from the script), in arrival order."""
        with self.lock:
            return [r for r in self.requests if r.turn is not None]

    @property
    def hung(self) -> int:
        """How many requests are being held unanswered or stalled mid-stream."""
        with self.lock:
            return sum(1 for r in self.requests if r.outcome in HELD)

    def start(self):  # noqa: ANN201 - returns the subclass
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self):  # noqa: ANN204 - returns the subclass
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def record(self, request: RequestT) -> None:
        with self.lock:
            self.requests.append(request)

    def next_outcome(self, request: RequestT) -> Any:
        """The next turn's answer to an agent-loop request; a turn that raises is logged and answered by `script_failed`."""
        with self.lock:
            turn = next(self._turns)
            request.turn = turn
        chosen = self.script[turn] if turn < len(self.script) else self.after_script
        try:
            return chosen(request)
        except Exception as error:  # noqa: BLE001 - a broken script must show in the log, not as a dropped connection
            self.script_errors.append(f"turn {turn}: {type(error).__name__}: {error}")
            request.outcome = "script error"
            return self.script_failed(turn, error)

    def hold(self) -> None:
        """Keep the calling request's thread (and its connection) waiting until the fake stops."""
        self.stopping.wait()

    def wait_for_hang(self, timeout: float) -> bool:
        """Block until a request is being held unanswered or stalled (for hang scenarios)."""
        deadline = time.monotonic() + timeout
        while not self.hung and time.monotonic() < deadline:
            self.stopping.wait(0.05)
        return bool(self.hung)
