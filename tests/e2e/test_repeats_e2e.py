"""Acceptance tests for repeats: pytest sessions on simulated phones -> statistics, an A/B comparison, seeded instances, many phones.

A fake agent passes a seeded 7 of 10 runs (and leaves two incomplete); a second session on the
same seeds passes 2 of 10 and is compared with the first. The same seed names the same
instances in another process; a different seed does not. Nine runs on four phones under
pytest-xdist equal a serial session's numbers and never share a phone. A device on a second adb
server is reached as HOST:PORT/SERIAL, and so is it by the run's MCP server.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from math import comb
from pathlib import Path

import pytest
import scipy.stats
from adbserver import PrivateAdbServer, start_private_adb_server
from fakeagents import (
    Behaviour,
    Case,
    junit_cases,
    make_project,
    run_session,
    session_env,
    write_instance_agent,
)

from pytest_agentbench.device import claimlog
from pytest_agentbench.run import sandbox
from pytest_agentbench.suite.params import instance_id, instance_values

SEED = 11
REPEAT = 12  # r1-r7 pass, r8-r10 fail, r11-r12 end incomplete
PARAMS = {"ref": {"type": "code", "pattern": "REF-####"}}
# bug-repro's prompt for the 3-tap instance the fake agents answer for (make_project pins the same).
PROMPT = ((Path(__file__).resolve().parents[2] / "benchmark" / "agent" / "prompts" / "bug-repro.txt").read_text(encoding="utf-8")
          .replace("{taps}", "3").replace("{fewer}", "2"))
ANSWER = "Done.\nEXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"
PASS, FAIL = Behaviour("replay"), Behaviour("answer", {"final": ANSWER})
# The model host refusing connections (the session's ANTHROPIC_BASE_URL is a loopback port nothing
# listens on), which the agent meets and the harness's model bridge records: incomplete by the
# harness's doing, so outside the rate. An agent's own stop (a non-zero exit, a timeout, an API
# error only its stream reports) would count as not passed.
INCOMPLETE = Behaviour("model-unreachable", {"final": ANSWER})
COLUMNS = "100"


@dataclass(frozen=True)
class Session:
    """A finished session: process result, JUnit cases and suite properties, the session document, the output root."""

    done: subprocess.CompletedProcess[str]
    cases: dict[str, Case]
    suite_properties: dict[str, str]
    document: dict
    output: Path

    @property
    def terminal(self) -> str:
        return self.done.stdout + self.done.stderr

    def section(self, title: str) -> str:
        """The text under a `-- title --` rule of the agentbench section, to the next rule."""
        lines = self.done.stdout.splitlines()
        start = next(i for i, line in enumerate(lines) if re.fullmatch(rf"-+ {re.escape(title)} -+", line))
        # The next titled rule (a table's own rule of dashes has no title).
        end = next((i for i in range(start + 1, len(lines)) if re.fullmatch(r"[-=]{3,} \S.* [-=]{3,}", lines[i])), len(lines))
        return "\n".join(lines[start + 1:end])


def flat(text: str) -> str:
    return " ".join(text.split())


def table_row(text: str, suite: str) -> list[str]:
    (row,) = [line.split() for line in text.splitlines() if line.split()[:1] == [suite]]
    return row


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run(cwd: Path, args: list[str], adb: PrivateAdbServer, tmp: Path, *, own_warm_starts: bool = False, **env: str) -> Session:
    output, junit, document = tmp / "out", tmp / "r.xml", tmp / "session.json"
    environ = session_env(adb.port, tmp / "claims", own_warm_starts=own_warm_starts, COLUMNS=COLUMNS, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{_closed_port()}", **env)
    done = run_session(cwd, [*args, "--agentbench-output", str(output), f"--junitxml={junit}",
                             "--agentbench-json", str(document), "-p", "xdist"], environ)
    assert junit.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    suite_properties = {p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("testsuite") for p in p.iterfind("properties/property")}
    return Session(done, junit_cases(junit), suite_properties, json.loads(document.read_text(encoding="utf-8")), output)


def seeded_project(root: Path) -> Path:
    """One suite, `seeded`: bug-repro with a REF-#### code in its prompt, settled quickly."""
    project = make_project(root, {"seeded": {"params": PARAMS, "prompt": "../prompts/seeded.txt", "preflight": {"settleSeconds": 0.3}}})
    (project / "benchmark" / "agent" / "prompts" / "seeded.txt").write_text(f"Reference {{ref}}.\n{PROMPT}", encoding="utf-8")
    return project


def refs(seed: int = SEED, repeats: int = REPEAT) -> list[str]:
    return [str(instance_values(PARAMS, seed=seed, suite="seeded", repeat=r)["ref"]) for r in range(1, repeats + 1)]


