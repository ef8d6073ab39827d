"""adb host connections -> a simulated phone's services: the adbd side of the wire protocol, on asyncio."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import posixpath
import shlex
import stat as stat_module
import threading
from collections.abc import Callable
from typing import Any

from pytest_agentbench.sim import protocol
from pytest_agentbench.sim.protocol import A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_WRTE

log = logging.getLogger(__name__)

# Before the host's CNXN says otherwise, adb assumes the v1 payload limit.
_DEFAULT_HOST_PAYLOAD = 4096
# adb's own limit on a sync path (SYNC_MAX_PATH... in practice 1024).
_SYNC_PATH_MAX = 1024
_PROMPT = b"sim:/ $ "


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
        for chunk in protocol.split_payload(data, self.connection.max_payload):
            await self._acked.wait()
            if self.peer_closed or self._close_sent:
                raise ConnectionResetError(f"stream {self.local_id} was closed by the host")
            self._acked.clear()
            self.connection.send(A_WRTE, self.local_id, self.remote_id, chunk)
            await self.connection.drain()
        # The service is done only once the host took the last chunk: a CLSE must not overtake it.
        await self._acked.wait()

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
        handler = self.server.handler_for(service)
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
        self.latency_ms = latency_ms
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
            started.wait()
            if ready["error"] is not None:
                thread.join()
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

    # -- services --------------------------------------------------------------------------

    def handler_for(self, service: protocol.Service) -> Callable[..., Any] | None:
        """Return the coroutine serving this service, or None to refuse it."""
        if service.kind == "shell":
            return self._serve_shell
        if service.kind == "exec":
            return self._serve_exec
        if service.kind == "sync":
            return self._serve_sync
        return None

    async def _latency(self) -> None:
        if self.latency_ms > 0:
            await asyncio.sleep(self.latency_ms / 1000)

    async def _call(self, function: Callable[..., Any], *args: Any) -> Any:
        # A slow command in a worker thread leaves other connections alone.
        return await asyncio.get_running_loop().run_in_executor(None, function, *args)

    async def _call_fs(self, function: Callable[..., Any], *args: Any) -> Any:
        # phone.fs is not locked by itself; hold the phone's lock so sync never races a command.
        lock = getattr(self.phone, "lock", None)

        def locked() -> Any:
            if lock is None:
                return function(*args)
            with lock:
                return function(*args)

        return await self._call(locked)

    def _count(self, kind: str) -> None:
        self.phone.counters[kind] += 1

    async def _run_command(self, command: str) -> tuple[bytes, bytes, int]:
        """Run one command line and log it; a failure inside the phone becomes stderr text and status 255."""
        log_length = len(self.phone.command_log)
        try:
            result = await self._call(self.phone.shell, command)
        except Exception as exc:
            log.exception("command %r failed inside the simulated phone", command)
            return b"", f"sim: internal error running {command!r}: {exc}\n".encode(), 255
        finally:
            # sim.phone.Phone logs its own commands; log here only for phones that do not, never twice.
            if command not in self.phone.command_log[log_length:]:
                self.phone.command_log.append(command)
        return bytes(result.stdout), bytes(result.stderr), int(result.exit_code)

    async def _serve_shell(self, stream: _Stream, service: protocol.Service) -> None:
        if not service.command:
            self._count("shell")
            await self._serve_interactive(stream, service)
            return
        self._count("shell")
        await self._latency()
        stdout, stderr, exit_code = await self._run_command(service.command)
        if service.shell_v2:
            frames = b""
            if stdout:
                frames += protocol.encode_shell_packet(protocol.SHELL_STDOUT, stdout)
            if stderr:
                frames += protocol.encode_shell_packet(protocol.SHELL_STDERR, stderr)
            await stream.write(frames + protocol.encode_shell_exit(exit_code))
        else:
            # v1 has one channel and no status, exactly like adbd without shell_v2.
            await stream.write(stdout + stderr)

    async def _serve_exec(self, stream: _Stream, service: protocol.Service) -> None:
        self._count("exec")
        install = protocol.parse_streamed_install(service.command)
        if install is not None:
            await self._serve_streamed_install(stream, *install)
            return
        await self._latency()
        stdout, _stderr, _exit_code = await self._run_command(service.command)
        await stream.write(stdout)

    async def _serve_streamed_install(self, stream: _Stream, argv: list[str], size: int) -> None:
        """`adb install` with the cmd feature streams the APK into `exec:cmd package install -S N`.

        The phone's commands take no stdin, so the APK is staged as a file and the command is run
        with that path instead of ``-S N``, which is what `pm install` does with a pushed APK.
        """
        data = await stream.read_exactly(size)
        staged = f"/data/local/tmp/.adb-install-{stream.local_id}-{id(stream):x}.apk"
        await self._call_fs(self.phone.fs.write, staged, data, 0o644, None)
        try:
            await self._latency()
            stdout, _stderr, _exit_code = await self._run_command(shlex.join([*argv, staged]))
        finally:
            remove = getattr(self.phone.fs, "remove", None)
            if remove is not None:
                with contextlib.suppress(Exception):
                    await self._call_fs(remove, staged)
        await stream.write(stdout)

    async def _serve_interactive(self, stream: _Stream, service: protocol.Service) -> None:
        """A line-at-a-time shell for `adb shell` without a command: each line runs as one command."""
        v2 = service.shell_v2
        # With a pty the client's terminal is raw: the device echoes and prompts, like sh on a tty.
        echo = service.pty
        prompt = _PROMPT if echo else b""
        reader = protocol.ShellPacketReader()

        async def send(packet_id: int, data: bytes) -> None:
            if data:
                await stream.write(protocol.encode_shell_packet(packet_id, data) if v2 else data)

        await send(protocol.SHELL_STDOUT, prompt)
        pending = bytearray()
        exit_code = 0
        stdin_closed = False
        newline = b"\r\n" if echo else b"\n"
        while not stdin_closed:
            data = await stream.read_some()
            if not data:
                return
            if v2:
                stdin = b""
                for packet_id, packet in reader.feed(data):
                    if packet_id == protocol.SHELL_STDIN:
                        stdin += packet
                    elif packet_id == protocol.SHELL_CLOSE_STDIN:
                        stdin_closed = True
                        # sh runs a last line that has no newline when its input ends.
                        if (pending + stdin).strip() and not (pending + stdin).endswith((b"\n", b"\r")):
                            stdin += b"\n"
                data = stdin
            # A terminal sends CR for Enter; a pipe sends LF.
            pending += data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            while b"\n" in pending:
                line, _, rest = bytes(pending).partition(b"\n")
                pending = bytearray(rest)
                if echo:
                    await send(protocol.SHELL_STDOUT, line + newline)
                command = line.decode("utf-8", "replace").strip()
                if command in ("exit", "logout"):
                    stdin_closed = True
                    break
                if command:
                    await self._latency()
                    stdout, stderr, exit_code = await self._run_command(command)
                    await send(protocol.SHELL_STDOUT, stdout.replace(b"\n", newline))
                    await send(protocol.SHELL_STDERR if v2 else protocol.SHELL_STDOUT, stderr.replace(b"\n", newline))
                await send(protocol.SHELL_STDOUT, prompt)
        if v2:
            await stream.write(protocol.encode_shell_exit(exit_code))

    async def _serve_sync(self, stream: _Stream, service: protocol.Service) -> None:
        self._count("sync")
        fs = self.phone.fs
        while True:
            try:
                header = await stream.read_exactly(8)
            except EOFError:
                return
            request_id, argument = protocol.decode_sync_request(header)
            if request_id == "QUIT":
                return
            if request_id not in ("STAT", "STA2", "LST2", "LIST", "RECV", "SEND"):
                await stream.write(protocol.sync_fail(f"unknown sync request {request_id!r}"))
                return
            if argument > _SYNC_PATH_MAX:
                await stream.write(protocol.sync_fail(f"path of {argument} bytes is too long"))
                return
            path = (await stream.read_exactly(argument)).decode("utf-8", "surrogateescape")
            log.debug("sync %s %s", request_id, path)
            if request_id == "SEND":
                # The file's bytes follow the request; read them all before replying, as adbd does.
                if not await self._sync_send(stream, path):
                    return
                continue
            await self._latency()
            if request_id == "STAT":
                described = await self._call_fs(_describe, fs, path)
                await stream.write(protocol.encode_stat_v1(*described) if described else protocol.encode_stat_v1(0, 0, 0))
            elif request_id in ("STA2", "LST2"):
                described = await self._call_fs(_describe, fs, path)
                if described is None:
                    await stream.write(protocol.encode_stat_v2(request_id, error=protocol.ENOENT))
                else:
                    mode, size, mtime = described
                    await stream.write(protocol.encode_stat_v2(request_id, mode=mode, size=size, mtime=mtime))
            elif request_id == "LIST":
                entries = await self._call_fs(_list_entries, fs, path)
                records = [protocol.encode_dent(mode, size, mtime, name) for name, mode, size, mtime in entries]
                await stream.write(b"".join(records) + protocol.encode_dent_done())
            elif request_id == "RECV":
                try:
                    data = await self._call_fs(fs.read, path)
                except Exception as exc:
                    await stream.write(protocol.sync_fail(_error_text(exc)))
                    return
                await stream.write(protocol.sync_data_records(data))

    async def _sync_send(self, stream: _Stream, target: str) -> bool:
        """Receive SEND's DATA records up to DONE, store the file, reply OKAY; False after a FAIL."""
        try:
            path, mode = protocol.parse_send_target(target.encode("utf-8", "surrogateescape"))
        except ValueError as exc:
            await stream.write(protocol.sync_fail(str(exc)))
            return False
        content = bytearray()
        while True:
            record_id, argument = protocol.decode_sync_request(await stream.read_exactly(8))
            if record_id == "DATA":
                if argument > protocol.SYNC_DATA_MAX:
                    await stream.write(protocol.sync_fail(f"DATA record of {argument} bytes exceeds {protocol.SYNC_DATA_MAX}"))
                    return False
                content += await stream.read_exactly(argument)
            elif record_id == "DONE":
                mtime = argument
                break
            else:
                await stream.write(protocol.sync_fail(f"expected DATA or DONE after SEND, got {record_id!r}"))
                return False
        await self._latency()
        try:
            await self._call_fs(self.phone.fs.write, path, bytes(content), mode & 0o7777, mtime)
        except Exception as exc:
            await stream.write(protocol.sync_fail(f"{path}: {_error_text(exc)}"))
            return False
        await stream.write(protocol.sync_okay())
        return True


def _describe(fs: Any, path: str) -> tuple[int, int, int] | None:
    """Return (mode with type bits, size, mtime) for a path, or None when it does not exist."""
    found = fs.stat(path)
    if found is None:
        return None
    mode = int(found.mode)
    if not stat_module.S_IFMT(mode):
        mode = protocol.file_type_mode(mode, is_dir=_is_dir(fs, path))
    return mode, int(found.size), int(found.mtime)


def _is_dir(fs: Any, path: str) -> bool:
    try:
        fs.listdir(path)
    except Exception:
        return False
    return True


def _list_entries(fs: Any, path: str) -> list[tuple[str, int, int, int]]:
    """Return (name, mode, size, mtime) for each entry of a directory; empty when unreadable."""
    try:
        names = fs.listdir(path)
    except Exception:
        return []
    entries = []
    for name in names:
        described = _describe(fs, posixpath.join(path, name))
        if described is not None:
            entries.append((name, *described))
    return entries


def _error_text(exc: BaseException) -> str:
    # adbd sends strerror(errno); OSError carries exactly that.
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
