"""adb host connections -> a simulated phone's services: the adbd side of the wire protocol, on asyncio."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Callable
from typing import Any

from pytest_agentbench.sim import protocol
from pytest_agentbench.sim.protocol import A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_WRTE
from pytest_agentbench.sim.services import PhoneServices

log = logging.getLogger(__name__)

# Before the host's CNXN says otherwise, adb assumes the v1 payload limit.
_DEFAULT_HOST_PAYLOAD = 4096
#: Seconds `PhoneServer.start()` waits for its event loop to listen.
START_TIMEOUT_S = 30.0


class _Stream:
    """One open service: a byte inbox fed by WRTE and a writer that keeps one WRTE in flight."""

    def __init__(self, connection: _Connection, local_id: int, remote_id: int) -> None:
        self.connection = connection
        self.local_id = local_id
        self.remote_id = remote_id
        self._inbox = bytearray()
        self._inbox_changed = asyncio.Event()
        self._acked = asyncio.Event()
        self._acked.set()
        self.peer_closed = False
        self._close_sent = False

    # -- receiving -------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        self._inbox += data
        self._inbox_changed.set()

    def acknowledge(self) -> None:
        self._acked.set()

    def on_peer_close(self) -> None:
        # The host forgot this stream: wake every waiter; nothing more may be sent on it.
        self.peer_closed = True
        self._close_sent = True
        self._inbox_changed.set()
        self._acked.set()

    async def read_some(self) -> bytes:
        """Return whatever has arrived (waiting for at least one byte), or b"" once the peer closed."""
        while not self._inbox:
            if self.peer_closed:
                return b""
            self._inbox_changed.clear()
            await self._inbox_changed.wait()
        data = bytes(self._inbox)
        self._inbox.clear()
        return data

    async def read_exactly(self, count: int) -> bytes:
        """Return exactly count bytes; raises EOFError if the peer closes first."""
        while len(self._inbox) < count:
            if self.peer_closed:
                raise EOFError(f"stream closed with {len(self._inbox)} of {count} bytes read")
            self._inbox_changed.clear()
            await self._inbox_changed.wait()
        data = bytes(self._inbox[:count])
        del self._inbox[:count]
        return data

    # -- sending ---------------------------------------------------------------------------

    async def write(self, data: bytes) -> None:
        """Send data as WRTE messages, waiting for each OKAY; raises ConnectionResetError if closed."""
        view = memoryview(data)
        step = self.connection.max_payload
        # Sliced lazily: a large pull should not hold a second full copy as a list of chunks.
        for start in range(0, len(view), step):
            chunk = bytes(view[start : start + step])
            await self._acked.wait()
            if self.peer_closed or self._close_sent:
                raise ConnectionResetError(f"stream {self.local_id} was closed by the host")
            self._acked.clear()
            self.connection.send(A_WRTE, self.local_id, self.remote_id, chunk)
            await self.connection.drain()
        # The service is done only once the host took the last chunk: a CLSE must not overtake it.
        await self._acked.wait()

    def restart_transport(self) -> None:
        """adbd restarts (`adb root`): close this stream, then the whole connection, once the reply is out."""
        self.close()
        self.connection.writer.close()

    def close(self) -> None:
        """Send CLSE once and forget the stream."""
        if not self._close_sent:
            self._close_sent = True
            self.connection.send(A_CLSE, self.local_id, self.remote_id)
        self.connection.forget(self)


class _Connection:
    """One TCP connection from an adb server: message loop, stream table, service tasks."""

    def __init__(self, server: PhoneServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        self.max_payload = _DEFAULT_HOST_PAYLOAD
        self.streams: dict[int, _Stream] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self._next_local_id = 1
        self.task: asyncio.Task[Any] | None = None
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)

    def send(self, command: int, arg0: int, arg1: int, payload: bytes = b"") -> None:
        if self.writer.is_closing():
            raise ConnectionResetError(f"connection from {self.peer} is closed")
        self.writer.write(protocol.encode_message(command, arg0, arg1, payload))

    async def drain(self) -> None:
        await self.writer.drain()

    def forget(self, stream: _Stream) -> None:
        self.streams.pop(stream.local_id, None)

    async def run(self) -> None:
        """Read messages until the host hangs up or sends something that is not adb."""
        try:
            while True:
                header_bytes = await self.reader.readexactly(protocol.HEADER_SIZE)
                header = protocol.decode_header(header_bytes, protocol.MAX_PAYLOAD)
                payload = await self.reader.readexactly(header.data_length) if header.data_length else b""
                self._dispatch(protocol.Message(header.command, header.arg0, header.arg1, payload))
        except asyncio.IncompleteReadError:
            log.debug("adb host %s disconnected", self.peer)
        except ValueError as exc:
            # Not adb (a port scanner, a stray client): drop this connection, keep serving the others.
            log.warning("dropping connection from %s: %s", self.peer, exc)
        except (ConnectionError, OSError) as exc:
            log.info("connection from %s lost: %s", self.peer, exc)
        finally:
            await self.shutdown()

    async def shutdown(self) -> None:
        for stream in list(self.streams.values()):
            stream.on_peer_close()
        self.streams.clear()
        for task in list(self.tasks):
            task.cancel()
        for task in list(self.tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()

    def _dispatch(self, message: protocol.Message) -> None:
        if message.command == A_CNXN:
            self._on_connect(message)
        elif message.command == A_OPEN:
            self._on_open(message)
        elif message.command == A_WRTE:
            stream = self.streams.get(message.arg1)
            if stream is None:
                # A late write to a stream we closed: tell the host it is gone.
                self.send(A_CLSE, 0, message.arg0)
                return
            stream.feed(message.payload)
            self.send(A_OKAY, stream.local_id, stream.remote_id)
        elif message.command == A_OKAY:
            stream = self.streams.get(message.arg1)
            if stream is not None:
                stream.acknowledge()
        elif message.command == A_CLSE:
            stream = self.streams.pop(message.arg1, None)
            if stream is not None:
                stream.on_peer_close()
        else:
            log.info("ignoring %s from %s", message.name, self.peer)

    def _on_connect(self, message: protocol.Message) -> None:
        self.max_payload = max(1, min(message.arg1, protocol.MAX_PAYLOAD))
        banner = protocol.device_banner(self.server.phone.banner_props)
        log.debug("CNXN from %s: %r, max payload %d", self.peer, message.payload, self.max_payload)
        self.send(A_CNXN, protocol.A_VERSION, self.max_payload, banner)

    def _on_open(self, message: protocol.Message) -> None:
        service = protocol.parse_service(message.payload)
        handler = self.server.services.handler_for(service)
        if handler is None:
            log.info("refusing service %r from %s", message.payload.rstrip(b"\0").decode("utf-8", "replace"), self.peer)
            self.send(A_CLSE, 0, message.arg0)
            return
        local_id = self._next_local_id
        self._next_local_id += 1
        stream = _Stream(self, local_id, message.arg0)
        self.streams[local_id] = stream
        self.send(A_OKAY, local_id, message.arg0)
        task = asyncio.get_running_loop().create_task(self._run_service(handler, stream, service))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _run_service(self, handler: Callable[..., Any], stream: _Stream, service: protocol.Service) -> None:
        try:
            await handler(stream, service)
        except (ConnectionResetError, EOFError) as exc:
            log.info("%s stream %d ended early: %s", service.kind, stream.local_id, exc)
        except asyncio.CancelledError:
            raise
        except Exception:
            # A bug behind one command must not take the phone down: end that stream only.
            log.exception("service %r failed", service)
        finally:
            if not self.writer.is_closing():
                stream.close()


class PhoneServer:
    """Serves one simulated phone to adb servers that `adb connect` to its loopback port.

    Args:
        phone: The device behind the wire: ``shell(command)``, ``fs``, ``banner_props``,
            ``counters`` and ``command_log`` as described in docs/architecture.md.
        host: Address to listen on.
        port: Port to listen on; 0 picks a free one (read it from ``.port``).
        latency_ms: Delay before each service reply and each sync reply, like a USB round trip.
    """

    def __init__(self, phone: Any, host: str = "127.0.0.1", port: int = 0, latency_ms: float = 0) -> None:
        self.phone = phone
        self.host = host
        self.port = port
        self.services = PhoneServices(phone, latency_ms)
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[_Connection] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> PhoneServer:
        """Listen on a new event loop in a daemon thread; return once the port accepts connections.

        Returns:
            The server itself, so ``PhoneServer(phone).start().port`` works.

        Raises:
            OSError: The port could not be bound.
        """
        with self._lock:
            if self._thread is not None:
                return self
            loop = asyncio.new_event_loop()
            ready: dict[str, BaseException | None] = {}
            started = threading.Event()

            def run_loop() -> None:
                # Signals belong to the main thread: delivered here, they would leave the main
                # thread blocked in its current call (Ctrl+C would wait for an adb timeout).
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
                asyncio.set_event_loop(loop)
                try:
                    loop.run_until_complete(self.start_serving())
                    ready["error"] = None
                except BaseException as exc:  # noqa: BLE001 - handed to the starting thread
                    ready["error"] = exc
                    started.set()
                    loop.close()
                    return
                started.set()
                try:
                    loop.run_forever()
                finally:
                    loop.run_until_complete(loop.shutdown_asyncgens())
                    loop.close()

            thread = threading.Thread(target=run_loop, name=f"agentbench-sim-{self.host}", daemon=True)
            thread.start()
            if not started.wait(START_TIMEOUT_S):
                loop.call_soon_threadsafe(loop.stop)
                raise OSError(f"the simulated phone's server did not start listening within {START_TIMEOUT_S:g}s")
            if ready["error"] is not None:
                thread.join(START_TIMEOUT_S)
                raise ready["error"]
            self._loop = loop
            self._thread = thread
            return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Close every connection and the event loop; safe to call twice or before start()."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        if loop.is_running():
            future = asyncio.run_coroutine_threadsafe(self.aclose(), loop)
            with contextlib.suppress(Exception):
                future.result(timeout_s)
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout_s)

    def __enter__(self) -> PhoneServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def latency_ms(self) -> float:
        """Delay before each service reply, in milliseconds (may be changed while serving)."""
        return self.services.latency_ms

    @latency_ms.setter
    def latency_ms(self, value: float) -> None:
        self.services.latency_ms = value

    @property
    def open_streams(self) -> int:
        """Number of services currently open across all connections (0 once every client is done)."""
        return sum(len(connection.streams) for connection in list(self._connections))

    async def start_serving(self) -> None:
        """Listen on the running loop (for callers with their own loop); sets ``.port``."""
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("simulated phone listening on %s:%d", self.host, self.port)

    async def serve(self) -> None:
        """Listen on the running loop until cancelled, then close everything."""
        await self.start_serving()
        assert self._server is not None
        try:
            await self._server.serve_forever()
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Stop listening and close every connection (on the server's own loop)."""
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections):
            if connection.task is not None:
                connection.task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await connection.task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = _Connection(self, reader, writer)
        connection.task = asyncio.current_task()
        self._connections.add(connection)
        try:
            await connection.run()
        except asyncio.CancelledError:
            # Cancelled by aclose(): end quietly, asyncio's start_server callback would log it as an error.
            pass
        finally:
            self._connections.discard(connection)
