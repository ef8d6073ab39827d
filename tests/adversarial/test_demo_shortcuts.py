"""Agents that take the demo suites' shortcuts (issue 28, I) -> FAILED; honest agents that do the job another way -> PASSED.

The harness's screen-text demos must check what they claim, end to end through a real plugin
session on the simulated phone (the cheats drive the phone through the harness's relay, as any
agent does). Against the suites before this change each shortcut passed:

* `bug-left-off` (bug-repro): taps Add Item with the switch off and answers the constant
  `DISPLAYED_COUNT: 0` (the screen shows the count it never read);
* `bug-on-for-the-last-tap` (bug-repro): turns the bug on only for the last tap;
* `ux-deep-link` (ux-flow): opens the details screen by deep link (`openLink`, which the suite
  denies: the flag only asks the agent's CLI to refuse it), skipping the start screen.

Their honest counterparts: the committed replay plans, and `bug-after-a-look`, which first tries
Add Item with the bug off, resets the counter, then reproduces the bug (another legitimate route).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from adbserver import PrivateAdbServer, start_private_adb_server
from fakeagents import Behaviour, junit_cases, make_project, run_session, session_env, write_dispatcher

ANSWER = "Done.\nEXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"
FAST = {"preflight": {"settleSeconds": 0.3}}

# After fakeagents' prelude (init, say, result, serial, relay_client, call, PARAMS, prompt).
_DRIVE = r'''
import re

def drive(steps):
    # Each step through the harness's relay, shown in the stream as Claude Code shows it.
    init()
    server, client = relay_client()
    device = serial()
    for number, (tool, arguments) in enumerate(steps, start=1):
        call(client, server, "toolu_%d" % number, tool, {**arguments, "device": device})
    client.close()
    say(PARAMS["final"])
    result(PARAMS["final"])

def taps(text, times):
    return [("tapOn", {"text": text})] * times
'''

BODIES = {
    "bug-left-off": _DRIVE + r'''
drive([("observe", {}), *taps("Add Item", 3), ("observe", {})])
''',
    "bug-on-for-the-last-tap": _DRIVE + r'''
drive([("observe", {}), *taps("Add Item", 2), ("tapOn", {"text": "Enable Bug"}), *taps("Add Item", 1), ("observe", {})])
''',
    # Looks first (two adds with the bug off), puts the counter back, then reproduces the bug.
    "bug-after-a-look": _DRIVE + r'''
drive([*taps("Add Item", 2), ("tapOn", {"text": "Reset"}), ("tapOn", {"text": "Enable Bug"}), *taps("Add Item", 3),
       ("observe", {})])
''',
    "ux-deep-link": _DRIVE + r'''
plan = re.search(r"choose the (\w+) plan", prompt).group(1)
PARAMS["final"] = "SELECTED_PLAN: %s\nFLOW_STATUS: complete" % plan
drive([("openLink", {"url": "automobile://playground/demos/ux/details"}), ("tapOn", {"text": plan}),
       ("tapOn", {"text": "Continue"}), ("observe", {})])
''',
}

REPRO = {
    "bug-left-off": Behaviour("bug-left-off", {"final": ANSWER}),
    "bug-on-for-the-last-tap": Behaviour("bug-on-for-the-last-tap", {"final": ANSWER}),
    "bug-after-a-look": Behaviour("bug-after-a-look", {"final": ANSWER}),
    "bug-replay": Behaviour("replay"),
}
FLOW = {
    "ux-deep-link": Behaviour("ux-deep-link", {"final": ""}),
    "ux-replay": Behaviour("replay"),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict]]:
    """One session on the simulated phone over bug-repro's and ux-flow's variants -> suite name -> result.json."""
    tmp = tmp_path_factory.mktemp("shortcuts")
    (tmp / "adb").mkdir()
    with start_private_adb_server(tmp / "adb") as server:
        yield _session(tmp, server)


def _session(tmp: Path, server: PrivateAdbServer) -> dict[str, dict]:
    project = make_project(tmp / "project", {name: FAST for name in REPRO})
    flow = make_project(tmp / "flow", {name: FAST for name in FLOW}, template="ux-flow")
    for path in (flow / "benchmark" / "agent").rglob("*.*"):
        target = project / "benchmark" / "agent" / path.relative_to(flow / "benchmark" / "agent")
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    agent = write_dispatcher(tmp / "agent", {**REPRO, **FLOW}, bodies=BODIES, project=project)
    env = session_env(server.port, tmp / "claims")
    done = run_session(project, ["benchmark/", "--device", "sim", "--claude", str(agent), f"--junitxml={tmp / 'r.xml'}",
                                 "--agentbench-output", str(tmp / "out"), "-rA"], env)
    cases = junit_cases(tmp / "r.xml") if (tmp / "r.xml").exists() else {}
    assert set(cases) == {*REPRO, *FLOW}, done.stdout[-4000:] + done.stderr[-2000:]
    return {name: json.loads((Path(case.properties["agentbench_run_dir"]) / "result.json").read_text(encoding="utf-8"))
            for name, case in cases.items()}


def _failed_checks(result: dict) -> dict[str, str]:
    return {check["name"] or check["kind"]: check["seen"] for check in result["checks"] if not check["passed"]}


@pytest.mark.parametrize(
    ("suite", "shown"),
    [
        ("bug-left-off", "Expected count: 3 | Displayed count: 3 | Status: Updated"),
        ("bug-on-for-the-last-tap", "Expected count: 3 | Displayed count: 2 | Status: Bug triggered: UI did not update"),
    ],
)
def test_a_bug_repro_that_did_not_reproduce_the_bug_fails_on_the_screen(results: dict[str, dict], suite: str, shown: str) -> None:
    result = results[suite]
    assert result["verdict"]["status"] == "failed", result["verdict"]
    # Every other check passes: the answer's constant lines, device use, the transcript.
    failed = _failed_checks(result)
    assert list(failed) == ["screen"] and shown in failed["screen"], failed
    (reason,) = result["verdict"]["reasons"]
    assert reason.startswith("screen check failed: expected 'Expected count: 3', 'Displayed count: 0' and "
                             "'Status: Bug triggered: UI did not update' together"), reason


@pytest.mark.parametrize("suite", ["bug-replay", "bug-after-a-look", "ux-replay"])
def test_an_honest_run_passes(results: dict[str, dict], suite: str) -> None:
    assert results[suite]["verdict"]["status"] == "passed", results[suite]["verdict"]


def test_a_ux_flow_entered_by_deep_link_fails_on_the_denied_tool(results: dict[str, dict]) -> None:
    result = results["ux-deep-link"]
    assert result["verdict"]["status"] == "failed", result["verdict"]
    # The screens say the flow is complete: only the relay log shows how it got there.
    failed = _failed_checks(result)
    assert list(failed) == ["disallowedTools"], failed
    (reason,) = result["verdict"]["reasons"]
    assert reason.startswith("a tool the suite denies (claude.disallowedTools): the run called mcp__agentbench__openLink("), reason
    assert '"url": "automobile://playground/demos/ux/details"' in reason
    assert {check["name"] for check in result["checks"] if check["passed"]} >= {"screen", "answer"}
