"""The sandbox primitives on their own: a python program confined by bwrap -> what it can and cannot see, write and reach."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from pytest_agentbench.run import sandbox
from loopserver import LoopbackServer
from permissiveproxy import PermissiveProxy

from pytest_agentbench.run.netbridge import Endpoint, NetBridge, UpstreamProxy, parse_connect
from pytest_agentbench.run.sandbox_policy import agent_kind, build_policy, is_loopback, model_endpoints, url_endpoint

AVAILABLE = sandbox.probe()
needs_bwrap = pytest.mark.skipif(not AVAILABLE.usable, reason=f"no sandbox here: {AVAILABLE.reason}")


class EchoServer(LoopbackServer):
    """A loopback TCP server that answers every line with `echo: <line>` (stands in for adb or a model API)."""

    def __init__(self) -> None:
        super().__init__(lambda data: b"echo: " + data)


@pytest.fixture
def echo():
    server = EchoServer()
    yield server
    server.close()


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    paths = {name: tmp_path / name for name in ("project", "output", "workdir")}
    for path in paths.values():
        path.mkdir()
    paths["suites"] = paths["project"] / "bench" / "suites"
    paths["suites"].mkdir(parents=True)
    paths["suite"] = paths["suites"] / "demo.yml"
    paths["suite"].write_text("name: demo\n")
    paths["run"] = paths["output"] / "demo" / "run1"
    paths["run"].mkdir(parents=True)
    (paths["run"] / "device-before.json").write_text('{"code": "123456"}')
    return paths


def policy_for(layout: dict[str, Path], *, environ: dict | None = None, command: str = "agentbench-replay", **extra):
    return build_policy(
        workdir=layout["workdir"], agent_command=command, environ={"PATH": os.environ["PATH"], **(environ or {})},
        run_dir=layout["run"], output_root=layout["output"], project_root=layout["project"], suite_file=layout["suite"], **extra,
    )


def confined_python(policy, code: str, *, timeout: float = 30) -> tuple[subprocess.CompletedProcess, sandbox.Confinement]:
    argv = [sys.executable, "-c", textwrap.dedent(code)]
    with sandbox.Confinement(policy, argv, dict(os.environ)) as confined:
        proc = subprocess.Popen(confined.argv, env=confined.env, pass_fds=confined.pass_fds, start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=policy.workdir)
        confined.started()
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
    return subprocess.CompletedProcess(argv, proc.returncode, out.decode(), err.decode()), confined


# --- pure parts -------------------------------------------------------------------------------


def test_agent_kinds_and_endpoints() -> None:
    assert agent_kind("/venv/bin/agentbench-replay") == "replay"
    assert agent_kind("agentbench-agent") == "openai"
    assert agent_kind("/opt/claude") == "claude"
    assert model_endpoints("claude", {}) == ([Endpoint("api.anthropic.com", 443)], None, [])
    assert model_endpoints("claude", {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8123/x"}) == ([Endpoint("127.0.0.1", 8123)], None, [])
    assert model_endpoints("openai", {"AGENTBENCH_OPENAI_BASE_URL": "https://llm.example/v1"}) == ([Endpoint("llm.example", 443)], None, [])
    assert model_endpoints("replay", {"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}) == ([], None, [])
    # Behind a corporate proxy the model host is still the one endpoint allowed; the proxy is
    # where the harness's own CONNECT proxy chains its tunnels, with the proxy's credentials.
    endpoints, upstream, notes = model_endpoints("claude", {"HTTPS_PROXY": "http://op:s%40cret@proxy.corp:8080"})
    assert endpoints == [Endpoint("api.anthropic.com", 443)] and "chained to the upstream proxy proxy.corp:8080" in notes[0]
    assert upstream.endpoint == Endpoint("proxy.corp", 8080)
    assert upstream.authorization == "Basic " + base64.b64encode(b"op:s@cret").decode()
    assert "s@cret" not in repr(upstream) and "cret" not in " ".join(notes)
    # A loopback model API or one NO_PROXY names is reached directly.
    assert model_endpoints("claude", {"HTTPS_PROXY": "http://proxy.corp:8080", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})[1] is None
    assert model_endpoints("claude", {"HTTPS_PROXY": "http://proxy.corp:8080", "NO_PROXY": "localhost,.anthropic.com"})[1] is None
    assert is_loopback("localhost") and is_loopback("127.0.0.5") and is_loopback("::1") and not is_loopback("10.0.0.1")
    assert url_endpoint("ftp://x") is None


def test_policy_hides_the_run_tree_and_shows_the_interpreter_again(layout) -> None:
    policy = policy_for(layout, environ={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}, command="claude",
                        interpreter_prefixes=[str(layout["project"] / "no-venv")])
    hidden = set(policy.hide)
    assert Path("/tmp").resolve() in hidden  # the run dir, output and project live below it here
    assert policy.loopback == (Endpoint("127.0.0.1", 9),) and policy.remote == ()
    assert policy.describe()["agentKind"] == "claude"


def test_connect_requests_are_parsed() -> None:
    assert parse_connect(b"CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: x\r\n\r\n") == Endpoint("api.anthropic.com", 443)
    assert parse_connect(b"GET http://x/ HTTP/1.1\r\n\r\n") is None


def test_the_proxy_opens_tunnels_only_to_allowed_endpoints(tmp_path: Path, echo: EchoServer) -> None:
    bridge = NetBridge(tmp_path)
    path = bridge.proxy("proxy", [Endpoint("127.0.0.1", echo.port)])
    bridge.start()
    try:
        def ask(target: str) -> bytes:
            with socket.socket(socket.AF_UNIX) as client:
                client.connect(str(path))
                client.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
                reply = client.recv(4096)
                if b" 200 " in reply:
                    client.sendall(b"hello")
                    reply += client.recv(4096)
                return reply

        assert ask(f"127.0.0.1:{echo.port}").endswith(b"echo: hello")
        assert b"403" in ask("evil.example:443")
        assert bridge.refused == ["evil.example:443"]
    finally:
        bridge.close()


def _ask(path: Path, target: str, payload: bytes = b"hello") -> bytes:
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(str(path))
        client.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        reply = client.recv(4096)
        if b" 200 " in reply:
            client.sendall(payload)
            reply += client.recv(4096)
        return reply


def test_behind_an_upstream_proxy_an_allowed_tunnel_is_chained_and_nothing_else_reaches_it(tmp_path: Path, echo: EchoServer) -> None:
    # The operator's proxy would tunnel anywhere; the agent's requests reach it only as ours, for the model host.
    with PermissiveProxy(routes={"api.anthropic.com:443": ("127.0.0.1", echo.port)}, authorization="Basic b3A6cHc=") as upstream:
        records: list[dict] = []
        bridge = NetBridge(tmp_path, record=records.append)
        path = bridge.proxy("proxy", [Endpoint("api.anthropic.com", 443)],
                            upstream=UpstreamProxy(Endpoint("127.0.0.1", upstream.port), "Basic b3A6cHc="))
        bridge.start()
        try:
            assert _ask(path, "api.anthropic.com:443").endswith(b"echo: hello")
            assert b"403" in _ask(path, f"127.0.0.1:{upstream.port}")
            assert b"403" in _ask(path, "127.0.0.1:5037")
        finally:
            bridge.close()
        assert upstream.asked == ["api.anthropic.com:443"] and upstream.refused_auth == 0
        assert bridge.refused == [f"127.0.0.1:{upstream.port}", "127.0.0.1:5037"]
        assert records[0] == {"event": "connect", "endpoint": "api.anthropic.com:443", "via": f"upstream proxy 127.0.0.1:{upstream.port}",
                              "ok": True, "open": 1}


def test_an_upstream_proxy_that_says_no_is_a_bad_gateway_with_its_answer(tmp_path: Path) -> None:
    with PermissiveProxy(authorization="Basic right") as upstream:
        records: list[dict] = []
        bridge = NetBridge(tmp_path, record=records.append)
        path = bridge.proxy("proxy", [Endpoint("api.anthropic.com", 443)], upstream=UpstreamProxy(Endpoint("127.0.0.1", upstream.port), "Basic wrong"))
        bridge.start()
        try:
            reply = _ask(path, "api.anthropic.com:443")
        finally:
            bridge.close()
    assert reply.startswith(b"HTTP/1.1 502 ") and b"407 Proxy Authentication Required" in reply
    assert records[0]["ok"] is False and "407" in records[0]["error"]


# --- confined programs ------------------------------------------------------------------------


@needs_bwrap
def test_confined_python_cannot_reach_a_loopback_port_it_was_not_given(layout, echo: EchoServer) -> None:
    result, _ = confined_python(policy_for(layout), f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {echo.port}), timeout=2)
            print("connected")
        except OSError as exc:
            print("refused", exc.errno)
    """)
    assert result.stdout.startswith("refused"), result
    assert echo.accepted == 0


