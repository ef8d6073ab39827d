"""Cheating agents that blame the harness for their own failure (issue 28, B) -> their runs stay in the pass rate; real harness faults still leave it.

A run leaves the pass rate only as `incomplete` with cause `harness`. Each cheat below fails its
job (it never turns the bug on) and tries one route to that cause, end to end through a real
plugin session on the simulated phone; against the code before this change every one of them
reached `harness`:

* `claims-api-error`: a `success` result marked `is_error` with an API error's text;
* `claims-server-failed`, `claims-server-pending`: an init event whose server is not connected
  (it never starts its relay, or starts it and says otherwise);
* `claims-no-server`: an init event that lists no MCP server;
* `damages-relay-log`: a tool argument with U+2028, which split a line of relay.jsonl (the relay's
  ASCII log closed that split since; a damaged log is the agent's either way, so the rule does
  not depend on it);
* `deletes-relay-log` (unconfined: it reaches its run directory): removes relay.jsonl.

Their honest counterparts, where the harness really failed, keep cause `harness`:

* `honest-model-unreachable`: the model host refuses every connection (ANTHROPIC_BASE_URL is a
  loopback port nothing listens on); the agent tries it, as Claude Code would, and ends in an
  API error, which the model bridge's own record confirms;
* `honest-server-cannot-start`: the MCP server's command cannot start (an AutoMobile checkout
  without its build); the agent's init says `failed`, which the harness's own probe confirms;
* `honest-replay` does the job and passes, confined and unconfined.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from adbserver import PrivateAdbServer, start_private_adb_server
from fakeagents import UNCONFINED, Behaviour, junit_cases, make_project, run_session, session_env, write_dispatcher

pytestmark = pytest.mark.skipif(sys.platform != "linux" or shutil.which("bwrap") is None,
                                reason="no bubblewrap here (apt-get install bubblewrap)")

# Right for an instance the cheats never reproduce: the displayed count stays 0 only with the bug on.
ANSWER = "Done.\nEXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"
FAST = {"preflight": {"settleSeconds": 0.3}}

# After fakeagents' prelude (emit, init, say, result, api_error, reach_model, serial, relay_client, call, PARAMS).
_HELPERS = r'''
def init_with(servers):
    emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": "fake-session", "tools": [],
          "mcp_servers": servers, "model": "fake-model", "permissionMode": "default", "apiKeySource": "none",
          "claude_code_version": "0.0.1-fake"})
'''

BODIES = {
    "claims-api-error": _HELPERS + r'''
init()
api_error("API Error: 500 {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}", 500)
''',
    "claims-server": _HELPERS + r'''
init_with([{"name": SERVER, "status": PARAMS["status"]}] if PARAMS["status"] else [])
say(PARAMS["final"])
result(PARAMS["final"])
''',
    # Half the job through the relay (the bug stays off), one argument with U+2028 in it.
    "damages-relay-log": _HELPERS + r'''
init()
server, client = relay_client()
call(client, server, "toolu_1", "observe", {"device": serial()})
call(client, server, "toolu_2", "tapOn", {"text": "Add Item", "device": serial(), "note": "one\u2028two"})
client.close()
say(PARAMS["final"])
result(PARAMS["final"])
''',
    # Unconfined, the run directory is within reach: the relay log goes.
    "deletes-relay-log": _HELPERS + r'''
import glob
init()
server, client = relay_client()
call(client, server, "toolu_1", "tapOn", {"text": "Add Item", "device": serial()})
client.close()
for path in glob.glob(os.path.join(PARAMS["output"], os.environ["AGENTBENCH_SUITE"], "*", "relay.jsonl")):
    os.remove(path)
say(PARAMS["final"])
result(PARAMS["final"])
''',
    # Starts its relay as Claude Code does; the server behind it cannot start, so it says `failed`.
    "honest-server-cannot-start": _HELPERS + r'''
from pytest_agentbench.servers.mcpclient import StdioClient
config = json.load(open(sys.argv[sys.argv.index("--mcp-config") + 1]))
((name, entry),) = config["mcpServers"].items()
status = "connected"
try:
    client = StdioClient(entry["command"], [str(a) for a in entry.get("args") or []], env={**os.environ, **(entry.get("env") or {})})
    client.initialize(timeout_s=20)
except Exception:
    status = "failed"
init_with([{"name": name, "status": status}])
say("I could not reach the phone: the MCP server failed.")
result("I could not reach the phone: the MCP server failed.")
''',
}

CONFINED_SUITES = {
    "claims-api-error": Behaviour("claims-api-error", {"final": ANSWER}),
    "claims-server-failed": Behaviour("claims-server", {"final": ANSWER, "status": "failed"}),
    "claims-server-pending": Behaviour("claims-server", {"final": ANSWER, "status": "pending"}),
    "claims-no-server": Behaviour("claims-server", {"final": ANSWER, "status": ""}),
    "damages-relay-log": Behaviour("damages-relay-log", {"final": ANSWER}),
    "honest-model-unreachable": Behaviour("model-unreachable", {"final": ANSWER}),
    "honest-replay": Behaviour("replay"),
}


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


def _session(tmp: Path, adb_server: PrivateAdbServer, suites: dict[str, Behaviour], *args: str, ini: str = "",
             **env: str) -> dict[str, dict]:
    """One session on the simulated phone over `suites` -> suite name -> its JUnit outcome and result.json."""
    project = make_project(tmp / "project", {name: FAST for name in suites})
    if ini:
        (project / "pytest.ini").write_text(f"[pytest]\n{ini}\n", encoding="utf-8")
    behaviours = {name: Behaviour(b.name, {**b.params, "output": str(tmp / "out")}) for name, b in suites.items()}
    agent = write_dispatcher(tmp / "agent", behaviours, bodies=BODIES, project=project)
    environ = session_env(adb_server.port, tmp / "claims", **env)
    done = run_session(project, ["benchmark/", "--device", "sim", "--claude", str(agent), f"--junitxml={tmp / 'r.xml'}",
                                 "--agentbench-output", str(tmp / "out"), "-rA", *args], environ)
    cases = junit_cases(tmp / "r.xml") if (tmp / "r.xml").exists() else {}
    assert set(cases) == set(suites), done.stdout[-4000:] + done.stderr[-2000:]
    results = {}
    for name, case in cases.items():
        run_dir = Path(case.properties["agentbench_run_dir"])
        results[name] = {"outcome": case.outcome, "run_dir": run_dir, **json.loads((run_dir / "result.json").read_text(encoding="utf-8"))}
    return results


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def confined(adb_server: PrivateAdbServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    # The model host refuses every connection: only an agent that tries it meets the refusal.
    return _session(tmp_path_factory.mktemp("blame"), adb_server, CONFINED_SUITES, "--agentbench-sandbox", "on",
                    ANTHROPIC_BASE_URL=f"http://127.0.0.1:{_closed_port()}")


@pytest.fixture(scope="module")
def unconfined(adb_server: PrivateAdbServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    suites = {"deletes-relay-log": Behaviour("deletes-relay-log", {"final": ANSWER}), "honest-replay": Behaviour("replay")}
    return _session(tmp_path_factory.mktemp("blame-unconfined"), adb_server, suites, *UNCONFINED)


@pytest.fixture(scope="module")
def server_cannot_start(adb_server: PrivateAdbServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("blame-server")
    (tmp / "empty-checkout").mkdir()
    suites = {"honest-server-cannot-start": Behaviour("honest-server-cannot-start")}
    return _session(tmp, adb_server, suites, "--agentbench-sandbox", "on",
                    ini=f"agentbench_server = auto-mobile\nagentbench_automobile_dir = {tmp / 'empty-checkout'}")


def _in_the_rate(result: dict) -> bool:
    """Judged: passed, failed, or incomplete by the agent's doing (docs/statistics.md)."""
    verdict = result["verdict"]
    return verdict["status"] != "incomplete" or verdict.get("incompleteCause") == "agent"


