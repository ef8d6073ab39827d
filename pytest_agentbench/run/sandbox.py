"""A SandboxPolicy + the agent's argv and environment -> the same agent confined by bubblewrap, its network bridges, and the proof its processes are gone.

bubblewrap (`bwrap`, Debian `bubblewrap`) gives the agent a mount namespace built from the host's
root read-only with the policy's hidden paths covered, a network namespace with loopback only, a
PID namespace that ends with the agent (`--die-with-parent`, and the kernel kills every process
in it when its first process exits), no capabilities, and its own IPC and UTS namespaces.
`Confinement` is a context manager: entering starts the network bridges and builds the command,
leaving waits for the namespace to be empty and stops the bridges; the runner in between owns
the bwrap process's group as it owns any agent's. See docs/isolation.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_agentbench.run.bridgelog import BridgeLogWriter
from pytest_agentbench.run.invocation import ADB_AGENT_VARIABLES
from pytest_agentbench.run.netbridge import Endpoint, NetBridge
from pytest_agentbench.run.sandbox_policy import LOOPBACK_NAMES, SandboxPolicy

BWRAP = "bwrap"
INSTALL_HINT = "apt-get install bubblewrap"
MODES = ("auto", "on", "off")
#: Where the bridge sockets appear inside the sandbox (its /run is an empty tmpfs).
NET_DIR_INSIDE = "/run/agentbench-net"
FORWARDER = Path(__file__).with_name("sandbox_forward.py")
#: The port the CONNECT proxy listens on inside the sandbox when no allowed endpoint takes it.
PROXY_PORT = 3128
#: Variables that would lead the agent back to the harness (warm starts run outside any sandbox).
HARNESS_VARIABLES = ("AGENTBENCH_WARM_SOCKET", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK",
                     "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "TMPDIR")
_NAMESPACE_GONE_S = 5.0
_INFO_WAIT_S = 5.0


@dataclass(frozen=True)
class Availability:
    """Whether bubblewrap can confine an agent here, and if not, why."""

    usable: bool
    version: str | None = None
    reason: str | None = None


_probed: dict[str, Availability] = {}


def probe(bwrap: str | None = None) -> Availability:
    """Try a confined `true` with every namespace the sandbox uses (user namespaces may be off); once per executable and process.

    Args:
        bwrap: The bwrap executable (default: `bwrap` on PATH).
    """
    if sys.platform != "linux":
        return Availability(False, reason=f"bubblewrap runs on Linux only (this is {sys.platform})")
    executable = bwrap or shutil.which(BWRAP)
    if not executable:
        return Availability(False, reason=f"bwrap is not installed ({INSTALL_HINT})")
    if executable not in _probed:
        _probed[executable] = _try(executable)
    return _probed[executable]


def _try(executable: str) -> Availability:
    try:
        version = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
        trial = subprocess.run(
            [executable, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--unshare-pid",
             "--unshare-ipc", "--unshare-uts", "--cap-drop", "ALL", "--die-with-parent", "true"],
            capture_output=True, text=True, timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Availability(False, reason=f"bwrap could not run: {exc}")
    if trial.returncode != 0:
        why = (trial.stderr or "").strip().splitlines()[-1:] or [f"exit {trial.returncode}"]
        return Availability(False, version=version or None,
                            reason=f"bwrap cannot create namespaces here ({why[0]}); user namespaces may be disabled")
    return Availability(True, version=version or None)


def _forward_specs(policy: SandboxPolicy, sockets: Mapping[Endpoint, str], proxy_socket: str | None) -> tuple[list[str], int | None]:
    specs = []
    for endpoint in policy.loopback:
        path = sockets[endpoint]
        host = endpoint.host
        if host.lower() in LOOPBACK_NAMES:
            specs += [f"127.0.0.1:{endpoint.port}={path}", f"[::1]:{endpoint.port}={path}"]
        else:
            specs.append(f"{host}:{endpoint.port}={path}" if ":" not in host else f"[{host}]:{endpoint.port}={path}")
    proxy_port = None
    if proxy_socket is not None:
        taken = {endpoint.port for endpoint in policy.loopback}
        proxy_port = next(port for port in range(PROXY_PORT, PROXY_PORT + 100) if port not in taken)
        specs.append(f"127.0.0.1:{proxy_port}={proxy_socket}")
    return specs, proxy_port


def self_test_probes(policy: SandboxPolicy, *, closed: Sequence[Endpoint] = (), sockets: Sequence[str] = (),
                     labels: Mapping[Path, str] | None = None) -> dict:
    """What the sandbox's first process checks from inside before the agent starts (`sandbox_forward.self_test`).

    Every hidden path must show nothing but what is shown again in it; every endpoint in `closed`
    (the adb server, the default adb port) must refuse; every socket in `sockets` (the relay's, the
    model bridge's) must be there.
    """
    names = dict(labels or {})
    inside = [*policy.expose, *policy.writable, policy.workdir, Path(NET_DIR_INSIDE)]
    hidden = []
    # The outermost hidden paths, and the ones a reader asks about by name (the run directory,
    # the project, the output tree) even when an outer one covers them.
    for path in dict.fromkeys([*policy.hide, *(Path(p) for p in names)]):
        shown = sorted({p.relative_to(path).parts[0] for p in inside if p != path and p.is_relative_to(path)})
        hidden.append({"what": names.get(path, f"hidden path {path}"), "path": str(path), "shown": shown})
    return {
        "hidden": hidden,
        "closed": [{"what": f"TCP {endpoint}", "host": endpoint.host, "port": endpoint.port}
                   for endpoint in dict.fromkeys(Endpoint("127.0.0.1" if e.host.lower() in LOOPBACK_NAMES else e.host, e.port)
                                                 for e in closed)],
        "sockets": [{"what": f"socket {path}", "path": path} for path in sockets],
    }


def bwrap_argv(policy: SandboxPolicy, argv: Sequence[str], *, net_dir: Path | None, forwards: Sequence[str],
               info_fd: int | None = None, bwrap: str = BWRAP, python: str = sys.executable,
               credentials: Path | None = None, self_test: str | None = None) -> list[str]:
    """The bwrap command line that runs `argv` under `policy` (pure).

    Args:
        policy: What the agent sees, writes and reaches.
        argv: The agent's own command line.
        net_dir: The host directory of the bridge sockets (bound at `NET_DIR_INSIDE`), if any.
        forwards: `HOST:PORT=SOCKET` specs for the forwarder; none runs the agent directly.
        info_fd: The fd bwrap reports its namespace's first process on (`--info-fd`).
        bwrap: The bwrap executable.
        python: The interpreter that runs the forwarder (standard library only).
        credentials: The harness's read-only copy of the operator's sign-in (`run/sign_in.py`),
            bound at the agent's own `~/.claude/.credentials.json`.
        self_test: `FD=PROBES` for the first process's self-test (`self_test_probes`), if any.
    """
    command = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for path in policy.hide:
        command += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
    for path in policy.expose:
        command += ["--ro-bind", str(path), str(path)]
    for path in policy.writable:
        command += ["--bind", str(path), str(path)]
    command += ["--bind", str(policy.workdir), str(policy.workdir)]
    if credentials is not None:
        command += ["--ro-bind", str(credentials), str(policy.workdir / ".claude" / ".credentials.json")]
    if net_dir is not None:
        command += ["--ro-bind", str(net_dir), NET_DIR_INSIDE]
    command += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--cap-drop", "ALL", "--die-with-parent", "--chdir", str(policy.workdir)]
    if info_fd is not None:
        command += ["--info-fd", str(info_fd)]
    command.append("--")
    if forwards or self_test:
        command += [python, "-I", "-S", str(FORWARDER), *(["--selftest", self_test] if self_test else []), *forwards, "--"]
    return command + list(argv)


def confined_environment(env: Mapping[str, str], policy: SandboxPolicy, proxy_port: int | None) -> dict[str, str]:
    """The agent's environment inside: HOME is the workdir, no harness sockets, the proxy when remote hosts are allowed."""
    inside = {name: value for name, value in env.items() if name not in HARNESS_VARIABLES and name not in ADB_AGENT_VARIABLES}
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        inside.pop(name, None)
    inside["HOME"] = str(policy.workdir)
    inside["AGENTBENCH_SANDBOX"] = "bwrap"
    if proxy_port is not None:
        proxy = f"http://127.0.0.1:{proxy_port}"
        inside.update({"HTTPS_PROXY": proxy, "https_proxy": proxy, "NO_PROXY": "127.0.0.1,localhost,::1", "no_proxy": "127.0.0.1,localhost,::1"})
    return inside


class Confinement:
    """One confined agent run: `with Confinement(policy, argv, env) as c: run_agent(c.argv, env=c.env, ...)`."""

    def __init__(self, policy: SandboxPolicy, argv: Sequence[str], env: Mapping[str, str], *, bwrap: str | None = None,
                 bridge_log: Path | None = None, closed: Sequence[Endpoint] = (), needed_sockets: Sequence[Path] = (),
                 labels: Mapping[Path, str] | None = None) -> None:
        self.policy = policy
        #: What the self-test must find refused (the adb server) and present (the relay's sockets).
        self._closed = (*closed, Endpoint("127.0.0.1", 5037))
        self._needed_sockets = [str(path) for path in needed_sockets]
        self._labels = dict(labels or {})
        self._test_r: int | None = None
        self._test_w: int | None = None
        #: The self-test's answer from inside (`sandbox_forward.self_test`); None until the run ended.
        self.self_test: dict | None = None
        #: Where the model bridge records its connections (`run/bridgelog.py`); None: not recorded.
        self.bridge_log = bridge_log
        self._bridge_writer: BridgeLogWriter | None = None
        self._argv = list(argv)
        self._env = dict(env)
        self._bwrap = bwrap or shutil.which(BWRAP, path=env.get("PATH")) or shutil.which(BWRAP) or BWRAP
        self._bridge: NetBridge | None = None
        self._net_dir: Path | None = None
        self._auth_dir: Path | None = None
        self._info_r: int | None = None
        self._info_w: int | None = None
        self.argv: list[str] = []
        self.env: dict[str, str] = {}
        self.pass_fds: tuple[int, ...] = ()
        self.namespace_pid: int | None = None
        self.leftovers: list[int] = []

    def __enter__(self) -> Confinement:
        sockets: dict[Endpoint, str] = {}
        proxy_socket = None
        if self.policy.loopback or self.policy.remote:
            self._net_dir = Path(tempfile.mkdtemp(prefix="agentbench-net-"))
            if self.bridge_log is not None:
                self._bridge_writer = BridgeLogWriter(self.bridge_log, [str(e) for e in (*self.policy.loopback, *self.policy.remote)])
            self._bridge = NetBridge(self._net_dir, record=self._bridge_writer.write if self._bridge_writer else None)
            for number, endpoint in enumerate(self.policy.loopback):
                self._bridge.forward(f"to{number}", endpoint)
                sockets[endpoint] = f"{NET_DIR_INSIDE}/to{number}.sock"
            if self.policy.remote:
                self._bridge.proxy("proxy", self.policy.remote, upstream=self.policy.upstream)
                proxy_socket = f"{NET_DIR_INSIDE}/proxy.sock"
            self._bridge.start()
        forwards, proxy_port = _forward_specs(self.policy, sockets, proxy_socket)
        credentials = None
        if self.policy.sign_in is not None:
            # Outside the run directory, private to this user, gone with the sandbox.
            self._auth_dir = Path(tempfile.mkdtemp(prefix="agentbench-auth-"))
            credentials = self.policy.sign_in.write_copy(self._auth_dir)
        self._info_r, self._info_w = os.pipe()
        self._test_r, self._test_w = os.pipe()
        self.pass_fds = (self._info_w, self._test_w)
        bridge_sockets = [f"{NET_DIR_INSIDE}/{path.name}" for path in (self._bridge.paths if self._bridge is not None else ())]
        probes = self_test_probes(self.policy, closed=self._closed, sockets=[*self._needed_sockets, *bridge_sockets], labels=self._labels)
        self.argv = bwrap_argv(self.policy, self._argv, net_dir=self._net_dir, forwards=forwards,
                               info_fd=self._info_w, bwrap=self._bwrap, credentials=credentials,
                               self_test=f"{self._test_w}={json.dumps(probes, separators=(',', ':'))}")
        self.env = confined_environment(self._env, self.policy, proxy_port)
        return self

    def started(self) -> None:
        """Call once the bwrap process runs: closes our copies of the info and self-test fds' write ends."""
        for name in ("_info_w", "_test_w"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)

    def _drain(self, fd: int) -> bytes:
        """Everything written to one of our pipes by processes now gone (their write ends closed), without blocking."""
        self.started()
        data = b""
        with contextlib.suppress(OSError):
            os.set_blocking(fd, False)
            while chunk := os.read(fd, 65536):
                data += chunk
        return data

    def _read_self_test(self) -> dict | None:
        if self._test_r is None:
            return None
        data = self._drain(self._test_r)
        try:
            answer = json.loads(data.decode() or "null")
        except (ValueError, UnicodeDecodeError):
            return {"ok": False, "checks": [], "error": f"unreadable self-test answer: {data[:200]!r}"}
        return answer if isinstance(answer, dict) else None

    def _read_namespace(self) -> tuple[int | None, int | None]:
        """bwrap's `--info-fd` report: the namespace's first process (host pid) and the PID namespace's inode."""
        if self._info_r is None:
            return None, None
        data = self._drain(self._info_r)
        with contextlib.suppress(ValueError, AttributeError, json.JSONDecodeError):
            info = json.loads(data.decode() or "{}")
            return int(info.get("child-pid") or 0) or None, int(info.get("pid-namespace") or 0) or None
        return None, None

    @property
    def bridge_recorded(self) -> bool:
        """Whether this run had a model bridge that recorded its connections in `bridge_log`."""
        return self._bridge_writer is not None

    @property
    def refused(self) -> list[str]:
        """CONNECT targets the proxy refused (hosts the run does not need)."""
        return list(self._bridge.refused) if self._bridge is not None else []

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.self_test = self._read_self_test()
            self.namespace_pid, namespace = self._read_namespace()
            self.leftovers = end_namespace(self.namespace_pid, namespace_id=namespace)
        finally:
            if self._bridge is not None:
                self._bridge.close()
            if self._bridge_writer is not None:
                self._bridge_writer.close()
            for private in (self._net_dir, self._auth_dir):
                if private is not None:
                    shutil.rmtree(private, ignore_errors=True)
            for fd in (self._info_r, self._info_w, self._test_r, self._test_w):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self._info_r = self._info_w = self._test_r = self._test_w = None


def _namespace_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _members(namespace: str) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _namespace_of(int(entry.name)) == namespace:
            with contextlib.suppress(OSError):
                if (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z":
                    members.append(int(entry.name))
    return members


def end_namespace(pid: int | None, *, namespace_id: int | None = None, timeout_s: float = _NAMESPACE_GONE_S) -> list[int]:
    """Make sure the sandbox's PID namespace is empty: SIGKILL its first process if it lives on, wait.

    The kernel kills every process of a PID namespace when its first process exits, and bwrap's
    `--die-with-parent` kills that one when bwrap goes; this waits for both, so nothing the agent
    started (a daemon that left its process group) is alive when the post-run reads begin.

    Args:
        pid: The namespace's first process, as the host numbers it.
        namespace_id: The PID namespace's inode (bwrap reports it); a pid now in another
            namespace was reused, and is left alone.
        timeout_s: How long to wait for the namespace to empty.

    Returns:
        The pids still alive after the wait (empty when the namespace is gone).
    """
    if pid is None:
        return []
    namespace = _namespace_of(pid)
    if namespace is None or namespace == _namespace_of(os.getpid()):
        return []
    if namespace_id is not None and namespace != f"pid:[{namespace_id}]":
        return []
    members = _members(namespace)
    if members:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while members and time.monotonic() < deadline:
        time.sleep(0.02)
        members = _members(namespace)
    return members