@needs_bwrap
def test_confined_python_reaches_the_allowed_loopback_endpoint(layout, echo: EchoServer) -> None:
    policy = policy_for(layout, environ={"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{echo.port}"}, command="claude")
    result, _ = confined_python(policy, f"""
        import socket
        with socket.create_connection(("127.0.0.1", {echo.port}), timeout=5) as s:
            s.sendall(b"ping")
            print(s.recv(100).decode())
    """)
    assert result.stdout.strip() == "echo: ping", result
    assert echo.accepted == 1


@needs_bwrap
def test_confined_python_reaches_an_allowed_remote_host_only_through_the_proxy(layout, echo: EchoServer) -> None:
    policy = policy_for(layout)
    policy = type(policy)(**{**policy.__dict__, "remote": (Endpoint("127.0.0.1", echo.port),)})
    result, confined = confined_python(policy, f"""
        import os, socket
        proxy = os.environ["HTTPS_PROXY"].rsplit(":", 1)
        def tunnel(target):
            s = socket.create_connection(("127.0.0.1", int(proxy[1])), timeout=5)
            s.sendall(f"CONNECT {{target}} HTTP/1.1\\r\\n\\r\\n".encode())
            return s, s.recv(200).split(b"\\r\\n")[0].decode()
        s, status = tunnel("127.0.0.1:{echo.port}")
        s.sendall(b"through")
        print(status, s.recv(100).decode())
        print(tunnel("api.openai.com:443")[1])
    """)
    first, second = result.stdout.strip().splitlines()
    assert first == "HTTP/1.1 200 Connection established echo: through", result
    assert "403" in second
    assert confined.refused == ["api.openai.com:443"]


