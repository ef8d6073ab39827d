"""Every route to `incomplete` with cause `harness` -> reached by the harness's own evidence, never by what the agent can write alone (issue 28, B).

One table row per route: the evidence the harness owns takes the run there, and the same claim
from the agent's side alone (its stream, its bytes to the relay, its connections, files an
unconfined agent can write) leaves the run in the pass rate as the agent's. Then every
combination of what an agent can produce, on a run whose harness worked, is never the harness's.
"""

from __future__ import annotations

import dataclasses
import itertools
import signal
from types import MappingProxyType

import pytest
from auditfakes import OK_PROCESS, init_event, make_run, make_suite, result_event, transcript

from pytest_agentbench.audit.causes import MAX_HONEST_OPEN
from pytest_agentbench.audit.transcript import UnparseableLine
from pytest_agentbench.audit.verdict import audit_run
from pytest_agentbench.records.run import NEVER_STARTED, STREAM_UNWRITTEN, ProcessOutcome
from pytest_agentbench.run.bridgelog import BridgeConnect, BridgeLog, parse_bridge_lines
from pytest_agentbench.run.relaylog import RelayCall, RelayLog

SERVER = "agentbench"
MODEL = "127.0.0.1:8077"
CONFINED = MappingProxyType({"mode": "on"})
UNCONFINED = MappingProxyType({"mode": "off"})


def relayed(tool: str = "observe", status: str = "ok") -> RelayCall:
    return RelayCall(server=SERVER, tool=tool, arguments={"device": "emulator-5554"}, request_id=1, status=status)


def relay(*, started: int = 1, failures: tuple[str, ...] = (), problems: tuple[str, ...] = (), unavailable: str | None = None,
          calls: tuple[RelayCall, ...] = (relayed(),)) -> RelayLog:
    """A relay log: the hub started the server `started` times and could not `failures` times."""
    if unavailable is not None:
        return RelayLog(unavailable=unavailable)
    return RelayLog(declared_servers=(SERVER,), calls=calls, connections=started,
                    server_failures=tuple(f"{SERVER}: {reason}" for reason in failures), problems=problems,
                    started=MappingProxyType({SERVER: started} if started else {}))


def connect(ok: bool, at: float, *, open_: int = 1, error: str = "ECONNREFUSED: Connection refused") -> BridgeConnect:
    return BridgeConnect(MODEL, "forward", ok, None if ok else error, open_, at)


def bridge(*connects: BridgeConnect, refused: tuple[str, ...] = ()) -> BridgeLog:
    return BridgeLog(endpoints=(MODEL,), connects=connects, refused=refused)


HEALTHY_BRIDGE = bridge(connect(True, 1.0), connect(True, 2.0))
API_ERROR = transcript(result=result_event(is_error=True, result="API Error: Connection error.", api_error_status=None))
SERVER_FAILED = transcript(init=init_event((SERVER, "failed")))


def audit(stream=None, *, process: ProcessOutcome = OK_PROCESS, relay_log: RelayLog | None = None, bridge_log: BridgeLog | None = None,
          sandbox=CONFINED, **run_fields):
    """Audit a run that had a relay (and a model bridge when one is given), confined unless told otherwise."""
    run = make_run(make_suite(), process=process, sandbox=sandbox, relay_log="relay.jsonl",
                   bridge_log="model-bridge.jsonl" if bridge_log is not None else None, **run_fields)
    return audit_run(run, stream or transcript(), relay_log if relay_log is not None else relay(), bridge_log)


def _stopped(why: str) -> ProcessOutcome:
    return ProcessOutcome(exit_code=None, timed_out=False, signal=None, wall_clock_seconds=1.0, stopped_because=why)