def agent_passing(tmp: Path, passes: set[int]) -> Path:
    """The fake agent: instances in `passes` pass, others of r1-r10 fail, r11 and r12 end incomplete."""
    table = {ref: PASS if r in passes else FAIL if r <= 10 else INCOMPLETE for r, ref in enumerate(refs(), start=1)}
    return write_instance_agent(tmp / "agent", r"REF-\d{4}", table, INCOMPLETE, project=tmp / "project", suite="seeded")


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


@pytest.fixture(scope="module")
def seven_of_ten(adb_server: PrivateAdbServer, tmp_path_factory: pytest.TempPathFactory) -> Session:
    tmp = tmp_path_factory.mktemp("seven")
    project = seeded_project(tmp / "project")
    agent = agent_passing(tmp, passes=set(range(1, 8)))
    return run(project, ["benchmark/", "--device", "sim", "--claude", str(agent), "--agentbench-repeat", str(REPEAT),
                         "--agentbench-seed", str(SEED)], adb_server, tmp)


@pytest.fixture(scope="module")
def two_of_ten(adb_server: PrivateAdbServer, seven_of_ten: Session, tmp_path_factory: pytest.TempPathFactory) -> Session:
    tmp = tmp_path_factory.mktemp("two")
    project = seeded_project(tmp / "project")
    agent = agent_passing(tmp, passes={1, 2})
    baseline = seven_of_ten.output.parent / "session.json"
    return run(project, ["benchmark/", "--device", "sim", "--claude", str(agent), "--agentbench-repeat", str(REPEAT),
                         "--agentbench-seed", str(SEED), "--agentbench-compare", str(baseline)], adb_server, tmp)


# ----------------------------------------------------------------------------- 7 of 10


def test_seven_of_ten_shows_the_counts_the_interval_and_the_estimates(seven_of_ten: Session) -> None:
    assert seven_of_ten.done.returncode == 1, seven_of_ten.terminal[-3000:]  # failures and incomplete runs
    section = seven_of_ten.section("agentbench statistics")
    suite, runs, passed, incomplete, rate, interval, pass1, pass3, hat3 = table_row(section, "seeded")
    assert (runs, passed, incomplete, rate) == ("12", "7/10", "2", "70%")
    low, high = (int(part) / 100 for part in interval.rstrip("%").split("–"))
    assert (low, high) == (0.40, 0.89)
    assert pass1 == "0.700"
    assert pass3 == f"{1 - comb(3, 3) / comb(10, 3):.3f}" == "0.992"
    assert hat3 == f"{comb(7, 3) / comb(10, 3):.3f}" == "0.292"
    assert "all suites: mean pass rate 70% (95% CI 40–89%, Wilson, one suite); 7/10 runs passed, 2 incomplete" in flat(section)


def test_harness_incomplete_runs_are_in_neither_number(seven_of_ten: Session) -> None:
    outcomes = {case.properties["agentbench_instance"]: case.properties["agentbench_verdict"] for case in seven_of_ten.cases.values()}
    assert sorted(outcomes.values()).count("incomplete") == 2
    causes = [run["verdict"].get("incompleteCause") for run in seven_of_ten.document["runs"] if run["verdict"]["status"] == "incomplete"]
    assert causes == ["harness", "harness"]
    stats = seven_of_ten.document["statistics"]["suites"]["seeded"]
    assert (stats["passed"], stats["failed"], stats["incomplete"], stats["judged"], stats["runs"]) == (7, 3, 2, 10, 12)
    assert stats["passAtK"]["3"] == pytest.approx(1 - 1 / 120) and stats["passHatK"]["3"] == pytest.approx(35 / 120)
    assert stats["passAtK"]["11"] is None  # more than the judged runs: unknown, never 1.0
    properties = seven_of_ten.suite_properties
    assert (properties["agentbench.seeded.passed"], properties["agentbench.seeded.judged"], properties["agentbench.seeded.incomplete"]) == ("7", "10", "2")
    assert properties["agentbench.seed"] == str(SEED)


def test_instances_are_in_node_ids_and_result_documents(seven_of_ten: Session) -> None:
    expected = [instance_id(r, {"ref": ref}) for r, ref in enumerate(refs(), start=1)]
    assert sorted(seven_of_ten.cases) == sorted(f"seeded[{i}]" for i in expected)
    for run in seven_of_ten.document["runs"]:
        instance = run["instance"]
        assert instance["values"] == {"ref": refs()[instance["repeat"] - 1]} and instance["seed"] == SEED
        assert f"Reference {instance['values']['ref']}." in (Path(run["runDirectory"]) / "prompt.md").read_text(encoding="utf-8")
    digests = {run["fingerprints"]["suiteDigest"] for run in seven_of_ten.document["runs"]}
    assert len(digests) == 1  # the declaration, not the values