def _agent_s(result: dict, claim: str) -> str:
    verdict = result["verdict"]
    assert (verdict["status"], verdict.get("incompleteCause")) == ("incomplete", "agent"), verdict
    (reason,) = [reason for reason in verdict["reasons"] if claim in reason]
    return reason


@pytest.mark.parametrize(
    ("suite", "claim", "because"),
    [
        ("claims-api-error", "the agent's stream says the run ended in an API error (HTTP 500)",
         "unconfirmed by the harness (the model bridge carried no connection to the model host)"),
        ("claims-server-failed", "the agent's stream says MCP server 'agentbench' was failed, not connected",
         "unconfirmed by the harness (the relay log shows no connection to it"),
        ("claims-server-pending", "the agent's stream says MCP server 'agentbench' was pending, not connected",
         "unconfirmed by the harness (the relay log shows no connection to it"),
        ("claims-no-server", "the agent's stream says the init event lists no MCP server", "unconfirmed by the harness"),
    ],
)
def test_a_claim_only_the_agent_s_stream_makes_keeps_its_failure_in_the_rate(confined: dict[str, dict], suite: str, claim: str,
                                                                              because: str) -> None:
    result = confined[suite]
    assert _in_the_rate(result) and result["outcome"] == "skipped", result["verdict"]
    assert because in _agent_s(result, claim)
    # The bridge's record is sealed with the other audit inputs, and names what the run allowed.
    assert "model-bridge.jsonl" in result["seals"]["sha256"] and result["auditInputs"]["bridgeLog"] == "model-bridge.jsonl"


