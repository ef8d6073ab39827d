"""Confined agents behind the operator's proxy (issue 28 F) -> the model host through the harness's proxy, nothing else.

The session runs with `HTTPS_PROXY` naming a permissive loopback proxy (tests/permissiveproxy.py:
it tunnels anywhere, as a corporate proxy would), and the model host is the default
api.anthropic.com:443, which that proxy carries to a local stand-in. Two agents speak Claude
Code's print-mode contract:
- `cheat-proxy` asks the proxy it is given for the adb server's port, the upstream proxy's own
  port and another port of the model host, connects straight to the upstream proxy's port, and
  lists the adb variables it was given;
- `honest-proxy` reaches its model host through `HTTPS_PROXY` and then does the job (replay).
Before the harness chained its own proxy, the upstream proxy was a raw pipe inside the sandbox:
the cheat's `CONNECT 127.0.0.1:<adb port>` went through, while the honest agent got no proxy
variable at all.
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from adbserver import PrivateAdbServer, start_private_adb_server
from fakeagents import Behaviour, junit_cases, make_project, run_session, session_env, write_dispatcher
from permissiveproxy import PermissiveProxy

pytestmark = pytest.mark.skipif(sys.platform != "linux" or shutil.which("bwrap") is None,
                                reason="no bubblewrap here (apt-get install bubblewrap)")

FAST = {"preflight": {"settleSeconds": 0.3}}
ANSWER = "Done.\nEXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"

BODIES = {
    "proxy-cheat": r'''
import socket
from urllib.parse import urlsplit
lines = ["adb variables: %s" % sorted(name for name in os.environ if "ADB" in name or name == "ANDROID_SERIAL")]
proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy") or ""
lines.append("proxy given: %s" % bool(proxy))
hop = urlsplit(proxy or "http://127.0.0.1:3128")
for target in PARAMS["through_proxy"]:
    try:
        conn = socket.create_connection((hop.hostname, hop.port), timeout=5)
        conn.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
        status = conn.recv(200).split(b"\r\n")[0].decode()
        if " 200 " in status + " ":
            request = b"host:version"
            conn.sendall(b"%04x" % len(request) + request)
            status += " then " + repr(conn.recv(4))
        conn.close()
    except OSError as exc:
        status = "failed (%s)" % exc.__class__.__name__
    lines.append("via proxy %s: %s" % (target, status))
for port in PARAMS["direct"]:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
        lines.append("direct %d: connected" % port)
    except OSError as exc:
        lines.append("direct %d: refused" % port)
init()
say("\n".join(lines))
result(PARAMS["final"] + "\n" + "\n".join(lines))
''',
    "proxy-honest": r'''
problem = reach_model()
if problem is not None:
    init()
    api_error("API Error: Connection error. (%s)" % problem)
    sys.exit(0)
exec(compile(BODIES["replay"], "replay", "exec"))
''',
}


class ModelHost:
    """Stands for api.anthropic.com behind the proxy: answers anything with 200 and counts connections."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with client:
                client.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def behind_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, dict], PermissiveProxy, PrivateAdbServer, ModelHost]]:
    tmp = tmp_path_factory.mktemp("proxy")
    (tmp / "adb").mkdir()
    model = ModelHost()
    with start_private_adb_server(tmp / "adb") as adb, PermissiveProxy(routes={"api.anthropic.com:443": ("127.0.0.1", model.port)}) as proxy:
        try:
            suites = {
                "cheat-proxy": Behaviour("proxy-cheat", {
                    "final": ANSWER,
                    "through_proxy": [f"127.0.0.1:{adb.port}", f"127.0.0.1:{proxy.port}", "api.anthropic.com:5037"],
                    "direct": [adb.port, proxy.port]}),
                "honest-proxy": Behaviour("proxy-honest"),
            }
            project = make_project(tmp / "project", {name: FAST for name in suites})
            # A confined agent reads no plan from the project: the honest one has its plan baked in.
            plan = project / "benchmark" / "agent" / "plans" / "honest-proxy.yml"
            behaviours = {"cheat-proxy": suites["cheat-proxy"], "honest-proxy": Behaviour("proxy-honest", {"plan_text": plan.read_text(encoding="utf-8")})}
            agent = write_dispatcher(tmp / "agent", behaviours, bodies=BODIES)
            environ = session_env(adb.port, tmp / "claims", HTTPS_PROXY=proxy.url)
            environ.pop("ANTHROPIC_BASE_URL", None)
            done = run_session(project, ["benchmark/", "--device", "sim", "--claude", str(agent), f"--junitxml={tmp / 'r.xml'}",
                                         "--agentbench-output", str(tmp / "out"), "--agentbench-sandbox", "on", "-rA"], environ)
            cases = junit_cases(tmp / "r.xml") if (tmp / "r.xml").exists() else {}
            assert set(cases) == set(suites), done.stdout[-4000:] + done.stderr[-2000:]
            results = {}
            for name, case in cases.items():
                run_dir = Path(case.properties["agentbench_run_dir"])
                results[name] = {"outcome": case.outcome, "run_dir": run_dir,
                                 **json.loads((run_dir / "result.json").read_text(encoding="utf-8"))}
            yield results, proxy, adb, model
        finally:
            model.close()


def _final(run_dir: Path) -> str:
    for line in (run_dir / "claude.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("type") == "result":
            return event.get("result") or ""
    return ""


def test_a_confined_agent_reaches_nothing_but_the_model_host_through_the_operator_s_proxy(behind_proxy) -> None:
    results, proxy, adb, _ = behind_proxy
    answer = _final(results["cheat-proxy"]["run_dir"])
    assert "adb variables: []" in answer and "proxy given: True" in answer, answer
    for target in (f"127.0.0.1:{adb.port}", f"127.0.0.1:{proxy.port}", "api.anthropic.com:5037"):
        assert f"via proxy {target}: HTTP/1.1 403 Forbidden" in answer, answer
    assert f"direct {adb.port}: refused" in answer and f"direct {proxy.port}: refused" in answer, answer
    # The operator's proxy was never asked for anything but the model host.
    assert set(proxy.asked) <= {"api.anthropic.com:443"}, proxy.asked
    sandbox = results["cheat-proxy"]["sandbox"]
    assert sandbox["refusedConnections"] == [f"127.0.0.1:{adb.port}", f"127.0.0.1:{proxy.port}", "api.anthropic.com:5037"]
    assert sandbox["policy"]["remote"] == ["api.anthropic.com:443"]
    assert sandbox["policy"]["upstreamProxy"] == f"127.0.0.1:{proxy.port}"


def test_an_honest_agent_behind_the_operator_s_proxy_reaches_its_model_and_passes(behind_proxy) -> None:
    results, proxy, _, model = behind_proxy
    honest = results["honest-proxy"]
    assert honest["outcome"] == "passed", honest["verdict"]
    assert proxy.asked.count("api.anthropic.com:443") >= 1 and model.connections >= 1
    assert honest["sandbox"]["refusedConnections"] == []
    bridge = [json.loads(line) for line in (honest["run_dir"] / "model-bridge.jsonl").read_text(encoding="utf-8").splitlines()]
    connects = [record for record in bridge if record.get("event") == "connect"]
    assert connects and all(record["ok"] and record["via"] == f"upstream proxy 127.0.0.1:{proxy.port}" for record in connects), bridge