def test_every_run_has_its_own_directory(seven_of_ten: Session) -> None:
    directories = [case.properties["agentbench_run_dir"] for case in seven_of_ten.cases.values()]
    assert len(set(directories)) == REPEAT


# ----------------------------------------------------------------------------- A/B


def test_the_comparison_prints_both_rates_the_difference_and_the_exact_p(two_of_ten: Session) -> None:
    text = flat(two_of_ten.section("agentbench comparison"))
    # The default verbosity: one compact block per suite (-v prints both rates with their intervals).
    assert "seeded: 7/10 (2 incomplete) -> 2/10 (2 incomplete), -50 points" in text
    comparison = two_of_ten.document["comparison"]["suites"]["seeded"]
    assert comparison["design"] == "paired" and comparison["test"] == "mcnemar-exact"
    assert comparison["pairs"] == {"both": 2, "baselineOnly": 5, "thisRunOnly": 0, "neither": 3, "dropped": 2, "unmatched": 0}
    # McNemar's exact test is the binomial test of the discordant pairs: scipy on the same counts.
    assert comparison["pValue"] == pytest.approx(scipy.stats.binomtest(0, 5).pvalue, rel=1e-12)
    low, high = comparison["interval"]["low"], comparison["interval"]["high"]
    shown = f"-50 points (95% CI {round(low * 100):+d} to {round(high * 100):+d}), McNemar p = 0.062 (paired)"
    assert shown in text, text
    assert comparison["difference"] == -0.5 and low < -0.5 < high


def test_the_session_document_carries_what_a_comparison_needs(seven_of_ten: Session) -> None:
    document = seven_of_ten.document
    assert (document["seed"], document["repeat"]) == (SEED, REPEAT)
    for run in document["runs"]:
        assert run["instance"]["id"] and set(run["fingerprints"]) >= {"appBuild", "deviceFingerprint", "claudeCodeVersion",
                                                                      "serverBuild", "observedModel", "suiteDigest"}


# ----------------------------------------------------------------------------- the same seed everywhere


def collected(project: Path, seed: int, hash_seed: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", "benchmark/",
         "--agentbench-repeat", "3", "--agentbench-seed", str(seed)],
        cwd=project, capture_output=True, text=True, timeout=120, env={**session_env(1, project / "claims"), "PYTHONHASHSEED": hash_seed},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_the_same_seed_makes_the_same_instances_in_another_process(tmp_path: Path) -> None:
    project = seeded_project(tmp_path / "project")
    first, again, other = collected(project, 5, "1"), collected(project, 5, "2"), collected(project, 6, "1")
    expected = [f"benchmark/agent/suites/seeded.yml::seeded[{instance_id(r, {'ref': ref})}]" for r, ref in enumerate(refs(5, 3), start=1)]
    assert first == again == expected
    assert set(other).isdisjoint(first) and len(other) == 3


# ----------------------------------------------------------------------------- many phones


def three_suites(root: Path) -> Path:
    make_project(root, {"repro-a": {"preflight": {"settleSeconds": 0.3}}, "repro-b": {"preflight": {"settleSeconds": 0.3}}})
    return make_project(root, {"flow-c": {"preflight": {"settleSeconds": 0.3}}}, template="ux-flow")


