"""An agent invocation + the run's paths -> SandboxPolicy: what the confined agent may see, write and reach (pure, no I/O but path checks).

The policy is the rule set of docs/isolation.md: the project, the output tree, the run
directory, the suites and plans, temp directories, /run and the harness's private state are
hidden (an empty tmpfs over each); the interpreter, this package and the agent's executable are
shown again read-only; the agent writes only in its workdir (its HOME) and the paths the harness
binds for it (the relay's socket directory). The network is the model endpoint only.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pytest_agentbench.run.netbridge import Endpoint, UpstreamProxy
from pytest_agentbench.run.sign_in import SignIn, credentials_file, find_sign_in

#: The agent command names that get no model endpoint (the scripted replay agent) or the
#: OpenAI-compatible one (seed 004's agent); every other command is treated as Claude Code.
REPLAY_AGENTS = ("agentbench-replay",)
OPENAI_AGENTS = ("agentbench-agent",)
ANTHROPIC_DEFAULT = Endpoint("api.anthropic.com", 443)
OPENAI_BASE_URL = "AGENTBENCH_OPENAI_BASE_URL"
ANTHROPIC_BASE_URL = "ANTHROPIC_BASE_URL"
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")
#: Directories hidden in every sandbox besides the run's own paths.
ALWAYS_HIDDEN = ("/tmp", "/var/tmp", "/run", "/var/run", "/dev/shm")
#: Harness state under the invoking user's HOME that the agent has no business reading, and the
#: user's own Claude Code state (its sign-in with the refresh token, other sessions' transcripts).
HOME_HIDDEN = (".android", ".auto-mobile", ".claude", ".claude.json")


@dataclass(frozen=True)
class SandboxPolicy:
    """What one confined agent sees and reaches.

    Attributes:
        workdir: The agent's empty working directory: its HOME, the one place it writes.
        hide: Directories covered by an empty tmpfs (files by /dev/null), parents first.
        expose: Paths shown again, read-only, inside hidden ones (the venv, this package).
        writable: Paths bound read-write at their own place (the relay's socket directory).
        loopback: Loopback endpoints the agent reaches at the same host and port (a local
            model API); each is carried through a unix socket.
        remote: Hosts the agent reaches through the allowlisting CONNECT proxy (HTTPS_PROXY).
        upstream: The operator's HTTP proxy that proxy's tunnels go through (the harness's own
            ``HTTPS_PROXY``), or None: the model host is reached directly.
        sign_in: The operator's Claude Code subscription sign-in, bound read-only (without its
            refresh token) at the agent's own ``~/.claude/.credentials.json``; None when an API
            variable authenticates or no sign-in exists.
        agent_kind: ``claude``, ``openai`` or ``replay``: which endpoint rules applied.
        notes: Sentences for the record (an upstream proxy used, a plain-http remote refused).
    """

    workdir: Path
    hide: tuple[Path, ...] = ()
    expose: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    loopback: tuple[Endpoint, ...] = ()
    remote: tuple[Endpoint, ...] = ()
    upstream: UpstreamProxy | None = None
    sign_in: SignIn | None = None
    agent_kind: str = "claude"
    notes: tuple[str, ...] = field(default=())

    def describe(self) -> dict:
        """The policy as result.json records it (paths as strings)."""
        return {
            "workdir": str(self.workdir),
            "hidden": [str(path) for path in self.hide],
            "writable": [str(path) for path in self.writable],
            "loopback": [str(endpoint) for endpoint in self.loopback],
            "remote": [str(endpoint) for endpoint in self.remote],
            # Where the tunnels went on to; never its credentials.
            "upstreamProxy": str(self.upstream.endpoint) if self.upstream is not None else None,
            "signIn": self.sign_in.describe() if self.sign_in is not None else None,
            "agentKind": self.agent_kind,
            "notes": list(self.notes),
        }


def agent_kind(command: str) -> str:
    """``replay``, ``openai`` or ``claude`` from the agent command's file name."""
    name = Path(command).name
    if name in REPLAY_AGENTS:
        return "replay"
    if name in OPENAI_AGENTS:
        return "openai"
    return "claude"