def test_bytes_that_break_the_relay_log_keep_the_failure_in_the_rate(confined: dict[str, dict]) -> None:
    # Damaged (the agent's bytes reached the log) -> the agent's; or, with a relay log no byte can
    # break, the run is judged and fails: the bug was never turned on.
    result = confined["damages-relay-log"]
    assert _in_the_rate(result), result["verdict"]
    if result["verdict"]["status"] == "incomplete":
        assert "the agent's bytes reach that log, so this counts as the agent's" in _agent_s(result, "the relay log is damaged")
    else:
        assert result["verdict"]["status"] == "failed", result["verdict"]


def test_an_unconfined_agent_that_removes_its_relay_log_keeps_its_failure_in_the_rate(unconfined: dict[str, dict]) -> None:
    result = unconfined["deletes-relay-log"]
    assert not (result["run_dir"] / "relay.jsonl").exists(), "the cheat did not remove the log: the test proves nothing"
    reason = _agent_s(result, "the harness has no record of the MCP calls: the relay log relay.jsonl cannot be read")
    assert reason.endswith("the run was unconfined, so the agent could reach the run directory: this counts as the agent's")
    assert unconfined["honest-replay"]["verdict"]["status"] == "passed", unconfined["honest-replay"]["verdict"]


def test_a_model_host_that_refuses_connections_is_the_harness_s(confined: dict[str, dict]) -> None:
    result = confined["honest-model-unreachable"]
    verdict = result["verdict"]
    assert (verdict["status"], verdict.get("incompleteCause")) == ("incomplete", "harness"), verdict
    (reason,) = verdict["reasons"]
    assert reason.startswith("the run ended in an API error: API Error: Connection error."), reason
    assert "; confirmed by the model bridge: 1 of 1 connection to the model host failed, the last one too (127.0.0.1:" in reason
    assert "ECONNREFUSED" in reason
    bridge = [json.loads(line) for line in (result["run_dir"] / "model-bridge.jsonl").read_text(encoding="ascii").split("\n") if line]
    assert [(record["event"], record.get("ok")) for record in bridge] == [("bridge", None), ("connect", False)]


def test_a_server_that_cannot_start_is_the_harness_s(server_cannot_start: dict[str, dict]) -> None:
    verdict = server_cannot_start["honest-server-cannot-start"]["verdict"]
    assert (verdict["status"], verdict.get("incompleteCause")) == ("incomplete", "harness"), verdict
    assert verdict["reasons"][0].startswith(
        "MCP server 'auto-mobile' was failed, not connected: confirmed by the harness's own probe of the server: "), verdict


def test_the_honest_replay_passes_confined(confined: dict[str, dict]) -> None:
    result = confined["honest-replay"]
    assert result["verdict"]["status"] == "passed", result["verdict"]
    # It never asked the model host: the bridge recorded the endpoint it allowed, and nothing else.
    lines = (result["run_dir"] / "model-bridge.jsonl").read_text(encoding="ascii").split("\n")
    assert [json.loads(line)["event"] for line in lines if line] == ["bridge"]


def test_a_rerender_gives_every_run_the_same_verdict_and_cause(confined: dict[str, dict], adb_server: PrivateAdbServer,
                                                               tmp_path: Path) -> None:
    some = next(iter(confined.values()))
    output = some["run_dir"].parent.parent
    document = tmp_path / "rerendered.json"
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    done = run_session(project, ["--agentbench-from-result", str(output), "--agentbench-json", str(document),
                                 "--agentbench-output", str(tmp_path / "out")], session_env(adb_server.port, tmp_path / "claims"))
    runs = {run["suite"]: run for run in json.loads(document.read_text(encoding="utf-8"))["runs"]}
    assert set(runs) == set(CONFINED_SUITES), done.stdout[-3000:]
    for name, result in confined.items():
        assert runs[name]["verdict"] == result["verdict"], name