@needs_bwrap
def test_confined_python_cannot_read_the_run_dir_or_suites_nor_write_outside_its_workdir(layout) -> None:
    result, _ = confined_python(policy_for(layout), f"""
        import json, os
        seen = {{}}
        for name, path in {json.dumps({k: str(v) for k, v in layout.items()})}.items():
            seen[name] = os.path.exists(path)
        def write(path):
            try:
                open(path, "w").write("x")
                return "wrote"
            except OSError as exc:
                return exc.strerror
        seen["write-suite"] = write({str(layout["suite"])!r})
        seen["write-etc"] = write("/etc/agentbench-test")
        seen["write-workdir"] = write("own-file")
        seen["home"] = os.environ["HOME"]
        seen["cwd"] = os.getcwd()
        print(json.dumps(seen))
    """)
    seen = json.loads(result.stdout)
    assert seen["run"] is False and seen["suite"] is False and seen["suites"] is False and seen["output"] is False
    assert seen["write-suite"] != "wrote" and seen["write-etc"] != "wrote"
    assert seen["write-workdir"] == "wrote"
    assert seen["home"] == seen["cwd"] == str(layout["workdir"].resolve())
    assert (layout["workdir"] / "own-file").read_text() == "x"
    assert layout["suite"].read_text() == "name: demo\n"