def is_loopback(host: str) -> bool:
    """Whether a host name or address is this machine's loopback."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def url_endpoint(url: str) -> Endpoint | None:
    """The TCP endpoint of an http(s) URL (default ports filled in), or None when it is not one."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    return Endpoint(parts.hostname, port or (443 if parts.scheme == "https" else 80))


def upstream_proxy(url: str) -> UpstreamProxy | None:
    """An ``http://[user:password@]host:port`` proxy URL -> the UpstreamProxy (credentials as a Basic ``Proxy-Authorization``), or None."""
    parts = urlsplit(url.strip() if "://" in url else "http://" + url.strip())
    endpoint = url_endpoint(parts.geturl()) if parts.scheme == "http" else None
    if endpoint is None:
        return None
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        authorization = "Basic " + base64.b64encode(pair).decode("ascii")
    return UpstreamProxy(endpoint, authorization)


def _bypasses_proxy(host: str, environ: Mapping[str, str]) -> bool:
    """Whether NO_PROXY names the host (``*``, the host, or a domain suffix such as ``.corp``)."""
    names = (environ.get("NO_PROXY") or environ.get("no_proxy") or "").split(",")
    host = host.lower().rstrip(".")
    for name in (n.strip().lower().rstrip(".") for n in names):
        if name == "*" or (name and (host == name.lstrip(".") or host.endswith("." + name.lstrip(".")))):
            return True
    return False


def model_endpoints(kind: str, environ: Mapping[str, str]) -> tuple[list[Endpoint], UpstreamProxy | None, list[str]]:
    """The endpoints the agent's model needs, the operator's proxy to reach a remote one through, and notes.

    Claude Code talks to ``ANTHROPIC_BASE_URL`` (default api.anthropic.com:443); agentbench-agent to
    ``AGENTBENCH_OPENAI_BASE_URL``; the replay agent to nothing. The model host is always the one
    endpoint allowed: when the harness itself goes through an HTTP proxy (``HTTPS_PROXY``), the
    harness's CONNECT proxy opens each allowed tunnel through that proxy; the agent never gets a
    pipe to it (through which it could ask for any host, the adb server's port among them).
    """
    if kind == "replay":
        return [], None, []
    url = environ.get(OPENAI_BASE_URL if kind == "openai" else ANTHROPIC_BASE_URL, "") or ""
    endpoint = url_endpoint(url) if url else (ANTHROPIC_DEFAULT if kind == "claude" else None)
    if endpoint is None:
        return [], None, [f"no model endpoint: {OPENAI_BASE_URL if kind == 'openai' else ANTHROPIC_BASE_URL} is not an http(s) URL"]
    configured = next((environ[name] for name in PROXY_VARIABLES if environ.get(name)), None)
    if not configured or is_loopback(endpoint.host) or _bypasses_proxy(endpoint.host, environ):
        return [endpoint], None, []
    proxy = upstream_proxy(configured)
    if proxy is None:
        return [endpoint], None, [f"the harness's proxy setting is not an http:// proxy URL; the model endpoint {endpoint} is reached directly"]
    return [endpoint], proxy, [f"the model endpoint {endpoint} is reached through the harness's CONNECT proxy, chained to the upstream proxy {proxy.endpoint}"]


