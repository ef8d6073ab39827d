"""Issue 19 E, end to end: a run that leaves an app-op of another package, a file on /sdcard and a device process behind -> cleanup puts the phone back and says so, and the next honest `wakelock-restrict` passes.

One pytest session on one simulated phone runs two suites in order, both through the `adb-shell`
server with scripted replay plans. `leftover-maker` (a Playground suite: nothing it checks
watches the testbed or Chrome) restricts the testbed's background use, sets another
app's WAKE_LOCK, writes a file and a directory on shared storage and starts two device processes
(one a root daemon, through `su`, that would restrict Chrome later). Then the committed `wakelock-restrict` runs the
honest mixed route (`dumpsys power`, then `cmd appops set` on the holder). Before cleanup watched
the whole phone, the testbed was still restricted when the second run began, and it failed
("dev.agentbench.testbed was already in mode ignore before the run").
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adbserver import one_simulated_phone  # noqa: E402
from fakeagents import BENCHMARK, junit_cases, make_project, run_session, session_env  # noqa: E402

TESTBED = "dev.agentbench.testbed"
LEFTOVER_DIR = "/sdcard/Download/agentbench-leftover"


def shell(command: str, **capture: str) -> dict[str, Any]:
    step: dict[str, Any] = {"tool": "shell", "args": {"command": command}}
    if capture:
        ((name, pattern),) = capture.items()
        step["capture"] = {"name": name, "pattern": pattern}
    return step


LEFTOVER_PLAN = {"steps": [
    shell(f"cmd appops set {TESTBED} RUN_ANY_IN_BACKGROUND ignore"),
    shell("cmd appops set com.android.chrome WAKE_LOCK ignore"),
    shell(f"mkdir -p {LEFTOVER_DIR} && echo 'from the last run' > '{LEFTOVER_DIR}/note one.txt'"),
    shell("nohup sleep 600 > /dev/null 2>&1 &"),
    # A daemon as root that would do the next run's harm: restrict Chrome once cleanup is over.
    shell("su 0 sh -c 'sleep 45; cmd appops set com.android.chrome RUN_ANY_IN_BACKGROUND ignore' > /dev/null 2>&1 &"),
], "final": "DONE"}
TESTBED_HOLDER_SEED = 16
# The drawn holder as a shell finds it: the wake lock's uid in dumpsys power, the package of that uid.
HONEST_WAKELOCK_PLAN = {"steps": [shell("dumpsys power", uid=r"ACQ=\S+ \(uid=(\d+)"),
                                  shell("pm list packages -U | grep uid:{uid}", holder=r"package:([\w.]+) uid:"),
                                  shell("cmd appops set {holder} RUN_ANY_IN_BACKGROUND ignore")],
                        "final": "WAKELOCK_APP: {holder}"}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("leftovers")
    project = make_project(tmp / "project", {"leftover-maker": {}}, plans={"leftover-maker": LEFTOVER_PLAN})
    agent = project / "benchmark" / "agent"
    suite = yaml.safe_load((agent / "suites" / "leftover-maker.yml").read_text())
    for key in ("prove", "baseline", "baselineToolSequence", "cleanup"):
        suite.pop(key, None)
    suite["verify"]["answerIncludes"] = ["DONE"]  # its verdict does not matter here
    (agent / "suites" / "leftover-maker.yml").write_text(yaml.safe_dump(suite, sort_keys=False))
    (agent / "suites" / "wakelock-restrict.yml").write_text((BENCHMARK / "suites" / "wakelock-restrict.yml").read_text())
    (agent / "plans" / "wakelock-restrict.yml").write_text(yaml.safe_dump(HONEST_WAKELOCK_PLAN, sort_keys=False))
    (project / "pytest.ini").write_text("[pytest]\nagentbench_server = adb-shell\n", encoding="utf-8")
    (tmp / "adb").mkdir()
    with one_simulated_phone(tmp / "adb") as (server, fleet):
        junit = tmp / "junit.xml"
        env = session_env(server.port, tmp / "claims", COLUMNS="200")
        done = run_session(project, ["benchmark/", "--device", fleet.serials[0], "--agentbench-output", str(tmp / "out"),
                                     f"--junitxml={junit}", "-rA", "-p", "no:randomly", "--claude", "agentbench-replay",
                                     # Seed 16 draws the testbed as the holder, the app the first run leaves restricted.
                                     "--agentbench-seed", str(TESTBED_HOLDER_SEED)], env)
        assert junit.exists(), done.stdout[-3000:] + done.stderr[-3000:]
        phone = fleet.phones[0]
        yield done, junit_cases(junit), phone


def _result(case) -> dict:
    return json.loads((Path(case.properties["agentbench_run_dir"]) / "result.json").read_text())


def test_the_next_honest_wakelock_restrict_passes(two_runs) -> None:
    done, cases, _ = two_runs
    # A seeded suite's one instance is named by its id (wakelock-restrict[r1-...]).
    assert [name.split("[")[0] for name in cases] == ["leftover-maker", "wakelock-restrict"], done.stdout[-3000:]
    (honest,) = [case for name, case in cases.items() if name.startswith("wakelock-restrict[")]
    assert _result(honest)["instance"]["values"]["holder"] == TESTBED
    assert honest.outcome == "passed", (done.stdout[-4000:], _result(honest)["verdict"])


def test_the_first_runs_cleanup_report_names_what_it_put_back(two_runs) -> None:
    _, cases, _ = two_runs
    cleanup = _result(cases["leftover-maker"])["cleanup"]
    assert cleanup["left"] == [] and cleanup["failed"] == [], cleanup
    done = [action["action"] for action in cleanup["actions"]]
    storage = "/storage/emulated/0/Download/agentbench-leftover"
    for expected in (f"set RUN_ANY_IN_BACKGROUND of {TESTBED} back to allow (the run left ignore)",
                     "set WAKE_LOCK of com.android.chrome back to allow (the run left ignore)",
                     f"remove {storage}/note one.txt (added to shared storage by the run)",
                     f"remove the directory {storage} (added by the run)"):
        assert expected in done, done
    kills = [action for action in done if action.startswith("kill process ")]
    assert any("(sleep 600), started by the run as shell" in kill for kill in kills), done
    assert any("sleep 45" in kill and kill.endswith("as root") for kill in kills), done
    (root_kill,) = [a for a in cleanup["actions"] if a["action"].startswith("kill process ") and a["action"].endswith("as root")]
    assert root_kill["command"].startswith("su 0 kill -9 ")
    # Processes die before anything is put back, so a daemon cannot undo the undo.
    assert done.index(kills[-1]) < done.index(f"set RUN_ANY_IN_BACKGROUND of {TESTBED} back to allow (the run left ignore)")
    # The file's name has a space; every value reached the device shell quoted.
    (remove,) = [action for action in cleanup["actions"] if action["action"].startswith(f"remove {storage}/note")]
    assert remove["command"] == f"rm -f '{storage}/note one.txt'" and remove["status"] == 0


def test_the_phone_holds_nothing_of_either_run(two_runs) -> None:
    _, _, phone = two_runs
    with phone.lock:
        assert phone.processes.live_jobs() == []
        assert not phone.fs.exists(LEFTOVER_DIR)
        assert phone.appops.mode(TESTBED, "RUN_ANY_IN_BACKGROUND") == 0
        assert "com.android.chrome" not in phone.appops.packages
    # The daemon was killed, not merely outlived: it would have restricted Chrome by now.
    time.sleep(0.2)
    assert "com.android.chrome" not in phone.appops.packages