@needs_bwrap
def test_a_seed_record_outside_the_project_is_hidden(layout) -> None:
    # What records a session's seed outside the project (a pytest cache_dir, an earlier session
    # document at the --agentbench-json path) is hidden like the project: a reused seed stays unread.
    # They live under HOME here, which the sandbox shows (a checkout's own files may sit under /tmp,
    # which it hides whole, and then nothing beside them would be readable either).
    (Path.home() / ".cache").mkdir(exist_ok=True)
    outside = Path(tempfile.mkdtemp(prefix="agentbench-seed-test-", dir=Path.home() / ".cache"))
    try:
        record, cache, other = outside / "session.json", outside / "cache", outside / "README.md"
        record.write_text('{"seed": 7}', encoding="utf-8")
        cache.mkdir()
        (cache / "lastfailed").write_text("{}", encoding="utf-8")
        other.write_text("readable", encoding="utf-8")
        policy = policy_for(layout, private=[record, cache])
        assert {record, cache} <= set(policy.hide), policy.hide
        result, _ = confined_python(policy, f"""
            import os
            def read(path):
                try:
                    return len(open(path).read())
                except OSError as exc:
                    return exc.strerror
            print(read({str(record)!r}) in (0, "Permission denied"), os.listdir({str(cache)!r}), read({str(other)!r}) > 0)
        """)
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    assert result.stdout.split() == ["True", "[]", "True"], result.stderr


@needs_bwrap
def test_a_daemon_the_confined_program_leaves_is_gone_when_the_confinement_ends(layout, tmp_path: Path) -> None:
    marker = f"agentbench-daemon-{os.getpid()}"
    result, confined = confined_python(policy_for(layout), f"""
        import os, subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", {marker!r}], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print("left a daemon")
    """)
    assert result.stdout.strip() == "left a daemon"
    assert confined.namespace_pid is not None and confined.leftovers == []
    alive = [p for p in Path("/proc").iterdir() if p.name.isdigit() and marker.encode() in _cmdline(p)]
    assert alive == []


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


@needs_bwrap
def test_the_self_test_reports_from_inside_what_is_hidden_refused_and_there(layout, echo: EchoServer, tmp_path: Path) -> None:
    relay = tmp_path / "relay"
    relay.mkdir()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(relay / "agentbench.sock"))
    try:
        policy = policy_for(layout, extra_binds=[relay])
        labels = {layout["run"].resolve(): "the run directory", layout["project"].resolve(): "the project"}
        argv = [sys.executable, "-c", "print('agent ran')"]
        with sandbox.Confinement(policy, argv, dict(os.environ), closed=[Endpoint("127.0.0.1", echo.port)], labels=labels,
                                 needed_sockets=[relay / "agentbench.sock"]) as confined:
            proc = subprocess.run(confined.argv, env=confined.env, pass_fds=confined.pass_fds, capture_output=True, text=True,
                                  cwd=policy.workdir, timeout=30, start_new_session=True)
            confined.started()
    finally:
        listener.close()
    assert proc.stdout == "agent ran\n", proc.stderr
    checks = {check["what"]: check for check in confined.self_test["checks"]}
    assert confined.self_test["ok"] is True
    assert checks["the run directory"]["reached"] is False and checks["the project"]["reached"] is False
    assert checks[f"TCP 127.0.0.1:{echo.port}"] == {"what": f"TCP 127.0.0.1:{echo.port}", "expected": "refused", "reached": False}
    assert checks[f"socket {relay / 'agentbench.sock'}"]["reached"] is True
    assert echo.accepted == 0


@needs_bwrap
def test_a_sandbox_with_a_hole_does_not_start_the_agent_and_says_what_was_reachable(layout) -> None:
    # A policy that forgot the run directory (and /tmp above it): the self-test sees its files.
    policy = policy_for(layout)
    leaky = type(policy)(**{**policy.__dict__, "hide": tuple(p for p in policy.hide if not layout["run"].resolve().is_relative_to(p))})
    argv = [sys.executable, "-c", "print('agent ran')"]
    with sandbox.Confinement(leaky, argv, dict(os.environ), labels={layout["run"].resolve(): "the run directory"}) as confined:
        proc = subprocess.run(confined.argv, env=confined.env, pass_fds=confined.pass_fds, capture_output=True, text=True,
                              cwd=policy.workdir, timeout=30, start_new_session=True)
        confined.started()
    assert proc.returncode == 125 and proc.stdout == ""
    assert "self-test failed, the agent was not started: the run directory" in proc.stderr
    (hole,) = [check for check in confined.self_test["checks"] if check["what"] == "the run directory"]
    assert hole["reached"] is True and hole["seen"] == ["device-before.json"]
    assert confined.self_test["ok"] is False
