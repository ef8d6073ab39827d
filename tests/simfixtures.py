"""Test helpers for the simulated phone: a private adb server and a phone double that honours the Phone contract."""

from __future__ import annotations

import collections
import os
import shlex
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from adbserver import _started_server

ADB = shutil.which("adb") or "/usr/bin/adb"


@dataclass
class PrivateAdb:
    """The real adb CLI pointed at a private adb server (never the default port 5037)."""

    port: int
    home: Path

    @property
    def env(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("ANDROID_", "ADB_"))}
        env.update(ANDROID_ADB_SERVER_PORT=str(self.port), HOME=str(self.home), ADB_MDNS="0")
        return env

    def argv(self, *args: str, serial: str | None = None) -> list[str]:
        prefix = [ADB, "-P", str(self.port)]
        if serial is not None:
            prefix += ["-s", serial]
        return prefix + list(args)

    def run(self, *args: str, serial: str | None = None, timeout_s: float = 30, stdin: bytes | None = b"") -> subprocess.CompletedProcess[bytes]:
        """Run one adb command to completion and return its bytes and exit status."""
        return subprocess.run(
            self.argv(*args, serial=serial), input=stdin, capture_output=True, timeout=timeout_s, env=self.env, check=False,
        )

    def popen(self, *args: str, serial: str | None = None, **kwargs: object) -> subprocess.Popen[bytes]:
        """Start one adb command in its own process group (so it can be killed as a group)."""
        return subprocess.Popen(self.argv(*args, serial=serial), env=self.env, start_new_session=True, **kwargs)

    def connect(self, port: int, timeout_s: float = 15) -> str:
        """Attach a simulated phone listening on port and wait until its state is `device`."""
        serial = f"127.0.0.1:{port}"
        deadline = time.monotonic() + timeout_s
        while True:
            result = self.run("connect", serial)
            state = self.run("get-state", serial=serial)
            if state.stdout.strip() == b"device":
                return serial
            if time.monotonic() > deadline:
                raise AssertionError(f"{serial} never became a device: {result.stdout!r} {state.stderr!r}")
            time.sleep(0.1)

    def disconnect(self, serial: str) -> None:
        self.run("disconnect", serial)


@pytest.fixture(scope="module")
def private_adb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdb]:
    """A private adb server for one test module, killed afterwards."""
    if not os.path.exists(ADB):
        pytest.skip("the adb command line is not installed")
    home = tmp_path_factory.mktemp("adb-home")
    server = _started_server(ADB, home, home=home)
    try:
        yield PrivateAdb(port=server.port, home=home)
    finally:
        server.stop()


@dataclass(frozen=True)
class FakeStat:
    mode: int
    size: int
    mtime: int


@dataclass(frozen=True)
class FakeResult:
    stdout: bytes
    stderr: bytes
    exit_code: int


class FakeFs:
    """A dict-backed file system with the Phone contract's fs methods."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, int, int]] = {}
        self.dirs = {"/", "/sdcard", "/data", "/data/local", "/data/local/tmp"}
        self.lock = threading.Lock()

    def stat(self, path: str) -> FakeStat | None:
        path = path.rstrip("/") or "/"
        with self.lock:
            if path in self.dirs:
                return FakeStat(stat.S_IFDIR | 0o771, 4096, 0)
            if path in self.files:
                data, mode, mtime = self.files[path]
                return FakeStat(stat.S_IFREG | mode, len(data), mtime)
        return None

    def read(self, path: str, *, user: str = "root") -> bytes:
        with self.lock:
            if path in self.dirs:
                raise IsADirectoryError(21, "Is a directory", path)
            if path not in self.files:
                raise FileNotFoundError(2, "No such file or directory", path)
            return self.files[path][0]

    def remove(self, path: str) -> None:
        with self.lock:
            self.files.pop(path)

    def write(self, path: str, data: bytes, mode: int = 0o644, mtime: int | None = None, *, user: str = "root") -> None:
        with self.lock:
            if path in self.dirs:
                raise IsADirectoryError(21, "Is a directory", path)
            self.files[path] = (bytes(data), mode, int(time.time()) if mtime is None else mtime)

    def listdir(self, path: str) -> list[str]:
        path = path.rstrip("/") or "/"
        with self.lock:
            if path not in self.dirs:
                raise NotADirectoryError(20, "Not a directory", path)
            prefix = path.rstrip("/") + "/"
            names = {entry[len(prefix):].split("/")[0] for entry in (*self.files, *self.dirs) if entry.startswith(prefix) and entry != path}
        return sorted(names)


@dataclass
class FakePhone:
    """A phone double: a handful of commands, enough to check every byte the transport moves."""

    banner_props: dict[str, str] = field(default_factory=lambda: {
        "ro.product.name": "sim_phone", "ro.product.model": "Sim Phone", "ro.product.device": "sim",
    })
    fs: FakeFs = field(default_factory=FakeFs)
    counters: collections.Counter = field(default_factory=collections.Counter)
    command_log: list[str] = field(default_factory=list)
    # `gate` blocks until the test opens it: a slow command whose end the test controls.
    gate: threading.Event = field(default_factory=threading.Event)
    # sim.phone.Phone logs each command it runs; False plays a phone that leaves that to the transport.
    logs_commands: bool = True
    installed: list[bytes] = field(default_factory=list)

    def shell(self, command: str) -> FakeResult:
        if self.logs_commands:
            self.command_log.append(command)
        argv = shlex.split(command)
        name = argv[0].rsplit("/", 1)[-1] if argv else ""
        args = argv[1:]
        if name == "getprop":
            props = {"ro.build.version.sdk": "34", "ro.product.model": self.banner_props["ro.product.model"]}
            return FakeResult(props.get(args[0], "").encode() + b"\n" if args else b"", b"", 0)
        if name in ("true", "false"):
            return FakeResult(b"", b"", 0 if name == "true" else 1)
        if name == "echo":
            return FakeResult(" ".join(args).encode() + b"\n", b"", 0)
        if name == "cat":
            try:
                return FakeResult(b"".join(self.fs.read(path) for path in args), b"", 0)
            except OSError as exc:
                return FakeResult(b"", f"cat: {exc.filename}: {exc.strerror}\n".encode(), 1)
        if name == "both":
            return FakeResult(b"to stdout\n", b"to stderr\n", 3)
        if name == "bytes":
            return FakeResult(bytes(range(256)) * int(args[0]), b"noise on stderr\n", 0)
        if name == "sleep":
            time.sleep(float(args[0]))
            return FakeResult(b"", b"", 0)
        if name in ("cmd", "pm") and "install" in args:
            # Installs whatever APK path comes last, like `pm install -r PATH`.
            try:
                self.installed.append(self.fs.read(args[-1]))
            except OSError as exc:
                return FakeResult(f"Failure [{exc.strerror}]\n".encode(), b"", 1)
            return FakeResult(b"Success\n", b"", 0)
        if name == "gate":
            opened = self.gate.wait(timeout=30)
            return FakeResult(b"gate opened\n" if opened else b"", b"", 0 if opened else 1)
        if name == "crash":
            raise RuntimeError("the simulated phone tripped over this command")
        return FakeResult(b"", f"/system/bin/sh: {name}: inaccessible or not found\n".encode(), 127)