@pytest.fixture(scope="module")
def parallel_and_serial(adb_server: PrivateAdbServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[Session, Session]:
    tmp = tmp_path_factory.mktemp("phones")
    project = three_suites(tmp / "project")
    common = ["benchmark/", "--claude", "agentbench-replay", "--agentbench-repeat", "3"]
    # Its own warm-start server: what the controller starts for its workers is tested here.
    parallel = run(project, [*common, "-n", "4", "--device", "sim:4"], adb_server, tmp / "parallel", own_warm_starts=True)
    serial = run(project, [*common, "--device", "sim"], adb_server, tmp / "serial")
    return parallel, serial


def test_four_phones_pass_in_their_own_run_directories(parallel_and_serial: tuple[Session, Session]) -> None:
    parallel, _ = parallel_and_serial
    assert parallel.done.returncode == 0, parallel.terminal[-4000:]
    assert len(parallel.cases) == 9 and all(case.outcome == "passed" for case in parallel.cases.values())
    directories = {case.properties["agentbench_run_dir"] for case in parallel.cases.values()}
    assert len(directories) == 9


def test_no_phone_is_used_by_two_runs_at_once(parallel_and_serial: tuple[Session, Session]) -> None:
    parallel, _ = parallel_and_serial
    held = claimlog.read(parallel.output / claimlog.CLAIM_LOG_NAME)
    assert len(held) == 9 and all(h.end_ns is not None for h in held)
    assert claimlog.overlaps(held) == []
    assert len({h.pid for h in held}) > 1 and len({h.device for h in held}) > 1  # really spread over workers and phones
    assert {h.holder.split("::")[-1] for h in held} == {f"{s}[r{r}]" for s in ("repro-a", "repro-b", "flow-c") for r in (1, 2, 3)}


def test_the_parallel_numbers_equal_the_serial_ones(parallel_and_serial: tuple[Session, Session]) -> None:
    parallel, serial = parallel_and_serial
    assert serial.done.returncode == 0, serial.terminal[-4000:]

    def numbers(session: Session) -> dict:
        suites = session.document["statistics"]["suites"]
        # Everything but the wall clock, which is the one thing parallel runs change.
        return {name: {**block, "metrics": {k: v for k, v in block["metrics"].items() if k != "wallClockSeconds"}} for name, block in suites.items()}

    assert numbers(parallel) == numbers(serial)
    table = lambda session: [line for line in session.section("agentbench statistics").splitlines() if line.split()[:1] and line.split()[0] in ("repro-a", "repro-b", "flow-c")][:3]  # noqa: E731
    assert sorted(table(parallel)) == sorted(table(serial))


def test_warm_starts_served_the_programs(parallel_and_serial: tuple[Session, Session]) -> None:
    parallel, _ = parallel_and_serial
    # One warm-start server for the whole session, started by the controller and used by every
    # worker: no worker starts its own.
    logs = sorted(parallel.output.glob("warm-starts*.log"))
    log = "".join(path.read_text(encoding="utf-8") for path in logs)
    assert [path.name for path in logs] == ["warm-starts.log"], logs
    # A confined agent never starts warm (the fork server runs outside any sandbox); the servers,
    # which the relay hub starts outside the sandbox, still do.
    replays = 0 if sandbox.probe().usable else 9
    assert log.count("exit agentbench-replay") == replays and log.count("exit agentbench-mcp") >= 9, log


# ----------------------------------------------------------------------------- a phone on another adb server


def test_a_phone_on_another_adb_server(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    from pytest_agentbench.sim.fleet import SimFleet

    project = make_project(tmp_path / "project", {"remote": {"preflight": {"settleSeconds": 0.3}}})
    (tmp_path / "adb2").mkdir()
    with start_private_adb_server(tmp_path / "adb2") as other, SimFleet(count=1, adb=other.client()) as fleet:
        (serial,) = fleet.serials
        entry = f"127.0.0.1:{other.port}/{serial}"
        session = run(project, ["benchmark/", "--device", entry, "--claude", "agentbench-replay"], adb_server, tmp_path / "s")
        assert session.done.returncode == 0, session.terminal[-4000:]
        (result,) = session.document["runs"]
        assert result["device"]["serial"] == serial and result["verdict"]["status"] == "passed"
        config = json.loads((Path(result["runDirectory"]) / "mcp-servers.json").read_text(encoding="utf-8"))
        (server,) = config["mcpServers"].values()
        # The run's MCP server (started by the harness behind the relay) talks to the phone's adb server, not to the session's.
        assert server["env"]["ADB_SERVER_SOCKET"] == f"tcp:127.0.0.1:{other.port}"
        assert server["env"]["ANDROID_ADB_SERVER_PORT"] == str(other.port)
        (held,) = claimlog.read(session.output / claimlog.CLAIM_LOG_NAME)
        assert held.device == f"tcp-127.0.0.1-{other.port}/{serial}"


def test_more_workers_than_phones_take_turns(adb_server: PrivateAdbServer, tmp_path: Path) -> None:
    from pytest_agentbench.sim.fleet import SimFleet

    project = make_project(tmp_path / "project", {"shared": {"preflight": {"settleSeconds": 0.3}}})
    with SimFleet(count=1, adb=adb_server.client()) as fleet:
        (serial,) = fleet.serials
        session = run(project, ["benchmark/", "-n", "2", "--device", serial, "--claude", "agentbench-replay",
                                "--agentbench-repeat", "2"], adb_server, tmp_path / "s")
    assert session.done.returncode == 0, session.terminal[-4000:]
    held = claimlog.read(session.output / claimlog.CLAIM_LOG_NAME)
    # Both workers ran on the one phone, one after the other: the second waited for its sibling.
    assert len(held) == 2 and len({h.pid for h in held}) == 2 and claimlog.overlaps(held) == []
