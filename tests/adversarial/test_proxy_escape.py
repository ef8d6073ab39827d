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
import sys
from collections.abc import Iterator

import pytest
from adbserver import PrivateAdbServer, start_private_adb_server
from fakeagents import Behaviour, final_answer, make_project, results_by_suite, run_session, session_env, write_dispatcher
from loopserver import LoopbackServer
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


def model_host() -> LoopbackServer:
    """Stands for api.anthropic.com behind the proxy: answers anything with 200 (`accepted` counts connections)."""
    return LoopbackServer(lambda _request: b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")


@pytest.fixture(scope="module")
def behind_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, dict], PermissiveProxy, PrivateAdbServer, LoopbackServer]]:
    tmp = tmp_path_factory.mktemp("proxy")
    (tmp / "adb").mkdir()
    model = model_host()
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
            results = results_by_suite(tmp / "r.xml") if (tmp / "r.xml").exists() else {}
            assert set(results) == set(suites), done.stdout[-4000:] + done.stderr[-2000:]
            yield results, proxy, adb, model
        finally:
            model.close()


def test_a_confined_agent_reaches_nothing_but_the_model_host_through_the_operator_s_proxy(behind_proxy) -> None:
    results, proxy, adb, _ = behind_proxy
    answer = final_answer(results["cheat-proxy"]["run_dir"])
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
    assert proxy.asked.count("api.anthropic.com:443") >= 1 and model.accepted >= 1
    assert honest["sandbox"]["refusedConnections"] == []
    bridge = [json.loads(line) for line in (honest["run_dir"] / "model-bridge.jsonl").read_text(encoding="utf-8").splitlines()]
    connects = [record for record in bridge if record.get("event") == "connect"]
    assert connects and all(record["ok"] and record["via"] == f"upstream proxy 127.0.0.1:{proxy.port}" for record in connects), bridge
