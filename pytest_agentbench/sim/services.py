"""Service requests (shell, exec, sync) -> calls on a simulated phone, written back as adbd would."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import posixpath
import shlex
import stat as stat_module
from collections.abc import Callable
from typing import Any, Protocol

from pytest_agentbench.sim import protocol

log = logging.getLogger(__name__)

# adb's limit on a sync path.
_SYNC_PATH_MAX = 1024
_PROMPT = b"sim:/ $ "
_ROOT_PROMPT = b"sim:/ # "
_ROOT_SHELL_LINES = ("su", "su 0", "su root", "su -")


SHELL_USER = "shell"


class ServiceStream(Protocol):
    """What a service needs from an open adb stream (sim.transport provides it)."""

    local_id: int

    async def read_some(self) -> bytes: ...

    async def read_exactly(self, count: int) -> bytes: ...

    async def write(self, data: bytes) -> None: ...


class PhoneServices:
    """The adbd services of one phone: each coroutine serves one stream until it is done.

    Args:
        phone: The device (see docs/architecture.md, "Simulated phone").
        latency_ms: Delay before each service reply and each sync reply, like a USB round trip.
    """

    def __init__(self, phone: Any, latency_ms: float = 0) -> None:
        self.phone = phone
        self.latency_ms = latency_ms

    def handler_for(self, service: protocol.Service) -> Callable[..., Any] | None:
        """Return the coroutine serving this service, or None to refuse it."""
        if service.kind == "shell":
            return self._serve_shell
        if service.kind == "exec":
            return self._serve_exec
        if service.kind == "sync":
            return self._serve_sync
        if service.kind in ("root", "unroot") and hasattr(self.phone, "set_adbd_root"):
            return self._serve_root
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

    @property
    def _sync_user(self) -> str:
        return getattr(self.phone, "adbd_user", SHELL_USER)

    def _count(self, kind: str) -> None:
        self.phone.counters[kind] += 1

    async def _serve_root(self, stream: ServiceStream, service: protocol.Service) -> None:
        """`adb root`/`adb unroot`: adbd answers as Android 14's does and, when it switches, restarts.

        Restarting is closing the whole connection after the reply: the adb server sees the device
        go away and reconnects at once, which is what `adb root` waits for.
        """
        self._count(service.kind)
        await self._latency()
        phone = self.phone
        want_root = service.kind == "root"
        if want_root and phone.adbd_root:
            await stream.write(b"adbd is already running as root\n")
            return
        if want_root and not phone.debuggable_build:
            await stream.write(b"adbd cannot run as root in production builds\n")
            return
        if not want_root and not phone.adbd_root:
            await stream.write(b"adbd not running as root\n")
            return
        await self._call(phone.set_adbd_root, want_root)
        await stream.write(b"restarting adbd as root\n" if want_root else b"restarting adbd as non root\n")
        restart = getattr(stream, "restart_transport", None)
        if restart is not None:
            restart()

    async def _run_command(self, command: str, user: str | None = None) -> tuple[bytes, bytes, int]:
        """Run one command line and log it; a failure inside the phone becomes stderr text and status 255."""
        log_length = len(self.phone.command_log)
        try:
            if user is not None:
                result = await self._call(functools.partial(self.phone.shell, command, user=user))
            else:
                result = await self._call(self.phone.shell, command)
        except Exception as exc:
            log.exception("command %r failed inside the simulated phone", command)
            return b"", f"sim: internal error running {command!r}: {exc}\n".encode(), 255
        finally:
            # sim.phone.Phone logs its own commands; log here only for phones that do not, never twice.
            if command not in self.phone.command_log[log_length:]:
                self.phone.command_log.append(command)
        return bytes(result.stdout), bytes(result.stderr), int(result.exit_code)

    async def _serve_shell(self, stream: ServiceStream, service: protocol.Service) -> None:
        self._count("shell")
        if not service.command:
            await self._serve_interactive(stream, service)
            return
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

    async def _serve_exec(self, stream: ServiceStream, service: protocol.Service) -> None:
        self._count("exec")
        install = protocol.parse_streamed_install(service.command)
        if install is not None:
            await self._serve_streamed_install(stream, *install)
            return
        await self._latency()
        stdout, _stderr, _exit_code = await self._run_command(service.command)
        await stream.write(stdout)

    async def _serve_streamed_install(self, stream: ServiceStream, argv: list[str], size: int) -> None:
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

    async def _serve_interactive(self, stream: ServiceStream, service: protocol.Service) -> None:
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
        # `su` alone in an interactive shell opens a root shell: the following lines run as root until `exit`.
        elevated = False
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
                if command in ("exit", "logout") and elevated:
                    elevated = False
                    prompt = _PROMPT if echo else b""
                    await send(protocol.SHELL_STDOUT, prompt)
                    continue
                if command in ("exit", "logout"):
                    stdin_closed = True
                    break
                if command in _ROOT_SHELL_LINES and getattr(self.phone, "debuggable_build", False) and not elevated:
                    elevated = True
                    prompt = _ROOT_PROMPT if echo else b""
                    await send(protocol.SHELL_STDOUT, prompt)
                    continue
                if command:
                    await self._latency()
                    stdout, stderr, exit_code = await self._run_command(command, "root" if elevated else None)
                    await send(protocol.SHELL_STDOUT, stdout.replace(b"\n", newline))
                    await send(protocol.SHELL_STDERR if v2 else protocol.SHELL_STDOUT, stderr.replace(b"\n", newline))
                await send(protocol.SHELL_STDOUT, prompt)
        if v2:
            await stream.write(protocol.encode_shell_exit(exit_code))

    async def _serve_sync(self, stream: ServiceStream, service: protocol.Service) -> None:
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
                    # adbd runs as the shell user (unless `adb root`): an app's private storage stays closed to sync.
                    data = await self._call_fs(functools.partial(fs.read, user=self._sync_user), path)
                except Exception as exc:
                    await stream.write(protocol.sync_fail(_error_text(exc)))
                    return
                await stream.write(protocol.sync_data_records(data))

    async def _sync_send(self, stream: ServiceStream, target: str) -> bool:
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
            await self._call_fs(functools.partial(self.phone.fs.write, user=self._sync_user), path, bytes(content),
                                mode & 0o7777, mtime)
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
