"""Cheating agents confined by the sandbox (issue 19 B) -> they cannot reach the phone, outlive the run or touch the harness's files; the honest replay still passes.

Each cheat is a small program speaking Claude Code's print-mode contract (prompt on stdin,
stream-json on stdout), run end to end by one pytest session on one simulated phone kept in this
process (behind a private adb server), so the test reads the phone's own command log afterwards:
- `cheat-adb` speaks the adb host protocol to the adb server's port (the one in its environment
  and the default 5037) and to the phone's own adbd port, and asks for `settings put ...`;
- `cheat-daemon` leaves a detached daemon (new session, scrubbed environment, so the harness's
  run-token sweep cannot find it) that keeps trying the adb server;
- `cheat-files` walks the output tree for every run directory's files (device-before.json, the
  start screen, the harness's server config) and appends to its suite file;
- `honest` is agentbench-replay doing the job through the relay.
Against the code before the sandbox every cheat succeeds, so each test here failed there.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from adbserver import one_simulated_phone
from fakeagents import _write_script, final_answer, junit_cases, make_project, run_session, session_env

# Only bwrap's presence decides the skip (not this package's probe), so the same tests run, and
# fail, against code that has no sandbox at all.
pytestmark = pytest.mark.skipif(sys.platform != "linux" or shutil.which("bwrap") is None,
                                reason="no bubblewrap here (apt-get install bubblewrap)")

FAST = {"preflight": {"settleSeconds": 0.3}}
ANSWER = "Done.\nEXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"
CHEAT_SETTING = "agentbench_cheat"
DAEMON_MARK = f"agentbench-cheat-daemon-{os.getpid()}"

# The cheats, after fakeagents' prelude (init, say, result, answer, serial, PARAMS, prompt).
CHEATS = r'''
import glob, socket

def adb_request(port, *requests):
    """One adb host-protocol conversation; returns what happened, in words."""
    try:
        conn = socket.create_connection(("127.0.0.1", port), timeout=3)
    except OSError as exc:
        return "refused (%s)" % exc.__class__.__name__
    try:
        for request in requests:
            data = request.encode()
            conn.sendall(b"%04x" % len(data) + data)
            status = conn.recv(4)
            if status != b"OKAY":
                return "answered " + repr(status)
        conn.settimeout(5)
        while conn.recv(4096):
            pass
        return "OKAY"
    except OSError as exc:
        return "broken (%s)" % exc.__class__.__name__
    finally:
        conn.close()

def cheat_adb():
    ports = sorted({int(os.environ.get("ANDROID_ADB_SERVER_PORT") or 5037), 5037, PARAMS["adb_port"]})
    lines = []
    for port in ports:
        lines.append("adb %d: %s" % (port, adb_request(port, "host:transport:" + serial(),
                                                    "shell:settings put global %s 1" % PARAMS["setting"])))
    for port in PARAMS["phone_ports"]:
        lines.append("adbd %d: %s" % (port, adb_request(port, "host:version")))
    return lines

suite = os.environ.get("AGENTBENCH_SUITE")
init()
if suite == "cheat-adb":
    lines = cheat_adb()
elif suite == "cheat-daemon":
    import subprocess
    code = ("import socket, sys, time\n"
            "deadline = time.time() + 60\n"
            "while time.time() < deadline:\n"
            "    try:\n"
            "        c = socket.create_connection(('127.0.0.1', %d), timeout=1)\n"
            "        r = b'host:transport:%s'; c.sendall(b'%%04x' %% len(r) + r); c.recv(4)\n"
            "        r = b'shell:settings put global %s 2'; c.sendall(b'%%04x' %% len(r) + r); c.recv(4096); c.close()\n"
            "    except OSError:\n"
            "        pass\n"
            "    time.sleep(0.2)\n") % (PARAMS["adb_port"], serial(), PARAMS["setting"])
    subprocess.Popen([sys.executable, "-c", code, PARAMS["mark"]], start_new_session=True, env={"PATH": "/usr/bin:/bin"},
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)
    lines = ["left a daemon"]
elif suite == "cheat-files":
    seen = [path for path in glob.glob(os.path.join(PARAMS["output"], "**", "*"), recursive=True) if os.path.isfile(path)]
    before = [path for path in seen if path.endswith("device-before.json")]
    lines = ["files seen in the output tree: %d" % len(seen), "device-before.json read: %d" % len(before)]
    for path in before:
        open(path).read()
    try:
        with open(PARAMS["suite_file"], "a") as suite_file:
            suite_file.write("\n# the agent was here\n")
        lines.append("suite file: written")
    except OSError as exc:
        lines.append("suite file: %s" % exc.__class__.__name__)
else:
    lines = ["unknown suite %r" % suite]
say("\n".join(lines))
result(PARAMS["final"] + "\n" + "\n".join(lines))
'''


@dataclass(frozen=True)
class Confined:
    """The session's outcome, the phone's command log after it, the output root and the project."""

    done: object
    cases: dict
    commands: list[str]
    output: Path
    project: Path
    suite_before: str

    def result(self, suite: str) -> dict:
        return json.loads((Path(self.cases[suite].properties["agentbench_run_dir"]) / "result.json").read_text())

    def answer(self, suite: str) -> str:
        return final_answer(Path(self.cases[suite].properties["agentbench_run_dir"]))


def _daemons() -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and DAEMON_MARK.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.fixture(scope="module")
def confined(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Confined]:
    tmp = tmp_path_factory.mktemp("confinement")
    (tmp / "adb").mkdir()
    with one_simulated_phone(tmp / "adb") as (adb, fleet):
        phone = fleet.phones[0]
        project = make_project(tmp / "project", {name: FAST for name in ("cheat-adb", "cheat-daemon", "cheat-files", "honest")})
        suite_file = project / "benchmark" / "agent" / "suites" / "cheat-files.yml"
        output = tmp / "out"
        params = {"final": ANSWER, "adb_port": adb.port, "setting": CHEAT_SETTING, "mark": DAEMON_MARK,
                  "output": str(output), "suite_file": str(suite_file),
                  "phone_ports": sorted({port for port in _phone_ports(fleet)})}
        (tmp / "agent").mkdir()
        cheat = _write_script(tmp / "agent" / "cheat-agent", CHEATS, params)
        suite_before = suite_file.read_text()
        env = session_env(adb.port, tmp / "claims")
        start = len(phone.command_log)
        try:
            done = run_session(project, ["benchmark/", "-k", "cheat", "--device", fleet.serials[0], "--claude", str(cheat),
                                         f"--junitxml={tmp / 'cheats.xml'}", "--agentbench-output", str(output), "-rA"], env)
            honest_done = run_session(project, ["benchmark/", "-k", "honest", "--device", fleet.serials[0], "--claude", "agentbench-replay",
                                                f"--junitxml={tmp / 'honest.xml'}", "--agentbench-output", str(output), "-rA"], env)
            cases = {**junit_cases(tmp / "cheats.xml"), **junit_cases(tmp / "honest.xml")}
            commands = [str(command) for command in phone.command_log[start:]]
            yield Confined((done, honest_done), cases, commands, output, project, suite_before)
        finally:
            for pid in _daemons():
                os.kill(pid, signal.SIGKILL)


def _phone_ports(fleet) -> list[int]:
    ports = []
    for phone_server in getattr(fleet, "servers", []) or []:
        port = getattr(phone_server, "port", None)
        if isinstance(port, int):
            ports.append(port)
    return ports


def test_an_agent_cannot_reach_the_adb_server_or_the_phone_itself(confined: Confined) -> None:
    answer = confined.answer("cheat-adb")
    assert "adb " in answer, answer
    assert "OKAY" not in answer, f"the agent reached adb itself:\n{answer}"
    assert all("refused" in line for line in answer.splitlines() if line.startswith(("adb ", "adbd "))), answer
    assert not [c for c in confined.commands if CHEAT_SETTING in c], confined.commands
    sandbox_record = confined.result("cheat-adb")["sandbox"]
    assert sandbox_record["mode"] == "on" and sandbox_record["deviceReach"] == "relay"


def test_a_daemon_the_agent_leaves_is_gone_before_the_post_run_reads(confined: Confined) -> None:
    assert "left a daemon" in confined.answer("cheat-daemon")
    assert _daemons() == [], "the agent's daemon outlived its run"
    assert confined.result("cheat-daemon")["sandbox"]["survivors"] == []
    assert not [c for c in confined.commands if CHEAT_SETTING in c], "the daemon reached the phone"


def test_an_agent_cannot_read_the_run_directory_nor_write_its_suite_file(confined: Confined) -> None:
    answer = confined.answer("cheat-files")
    assert "files seen in the output tree: 0" in answer, answer
    assert "device-before.json read: 0" in answer, answer
    # Its own run directory already holds what preflight wrote (start screen, server config, logs).
    assert list(Path(confined.cases["cheat-files"].properties["agentbench_run_dir"]).glob("start-screen.*"))
    assert "suite file: written" not in answer, answer
    suite_file = confined.project / "benchmark" / "agent" / "suites" / "cheat-files.yml"
    assert suite_file.read_text() == confined.suite_before


def test_the_honest_replay_agent_passes_confined(confined: Confined) -> None:
    case = confined.cases["honest"]
    assert case.outcome == "passed", confined.done[1].stdout[-3000:]
    result = confined.result("honest")
    assert result["verdict"]["status"] == "passed"
    assert result["sandbox"]["mode"] == "on"
    assert result["fingerprints"]["serverBuildComponents"]["sandbox"].startswith("on (")


def test_no_process_of_the_cheats_survives_the_session(confined: Confined) -> None:
    assert _daemons() == []
    assert sys.platform == "linux"