# Route -> (the harness's own evidence: harness, with its words), (the agent's side alone: agent, with its words).
ROUTES = {
    "the agent program never started": (
        dict(process=_stopped(f"{NEVER_STARTED}: could not start the agent command 'claudex': No such file or directory")),
        "the agent never started",
        # The agent's own words for the same thing: its last stderr line and a non-zero exit.
        dict(process=ProcessOutcome(exit_code=1, timed_out=False, signal=None, wall_clock_seconds=1.0,
                                    last_stderr_line="the agent never started: could not start the agent command")),
        "the agent exited with code 1",
    ),
    "an MCP server not connected (the hub could not start it)": (
        dict(stream=SERVER_FAILED, relay_log=relay(started=0, failures=("could not start `agentbench-mcp`: No such file",), calls=())),
        "MCP server 'agentbench' was failed, not connected: confirmed by the relay log: the hub could not start it",
        dict(stream=SERVER_FAILED),
        "the agent's stream says MCP server 'agentbench' was failed, not connected; unconfirmed by the harness "
        "(the relay log shows the harness started it on 1 connection)",
    ),
    "an MCP server not connected (the harness's probe could not start it)": (
        dict(stream=transcript(init=init_event((SERVER, "pending"))), probe_error="agentbench-mcp exited with code 1"),
        "MCP server 'agentbench' was pending, not connected: confirmed by the harness's own probe of the server",
        dict(stream=transcript(init=init_event((SERVER, "pending")))),
        "the agent's stream says MCP server 'agentbench' was pending, not connected; unconfirmed by the harness",
    ),
    "no MCP server in init": (
        dict(stream=transcript(init=dataclasses.replace(init_event(), mcp_servers=())),
             relay_log=relay(started=0, failures=("could not start `x`",), calls=())),
        "the init event lists no MCP server: confirmed by the relay log",
        # The agent never started its relay and printed an init without servers.
        dict(stream=transcript(init=dataclasses.replace(init_event(), mcp_servers=())), relay_log=relay(started=0, calls=())),
        "the agent's stream says the init event lists no MCP server; unconfirmed by the harness (the relay log shows no connection",
    ),
    "an API error (the model host refused the bridge)": (
        dict(stream=API_ERROR, bridge_log=bridge(connect(True, 1.0), connect(False, 2.0))),
        "the run ended in an API error: API Error: Connection error.; confirmed by the model bridge: 1 of 2 connections to the "
        "model host failed, the last one too (127.0.0.1:8077: ECONNREFUSED: Connection refused)",
        dict(stream=API_ERROR, bridge_log=HEALTHY_BRIDGE),
        "the agent's stream says the run ended in an API error: API Error: Connection error.; unconfirmed by the harness (the "
        "model bridge opened 2 connections to the model host and the last one succeeded (0 failed))",
    ),
    "a later API error": (
        dict(stream=transcript(later_results=(result_event(is_error=True, api_error_status=529),)),
             bridge_log=bridge(connect(False, 1.0, error="ETIMEDOUT: timed out"))),
        "a later result event ended in an API error (the first result decides, and any error result leaves the run incomplete); "
        "confirmed by the model bridge",
        dict(stream=transcript(later_results=(result_event(is_error=True, api_error_status=529),)), bridge_log=HEALTHY_BRIDGE),
        "the agent's stream says a later result event ended in an API error",
    ),
    "the relay log missing": (
        dict(relay_log=relay(unavailable="the relay log relay.jsonl cannot be read: No such file or directory")),
        "the harness has no record of the MCP calls: the relay log relay.jsonl cannot be read",
        # Unconfined, the agent can reach the run directory and remove it.
        dict(relay_log=relay(unavailable="the relay log relay.jsonl cannot be read: No such file or directory"), sandbox=UNCONFINED),
        "the run was unconfined, so the agent could reach the run directory: this counts as the agent's",
    ),
    "the hub could not start the server": (
        dict(relay_log=relay(started=0, failures=("could not start `x`: No such file or directory",), calls=())),
        "the harness could not start the MCP server agentbench: could not start `x`",
        # A flood of the agent's own connections: the server started, then the host ran out.
        dict(relay_log=relay(started=40, failures=("could not start `x`: Too many open files",) * 3)),
        "the hub could not start the MCP server agentbench on 3 of 43 connections",
    ),
    "the relay log damaged": (
        None, None,  # no route to the harness's cause: whatever damages a line could be the agent's bytes
        dict(relay_log=relay(problems=("line 7: Unterminated string starting at: line 1 column 96",))),
        "the relay log is damaged (1 line did not parse; first: line 7: Unterminated string",
    ),
    "the relay hub's own fault": (
        None, None,  # met while handling the agent's bytes: they may have provoked it
        dict(relay_log=dataclasses.replace(relay(), hub_errors=("agentbench connection 1, to-server: ValueError('x')",))),
        "the relay hub failed on 1 connection direction (first: agentbench connection 1, to-server: ValueError('x'))",
    ),
    "sealed inputs changed": (
        dict(seal_problems=("device-before.json changed while the agent ran",)),
        "the audit's inputs do not match their seals: device-before.json changed while the agent ran",
        dict(seal_problems=("device-before.json changed while the agent ran",), sandbox=UNCONFINED),
        "the audit's inputs do not match their seals: device-before.json changed while the agent ran; the run was unconfined",
    ),
    "the device went away": (
        dict(device_lost="emulator-5554 is no longer listed by adb"),
        "the device went away during the run: emulator-5554 is no longer listed by adb",
        dict(device_lost="emulator-5554 is no longer listed by adb", shell_tools=frozenset({"mcp__agentbench__shell"}),
             relay_log=relay(calls=(relayed(), relayed("shell")))),
        "the agent ran 1 shell call on the device (shell), which can end its connection: this counts as the agent's",
    ),
    "the server's tools not listed": (
        dict(probe_error="tools/list timed out", device_aware_tools=frozenset(), relay_log=relay(calls=())),
        "the harness could not list the MCP server's tools, so device use cannot be judged: tools/list timed out",
        None, None,  # the probe runs before the agent: nothing of the agent's reaches it
    ),
}