def _resolved(paths: Sequence[Path | str]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        resolved = Path(os.path.realpath(path))
        if resolved not in out:
            out.append(resolved)
    return out


def _outermost(paths: Sequence[Path]) -> tuple[Path, ...]:
    """Drop paths inside another path of the list (one tmpfs covers them), parents first."""
    ordered = sorted(set(paths), key=lambda p: (len(p.parts), str(p)))
    kept: list[Path] = []
    for path in ordered:
        if not any(path == parent or path.is_relative_to(parent) for parent in kept):
            kept.append(path)
    return tuple(kept)


def executable_paths(command: str, environ: Mapping[str, str]) -> list[Path]:
    """The agent executable as PATH finds it and the file it resolves to (both shown read-only)."""
    found = shutil.which(command, path=environ.get("PATH")) if os.sep not in command else command
    if not found:
        return []
    return _resolved([found]) + ([Path(os.path.abspath(found))] if Path(os.path.abspath(found)) != Path(os.path.realpath(found)) else [])


def program_tree(executable: Path) -> Path | None:
    """The npm package a program belongs to (the nearest directory above it with a package.json), or None for a lone file.

    An npm-installed agent (Codex CLI's `bin/codex.js`, a project's `node_modules/.bin/claude`)
    loads files beside it: showing the file alone inside the sandbox would start it and fail.
    """
    for parent in Path(executable).parents:
        if (parent / "package.json").is_file():
            return parent
        if parent.name == "node_modules" or parent == Path(parent.anchor):
            return None
    return None


def unshowable_program(command: str, environ: Mapping[str, str], hidden: Sequence[Path]) -> Path | None:
    """The package directory a confined agent program needs that would show hidden material (it holds a hidden path), else None."""
    for path in executable_paths(command, environ):
        tree = program_tree(path)
        if tree is not None and any(Path(os.path.realpath(h)).is_relative_to(tree) for h in hidden):
            return tree
    return None


def build_policy(
    *,
    workdir: Path,
    agent_command: str,
    environ: Mapping[str, str],
    run_dir: Path,
    output_root: Path,
    project_root: Path,
    suite_file: Path,
    extra_binds: Sequence[Path] = (),
    package_root: Path | None = None,
    interpreter_prefixes: Sequence[str] | None = None,
    private: Sequence[Path] = (),
) -> SandboxPolicy:
    """The sandbox policy of one run.

    Args:
        workdir: The agent's empty working directory.
        agent_command: The ``--claude`` command (its name picks the endpoint rules).
        environ: The agent's environment (model URLs, an upstream proxy, PATH, HOME).
        run_dir: The run directory (hidden).
        output_root: The artifact root (hidden).
        project_root: The pytest rootdir (hidden; the venv and package are shown again).
        suite_file: The suite file; its directory and the plans beside it are hidden.
        extra_binds: Directories bound read-write for the agent (the relay's socket directory).
        package_root: This package's directory (default: the installed one).
        interpreter_prefixes: The venv and base interpreter prefixes (default: sys's).
        private: More files and directories to hide: what records a session's seed outside the
            project (the pytest cache, earlier session documents, reports), so a reused seed
            stays unread.
    """
    kind = agent_kind(agent_command)
    endpoints, upstream, notes = model_endpoints(kind, environ)
    loopback = tuple(endpoint for endpoint in endpoints if is_loopback(endpoint.host))
    remote = tuple(endpoint for endpoint in endpoints if not is_loopback(endpoint.host))

    suite_dir = Path(suite_file).absolute().parent
    hidden = [*ALWAYS_HIDDEN, run_dir, output_root, project_root, suite_dir, suite_dir.parent / "plans", *private]
    home = environ.get("HOME")
    if home:
        hidden += [Path(home) / name for name in HOME_HIDDEN]
    claude_config = credentials_file(environ)
    if claude_config is not None:
        hidden.append(claude_config.parent)
    adb_socket = environ.get("ADB_SERVER_SOCKET", "")
    if adb_socket.startswith("localfilesystem:"):
        hidden.append(Path(adb_socket.removeprefix("localfilesystem:")).parent)
    hide = _outermost([path for path in _resolved(hidden) if path.exists() and path != Path("/")])

    package = package_root or Path(__file__).resolve().parent.parent
    prefixes = interpreter_prefixes if interpreter_prefixes is not None else (sys.prefix, sys.base_prefix)
    program = executable_paths(agent_command, environ)
    # A program's own package comes with it, unless it would show what the policy hides.
    trees = [tree for tree in (program_tree(path) for path in program) if tree is not None
             and not any(Path(h).is_relative_to(tree) for h in hide)]
    shown = [*prefixes, package, *program, *trees]
    # A path shown again only matters when something hides it; the rest is visible already.
    expose = tuple(path for path in _resolved(shown)
                   if path.exists() and any(path.is_relative_to(h) for h in hide) and path != Path(workdir).resolve())
    writable = tuple(path for path in _resolved(extra_binds) if path.exists())
    return SandboxPolicy(workdir=Path(workdir).resolve(), hide=hide, expose=expose, writable=writable,
                         loopback=loopback, remote=remote, upstream=upstream if remote else None,
                         sign_in=find_sign_in(environ) if kind == "claude" else None, agent_kind=kind, notes=tuple(notes))
