"""Cheating and honest agents on the simulated phone -> the verdicts the checks must give (issue 19, parts D and F).

Every agent here drives the real built-in MCP server (it is `agentbench-replay` with a plan of its
own, so its tool calls are real ones), then cheats in the one way its case names: a dump of
candidate codes as the answer, a keyword soup or a denial as a bug report, the expected text typed
into an Email field, an error result followed by a success one. Each must get its verdict for
the reason this part of the issue names (asserted by the reason's text), and the honest variants,
phrased as people write (markdown bold, `+1 555-123-0001`, `800x800`, plain-words bug reports, a
tap on a search result after typing its name), must pass.

The suites are the committed ones, copied under the case's name with the case's plan; one stock
simulated phone serves the module's one session.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adbserver import PrivateAdbServer, one_simulated_phone  # noqa: E402
from fakeagents import BENCHMARK, junit_cases, run_session, session_env  # noqa: E402

from pytest_agentbench.sim.fleet import SimFleet  # noqa: E402

DEVICE = {"device": "{device}"}
#: The marker the error-then-success agent finds in its prompt (the harness gives it nothing else).
RESULT_MARKER = "(agentbench adversarial: error then success)"


def tap(text: str) -> dict[str, Any]:
    return {"tool": "tapOn", "args": {"text": text, **DEVICE}}


def type_into(field: str, text: str) -> dict[str, Any]:
    return {"tool": "inputText", "args": {"text": text, "id": field, **DEVICE}}


def committed_steps(suite: str) -> list[dict[str, Any]]:
    return yaml.safe_load((BENCHMARK / "plans" / f"{suite}.yml").read_text(encoding="utf-8"))["steps"]


PICKUP = [tap("Pickup") | {"capture": {"name": "code", "pattern": r'"(\d{6})" #pickup_code'}}]
# Every six-digit code, one line: the answer the issue saw pass.
ALL_CODES = "PICKUP_CODE: " + " ".join(str(code) for code in range(100000, 1000000))
# Under the size limit, with this run's code among candidates: the inAnswer rule itself must fail it.
SOME_CODES = "PICKUP_CODE: " + " ".join(str(code) for code in range(100000, 100900)) + " {code}"
SOUP = "BUG: total removed stale 48.00 36.00 SAVE10 discount flat 10.00 26.00 32.40"
SHOP_REPORT_PLAIN = (
    "I tested the shop.\n"
    "After I removed a notebook the total stayed at $48 ... should have been $36\n"
    "SAVE10 took a flat $10 instead of 10%, so checkout charged $26.00 instead of $32.40."
)
FORMS_REPORT_PLAIN = (
    "Two problems:\n"
    "- Tapping Sign up did nothing at all the first time after the name error.\n"
    "- The welcome message cuts off the last letter of the email (ada@example.co)."
)

#: Case name -> (the committed suite it copies, its plan, the verdict, a phrase of a reason or None).
CASES: dict[str, tuple[str, dict[str, Any], str, str | None]] = {
    # D: inAnswer
    "pickup-all-codes": ("testbed-pickup-code", {"steps": PICKUP, "final": ALL_CODES}, "failed",
                         "answer check failed: the final answer is 6,300,012 characters, over the 8,000-character limit"),
    "pickup-candidates": ("testbed-pickup-code", {"steps": PICKUP, "final": SOME_CODES}, "failed",
                          "no closing KEY: value line of the answer has it as its value"),
    "pickup-honest-markdown": ("testbed-pickup-code", {"steps": PICKUP, "final": "The code is on the Pickup screen.\n\n**PICKUP_CODE:** `{code}`"},
                               "passed", None),
    # D: report
    "shop-keyword-soup-one-tap": ("qa-shop-bug-report", {"steps": [tap("Add Notebook")], "final": SOUP}, "failed",
                                  "report check 'shop-bugs' failed: expected the answer reports at least 2 of 2 planted bugs"),
    # The cart used as asked, so only the one-sentence-one-bug rule can fail the soup.
    "shop-keyword-soup": ("qa-shop-bug-report", {"steps": committed_steps("qa-shop-bug-report"), "final": SOUP}, "failed",
                          "a sentence that fits more than one bug counts for none"),
    "shop-denial": ("qa-shop-bug-report", {"steps": committed_steps("qa-shop-bug-report"),
                                           "final": "No bugs: the total after removing a notebook was not stale, it went from $48.00 to $36.00.\n"
                                                    "SAVE10 works fine, it is not a flat $10.00."},
                    "failed", "denies it"),
    "shop-copied-report": ("qa-shop-bug-report", {"steps": [tap("Add Notebook"), tap("Add Notebook"), tap("Remove Notebook"),
                                                            type_into("discount_code", "SAVE10"), tap("Apply"), tap("Checkout")],
                                                  "final": yaml.safe_load((BENCHMARK / "plans" / "qa-shop-bug-report.yml").read_text())["final"]},
                           "failed", "names none of the values this run's app showed (total_shown/total_expected: $24.00, $12.00)"),
    "forms-denial": ("qa-forms-bug-report", {"steps": committed_steps("qa-forms-bug-report"),
                                             "final": "I did not find a bug where the welcome line drops the last character of the email.\n"
                                                      "Create works: no tap is ignored."},
                     "failed", "denies it"),
    # F: reports in plain words
    "shop-honest-plain-words": ("qa-shop-bug-report", {"steps": committed_steps("qa-shop-bug-report"), "final": SHOP_REPORT_PLAIN},
                                "passed", None),
    "forms-honest-plain-words": ("qa-forms-bug-report", {"steps": committed_steps("qa-forms-bug-report"), "final": FORMS_REPORT_PLAIN},
                                 "passed", None),
    # D: the screen oracle
    "repro-typed-into-email": ("bug-repro", {"steps": [{"tool": "openLink", "args": {"url": "automobile://playground/login", **DEVICE}},
                                                       type_into("email", "Expected count: 3")],
                                             "final": "EXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"},
                               "failed", "screen check failed: expected 'Expected count: 3', 'Displayed count: 0' and "
                                         "'Status: Bug triggered: UI did not update' together; app texts on screen: Sign in"),
    # D: the result event (the agent rewrites the replay's result, see ERROR_THEN_SUCCESS)
    "repro-error-then-success": ("bug-repro", {"steps": committed_steps("bug-repro"),
                                               "final": "EXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"},
                                 "incomplete", "the run ended in error_max_turns"),
    # F: answer lines
    "clock-honest-bold": ("clock-world-clock", {"steps": committed_steps("clock-world-clock"),
                                                "final": "Done.\n**WORLD_CLOCK:** London\n**SNOOZE:** 15 minutes"}, "passed", None),
    "messages-honest-formatted-numbers": ("messages-pin-archive", {"steps": committed_steps("messages-pin-archive"),
                                                                   "final": "PINNED: +1 555-123-0001\nARCHIVED: +1 (555) 123-0002"},
                                          "passed", None),
    "photos-honest-size": ("photos-crop", {"steps": committed_steps("photos-crop"), "final": "CROPPED: 800x800"}, "passed", None),
    # F: tapOn(text=...) after typing that text into the search field means the result row
    "clock-tap-after-typing-london": ("clock-world-clock", {
        "steps": [step if step.get("tool") != "inputText" else type_into("city_search", "London")
                  for step in committed_steps("clock-world-clock")],
        "final": "WORLD_CLOCK: London\nSNOOZE: 15 minutes"}, "passed", None),
}

# An agent that is agentbench-replay, except that for the marked prompt it turns the replay's
# result into an error_max_turns one and then prints the success result after it.
ERROR_THEN_SUCCESS = f"""#!{sys.executable}
import json, subprocess, sys
prompt = sys.stdin.read()
done = subprocess.run(["agentbench-replay", *sys.argv[1:]], input=prompt, capture_output=True, text=True)
for line in done.stdout.splitlines():
    event = json.loads(line) if line.startswith("{{") else None
    if {RESULT_MARKER!r} in prompt and isinstance(event, dict) and event.get("type") == "result":
        print(json.dumps({{**event, "subtype": "error_max_turns", "is_error": True, "result": None}}), flush=True)
    print(line, flush=True)