@pytest.mark.parametrize("route", [route for route, (evidence, *_) in ROUTES.items() if evidence is not None])
def test_the_harness_s_own_evidence_reaches_incomplete_harness(route: str) -> None:
    evidence, words, _, _ = ROUTES[route]
    got = audit(**evidence).verdict
    assert (got.status, got.cause) == ("incomplete", "harness"), got
    assert any(reason.startswith(words) for reason in got.reasons), got.reasons


@pytest.mark.parametrize("route", [route for route, (_, _, alone, _) in ROUTES.items() if alone is not None])
def test_the_agent_s_side_alone_stays_the_agent_s(route: str) -> None:
    _, _, alone, words = ROUTES[route]
    got = audit(**alone).verdict
    assert (got.status, got.cause) == ("incomplete", "agent"), got
    assert any(words in reason for reason in got.reasons), got.reasons


@pytest.mark.parametrize(
    ("log", "words"),
    [
        (None, "the run was unconfined, so no model bridge of the harness's carried its connections"),
        (bridge(), "the model bridge carried no connection to the model host"),
        (bridge(refused=("10.0.0.2:5037", "api.example.com:443")), "the model bridge carried no connection to the model host"),
        (bridge(connect(False, 1.0), connect(True, 2.0)), "the last one succeeded (1 failed)"),
        (bridge(connect(True, 1.0), connect(False, 2.0, open_=MAX_HONEST_OPEN + 1)),
         f"failed with {MAX_HONEST_OPEN + 1} of the agent's connections open at once"),
        (BridgeLog(unavailable="the model bridge's log model-bridge.jsonl cannot be read: No such file or directory"),
         "cannot be read"),
    ],
    ids=["unconfined", "no connection", "only refusals", "a blip, then the host answered", "the agent's own flood", "no log"],
)
def test_an_api_error_the_bridge_does_not_confirm_is_the_agent_s(log: BridgeLog | None, words: str) -> None:
    got = audit(API_ERROR, bridge_log=log, sandbox=UNCONFINED if log is None else CONFINED).verdict
    assert (got.status, got.cause) == ("incomplete", "agent"), got
    (reason,) = got.reasons
    assert reason.startswith("the agent's stream says the run ended in an API error") and words in reason, reason


def test_the_stream_that_could_not_be_saved_and_an_unknown_exit_are_the_agent_s() -> None:
    unsaved = audit(process=_stopped(f"{STREAM_UNWRITTEN}: could not write the agent's stream: [Errno 28] No space left")).verdict
    assert unsaved.cause == "agent" and "a flood that fills the disk" in unsaved.reasons[0]
    unknown = audit(process=ProcessOutcome(exit_code=None, timed_out=False, signal=None, wall_clock_seconds=3.0)).verdict
    assert unknown.cause == "agent" and unknown.reasons[0].startswith("the agent's exit status is unknown")


# ----------------------------------------------------------------------------- no agent output alone

# What an agent can produce, each dimension on its own: its process's end, its init event, its
# result events, garbage lines, its bytes and connections through the relay, its connections
# through the model bridge, and (unconfined) the files of its run directory and the device.
_PROCESSES = [
    OK_PROCESS,
    ProcessOutcome(exit_code=3, timed_out=False, signal=None, wall_clock_seconds=1.0, last_stderr_line="API Error: 500"),
    ProcessOutcome(exit_code=None, timed_out=False, signal=signal.SIGKILL, wall_clock_seconds=1.0),
    ProcessOutcome(exit_code=None, timed_out=True, signal=None, wall_clock_seconds=600.0),
    ProcessOutcome(exit_code=None, timed_out=False, signal=None, wall_clock_seconds=1.0),
    _stopped("no output for 30 s (claude.idleTimeoutSeconds)"),
    _stopped(f"{STREAM_UNWRITTEN}: [Errno 28] No space left on device"),
]
_INITS = [None, init_event(), init_event((SERVER, "failed")), init_event((SERVER, "pending")), init_event(("other", "failed")),
          dataclasses.replace(init_event(), mcp_servers=())]
_RESULTS = [
    (result_event(), ()),
    (None, ()),
    (result_event(is_error=True, result="API Error: 500 Internal Server Error", api_error_status=500), ()),
    (result_event(is_error=True, result="API Error: Connection error."), ()),
    (result_event("error_during_execution", is_error=True), ()),
    (result_event(), (result_event(is_error=True, api_error_status=529),)),
]
_RELAYS = [
    relay(),
    relay(started=0, calls=()),  # the agent never started its relay
    relay(problems=("line 3: Expecting value: line 1 column 1",)),  # bytes that broke a line
    relay(started=30, failures=("could not start `python`: Resource temporarily unavailable",)),  # a flood of connections
    relay(calls=(relayed(), relayed("tapOn", "error"), relayed("observe", "no-response"))),
    dataclasses.replace(relay(), hub_errors=("agentbench connection 1, to-server: RecursionError()",)),  # bytes that broke the hub
]
_BRIDGES = [
    None,
    HEALTHY_BRIDGE,
    bridge(refused=("127.0.0.1:5037", "evil.example:443")),
    bridge(connect(True, 1.0), *(connect(False, 2.0 + n, open_=MAX_HONEST_OPEN + 5) for n in range(3))),
    bridge(connect(False, 1.0), connect(True, 2.0)),
]
# Unconfined, the agent reaches the run directory and the device: whatever it does there.
_UNCONFINED_DAMAGE = [
    {},
    {"seal_problems": ("device-before.json changed while the agent ran",)},
    {"device_lost": "emulator-5554 is no longer listed by adb"},
    {"relay_log": relay(unavailable="the relay log relay.jsonl cannot be read: No such file or directory")},
]


def _stream(init, result: tuple, unparseable: bool):
    first, later = result
    lines = (UnparseableLine(4, "{not json", "invalid JSON"),) if unparseable else ()
    return transcript(init=init, result=first, later_results=later, unparseable=lines)


def test_no_agent_output_alone_makes_a_working_harness_s_run_the_harness_s() -> None:
    """Every combination of the agent's side on a confined run whose harness worked: never `harness`."""
    blamed = []
    combinations = itertools.product(_INITS, _RESULTS, (False, True), _RELAYS, _BRIDGES)
    # The process's end is judged apart from the rest, so each is paired with every 7th combination.
    for process, (init, result, unparseable, relay_log, bridge_log) in zip(itertools.cycle(_PROCESSES), combinations):
        stream = _stream(init, result, unparseable)
        verdict = audit(stream, process=process, relay_log=relay_log, bridge_log=bridge_log).verdict
        if verdict.cause == "harness":
            blamed.append(verdict.reasons)
    assert blamed == [], blamed[:3]