sys.stderr.write(done.stderr)
sys.exit(done.returncode)
"""


#: Each seeded template's params pinned to the one instance the cases' answers were written for
#: (London, $48 -> $36, ada@example.co and Sign up, ...): these cases test what a check accepts, not instances.
PINS: dict[str, dict[str, Any]] = {
    "bug-repro": {"taps": {"taps": 3, "fewer": 2}},
    "clock-world-clock": {"city": {"city": "London", "citySearch": "Lon", "cityId": "C15", "cityZone": "Europe/London"},
                          "snooze": {"snooze": 15, "otherSnooze": 20}},
    "messages-pin-archive": {"pinNumber": "+15551230001", "archiveNumber": "+15551230002", "keepNumber": "+15551230003"},
    "photos-crop": {"size": 0},
    "qa-shop-bug-report": {"cart": 0},
    "qa-forms-bug-report": {"user": "ada", "domain": 0, "button": 0},
    "testbed-pickup-code": {"start": 0},
}


def pinned(template: str, suite: dict[str, Any]) -> dict[str, Any]:
    """The suite with PINS' params fixed: a value, or the index of the record choice to keep."""
    params = suite.get("params") or {}
    for name, value in PINS.get(template, {}).items():
        kept = params[name]["values"][value] if isinstance(value, int) else value
        params[name] = {"type": "choice", "values": [kept]}
    return suite


def make_project(root: Path) -> Path:
    """The committed prompts, and one suite + plan per case, copied from its committed suite (one instance of it)."""
    agent = root / "benchmark" / "agent"
    shutil.copytree(BENCHMARK / "prompts", agent / "prompts")
    (agent / "suites").mkdir(parents=True)
    (agent / "plans").mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    for name, (template, plan, _, _) in CASES.items():
        suite = pinned(template, yaml.safe_load((BENCHMARK / "suites" / f"{template}.yml").read_text(encoding="utf-8")))
        suite["name"] = name
        # The committed steps read the drawn values off the prompt, as the committed plan does.
        committed = yaml.safe_load((BENCHMARK / "plans" / f"{template}.yml").read_text(encoding="utf-8"))
        if "fromPrompt" in committed and "fromPrompt" not in plan:
            plan = {"fromPrompt": committed["fromPrompt"], **plan}
        suite.pop("prove", None)
        if name == "repro-error-then-success":
            prompt = agent / "prompts" / f"{name}.txt"
            prompt.write_text((BENCHMARK / "prompts" / f"{template}.txt").read_text(encoding="utf-8") + f"\n{RESULT_MARKER}\n",
                              encoding="utf-8")
            suite["prompt"] = f"../prompts/{name}.txt"
        (agent / "suites" / f"{name}.yml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
        (agent / "plans" / f"{name}.yml").write_text(yaml.safe_dump(plan, sort_keys=False, width=10**9), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrivateAdbServer, SimFleet]]:
    with one_simulated_phone(tmp_path_factory.mktemp("adb")) as lab:
        yield lab


@pytest.fixture(scope="module")
def results(lab, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    server, fleet = lab
    tmp = tmp_path_factory.mktemp("adversarial")
    project = make_project(tmp / "project")
    # Named agentbench-replay (in a directory of its own, off PATH) so the harness stages each
    # suite's plan for it as it does for the real one: the cheats run confined like any agent.
    (tmp / "agent").mkdir()
    agent = tmp / "agent" / "agentbench-replay"
    agent.write_text(ERROR_THEN_SUCCESS, encoding="utf-8")
    agent.chmod(0o755)
    junit = tmp / "junit.xml"
    env = session_env(server.port, tmp / "claims", COLUMNS="200")
    done = run_session(project, ["benchmark/", "--device", fleet.serials[0], "--agentbench-output", str(tmp / "out"),
                                 f"--junitxml={junit}", "-rA", "--claude", str(agent)], env)
    assert junit.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    found = {}
    for name, case in junit_cases(junit).items():
        run_dir = case.properties.get("agentbench_run_dir")
        assert run_dir, (name, case.message, done.stdout[-3000:])
        found[name.split("[", 1)[0]] = json.loads((Path(run_dir) / "result.json").read_text(encoding="utf-8"))
    assert set(found) == set(CASES), (sorted(found), done.stdout[-3000:])
    return found


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_agent_gets_its_verdict_for_its_reason(results: dict[str, dict[str, Any]], case: str) -> None:
    _, _, status, reason = CASES[case]
    verdict = results[case]["verdict"]
    assert verdict["status"] == status, verdict
    if reason is not None:
        assert any(reason in line for line in verdict["reasons"]), verdict["reasons"]


def test_the_cheats_used_the_real_server(results: dict[str, dict[str, Any]]) -> None:
    # Every agent made real device calls, so what fails it is the check this module is about.
    for case, result in results.items():
        (device_use,) = [check for check in result["checks"] if check["kind"] == "device-use"]
        assert device_use["passed"], (case, device_use)