def test_no_unconfined_agent_output_makes_its_run_the_harness_s() -> None:
    """Unconfined, the agent can also write its run directory and reach the device: still never `harness`."""
    blamed = []
    for damage, init, result, relay_log in itertools.product(_UNCONFINED_DAMAGE, _INITS, _RESULTS, _RELAYS):
        fields = dict(damage)
        verdict = audit(_stream(init, result, False), relay_log=fields.pop("relay_log", relay_log), sandbox=UNCONFINED, **fields).verdict
        if verdict.cause == "harness":
            blamed.append(verdict.reasons)
    assert blamed == [], blamed[:3]


def test_a_run_saved_before_the_sandbox_recorded_nothing_is_judged_as_unconfined() -> None:
    # A result.json from before the sandbox block: `sandbox` None. Its stream's API error and a
    # failed server are the agent's claims; the device lost is the agent's as any unconfined run's.
    old = make_run(make_suite(), device_lost="emulator-5554 is no longer listed by adb")
    assert audit_run(old, transcript()).verdict.cause == "agent"
    assert audit_run(make_run(make_suite()), API_ERROR).verdict.cause == "agent"
    assert audit_run(make_run(make_suite()), SERVER_FAILED).verdict.cause == "agent"


# ----------------------------------------------------------------------------- the bridge log as read back


def test_the_bridge_log_is_read_by_lf_only_and_sorted_by_when_each_connection_ended() -> None:
    lines = [
        '{"event": "bridge", "endpoints": ["127.0.0.1:8077"]}',
        '{"event": "connect", "endpoint": "127.0.0.1:8077", "via": "forward", "ok": false, "error": "ECONNREFUSED: x", '
        '"open": 2, "monotonic": 9.0}',
        '{"event": "connect", "endpoint": "127.0.0.1:8077", "via": "forward", "ok": true, "open": 1, "monotonic": 3.0}',
        '{"event": "refused", "target": "evil.example:443"}',
        "{broken",
    ]
    log = parse_bridge_lines(lines)
    assert log.endpoints == ("127.0.0.1:8077",) and log.refused == ("evil.example:443",)
    assert [(c.ok, c.open) for c in log.connects] == [(True, 1), (False, 2)]
    assert log.failures == (log.connects[1],) and log.problems[0].startswith("line 5:")
    assert parse_bridge_lines(lines[1:]).unavailable == "the model bridge's log has no header"


def test_a_bridge_log_nobody_read_confirms_nothing() -> None:
    run = make_run(make_suite(), sandbox=CONFINED, relay_log="relay.jsonl", bridge_log="model-bridge.jsonl")
    got = audit_run(run, API_ERROR, relay(), None).verdict
    assert got.cause == "agent" and "the model bridge's log model-bridge.jsonl was not read" in got.reasons[0]


# ----------------------------------------------------------------------------- the sandbox's self-test

SELF_TEST_HOLE = {"ok": False, "checks": [
    {"what": "the run directory", "expected": "hidden", "reached": True, "seen": ["device-before.json"]},
    {"what": "TCP 127.0.0.1:5037", "expected": "refused", "reached": False},
    {"what": "socket /tmp/agentbench-relay-x/agentbench.sock", "expected": "reachable", "reached": True},
]}


def test_a_self_test_that_found_a_hole_makes_the_run_the_harness_s_and_says_what_was_reachable() -> None:
    verdict = audit(transcript(), process=ProcessOutcome(exit_code=125, timed_out=False, signal=None, wall_clock_seconds=0.1),
                    sandbox={"mode": "on", "selfTest": SELF_TEST_HOLE}).verdict
    assert (verdict.status, verdict.cause) == ("incomplete", "harness")
    assert verdict.reasons[0] == ("the sandbox's self-test failed, so the agent was not confined as promised: "
                                  "the run directory: reachable (saw device-before.json)")


@pytest.mark.parametrize("self_test", [{"ok": True, "checks": []}, None, "garbage"])
def test_a_passing_or_absent_self_test_changes_nothing(self_test) -> None:
    assert audit(transcript(), sandbox={"mode": "on", "selfTest": self_test}).verdict.cause != "harness"


def test_an_unconfined_run_has_no_self_test_to_blame() -> None:
    # Only the sandbox writes selfTest; an unconfined run's record could hold anything the agent wrote.
    assert audit(transcript(), sandbox={"mode": "off", "selfTest": SELF_TEST_HOLE}).verdict.cause != "harness"
