"""Bug reports that a soup, a denial or a copy writes -> the qa suites' report checks fail them; honest reports pass (issue 28 E).

Three classes passed the report check of the qa suites: a keyword soup split into fragments (the
splitter made each fragment a sentence, one per bug), the same soup written twice, and denials by
negation ("did not delete the task below it", "was not stale", "never wrong"); and only qa-shop's
stale total asked for a value this run's app showed, so forms and tasks reports copied from
another run passed. Now a sentence that fits two bugs counts for none, a repeated sentence counts
once, a negation of the bug's own words denies it, and every planted bug's sentence must name a
value this run's app logged.

Every agent here uses the app as the prompt asks, through the real built-in MCP server on the
simulated phone (it is `agentbench-replay` with its own plan), and only its report differs. The
values the cheats name (the button, the truncated email, the deleted task, the totals) are the ones
this run's app showed, read off the screen, so each cheat fails for its class's reason and not
for a missing value. The honest reports, in plain words, pass.
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


def tap(text: str, **capture: str) -> dict[str, Any]:
    return _step("tapOn", {"text": text}, capture)


def type_into(field: str, text: str) -> dict[str, Any]:
    return _step("inputText", {"text": text, "id": field}, {})


def look(**capture: str) -> dict[str, Any]:
    return _step("observe", {}, capture)


def _step(tool: str, args: dict[str, Any], capture: dict[str, str]) -> dict[str, Any]:
    step: dict[str, Any] = {"tool": tool, "args": {**args, **DEVICE}}
    if capture:
        (name, pattern), = capture.items()
        step["capture"] = {"name": name, "pattern": pattern}
    return step


# The prompts' steps, done as the prompt asks; what the app showed is captured off the screen.
FORMS = {
    "fromPrompt": {"email": r"the email (\S+@\S+) and", "password": r"the password (\S+),",
                   "fullName": r"fill in the name (.+?) and create"},
    "steps": [look(button=r'Button "([^"]+)"'), type_into("email", "{email}"), type_into("password", "{password}"),
              tap("{button}"), tap("{button}"), type_into("name", "{fullName}"), tap("{button}", welcome=r"Welcome, (\S+)!")],
}
TASKS = {
    "fromPrompt": [{"name": "t2", "pattern": r'Delete the task "([^"]+)" by swiping'},
                   {"name": "t1", "pattern": r'open the task "([^"]+)"'}],
    "steps": [look(below=r'"[^"]+" "To do" @\d+,664\n\d+ LinearLayout "([^"]+)"'),
              _step("swipeOn", {"fromX": 900, "fromY": 664, "toX": 150, "toY": 664}, {}),
              look(count=r"Tasks \((\d+)\)"), tap("{t1}"), tap("Delete task"), look()],
}
SHOP = {
    "fromPrompt": {"item": r"1\. Add (\w+) to the cart", "count": r"to the cart (\d+) times"},
    "steps": [look(), {**tap("Add {item}"), "times": "{count}"}, tap("Remove {item}", stale=r"Total: \$(\d+\.\d\d)"),
              type_into("discount_code", "SAVE10"), tap("Apply"), tap("Checkout", charged=r"Charged: \$(\d+\.\d\d)")],
}
USE = {"qa-forms-bug-report": FORMS, "qa-tasks-bug-report": TASKS, "qa-shop-bug-report": SHOP}

#: Case name -> (the committed suite it copies, its report, the verdict, a phrase of a reason or None).
CASES: dict[str, tuple[str, str, str, str | None]] = {
    # The soup: the splitter makes each fragment a sentence, one fragment per bug.
    "forms-fragment-soup": ("qa-forms-bug-report", "welcome email last character. create ignored.", "failed",
                            "names none of the values this run's app showed"),
    "tasks-fragment-soup": ("qa-tasks-bug-report", "swipe deleted wrong task. heading count stale.", "failed",
                            "names none of the values this run's app showed"),
    # The same soup twice: each copy fits both bugs, so neither counts (nor does the repeat).
    "forms-doubled-soup": ("qa-forms-bug-report", "welcome email truncated last character create tap ignored twice\n"
                                                  "welcome email truncated last character create tap ignored twice", "failed",
                           "a sentence that fits more than one bug counts for none"),
    "tasks-doubled-soup": ("qa-tasks-bug-report", "BUG: swipe deleted wrong task count still unchanged\n"
                                                  "BUG: swipe deleted wrong task count still unchanged", "failed",
                           "a sentence that fits more than one bug counts for none"),
    "shop-doubled-soup": ("qa-shop-bug-report", "total removed stale {stale} SAVE10 discount flat {charged}\n"
                                                "total removed stale {stale} SAVE10 discount flat {charged}", "failed",
                          "a sentence that fits more than one bug counts for none"),
    # Denials by negating the bug's own words, with this run's values in them.
    "forms-negation": ("qa-forms-bug-report", "The welcome line did not drop the last character of the email {welcome}.\n"
                                              "The tap on {button} after the error was not ignored.", "failed",
                       "denies it ('did not drop"),
    "tasks-negation": ("qa-tasks-bug-report", 'Swiping "{t2}" did not delete "{below}", the task below it.\n'
                                              "The heading count of {count} was never stale.", "failed",
                       "denies it ('did not delete'"),
    "shop-negation": ("qa-shop-bug-report", "After removing one {item} the total of ${stale} was not stale.\n"
                                            "SAVE10 charged ${charged}; the discount was never flat.", "failed",
                      "denies it ('was not stale'"),
    # Reports copied from another run: its button and email, its deleted task, its discount numbers.
    "forms-copied-report": ("qa-forms-bug-report",
                            "BUG: After a rejected submit (no name), the next tap on Create is ignored: nothing happens until you tap again.\n"
                            'BUG: The welcome line drops the last character of the email: it says "Welcome, tester@example.co!" for tester@example.com.',
                            "failed", "names none of the values this run's app showed (welcome_email:"),
    "tasks-copied-report": ("qa-tasks-bug-report",
                            'BUG: Swiping "{t2}" sideways deleted "Fix the bike", the task below it, instead of "{t2}".\n'
                            "BUG: After the swipe the heading still said Tasks ({count}) with one task gone; it was not updated until the button delete.",
                            "failed", "names none of the values this run's app showed (deleted:"),
    "shop-copied-report": ("qa-shop-bug-report",
                           "BUG: After removing one {item} the total stayed at ${stale}. It should have dropped by the price of one {item}.\n"
                           "BUG: SAVE10 promises 10% off but takes a flat $10.00: I was charged $14.00 instead of $21.60.",
                           "failed", "names none of the values this run's app showed (total_shown/total_expected/charged/expected:"),
    # Honest reports in plain words.
    "forms-honest": ("qa-forms-bug-report", "Two problems:\n- Tapping {button} did nothing at all the first time after the name error.\n"
                                            "- The welcome message cuts off the last letter of the email ({welcome}).", "passed", None),
    "tasks-honest": ("qa-tasks-bug-report", "Two bugs in the Tasks list:\n1. Swiping {t2} removed {below} (the row under it) and {t2} stayed.\n"
                                            "2. The heading kept saying Tasks ({count}) after the swipe; deleting {t1} with the button fixed the count.",
                     "passed", None),
    "shop-honest": ("qa-shop-bug-report", "I tested the shop.\n1. After I removed one {item} the total still showed ${stale}, the old total.\n"
                                          "2. SAVE10 took a flat $10 instead of 10%, so checkout charged ${charged}.", "passed", None),
}

#: Params pinned for a case: the copied tasks report names another instance's third task, so this run's is fixed.
PINS: dict[str, dict[str, Any]] = {
    "tasks-copied-report": {"t3": {"t3": "Book flights", "otherT3": "Fix the bike"}},
}


def make_project(root: Path) -> Path:
    """The committed prompts, and one suite + plan per case, copied from its committed suite."""
    agent = root / "benchmark" / "agent"
    shutil.copytree(BENCHMARK / "prompts", agent / "prompts")
    (agent / "suites").mkdir(parents=True)
    (agent / "plans").mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    for name, (template, answer, _, _) in CASES.items():
        suite = yaml.safe_load((BENCHMARK / "suites" / f"{template}.yml").read_text(encoding="utf-8"))
        suite["name"] = name
        suite.pop("prove", None)
        for param, value in PINS.get(name, {}).items():
            suite["params"][param] = {"type": "choice", "values": [value]}
        (agent / "suites" / f"{name}.yml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
        plan = {**USE[template], "final": answer}
        (agent / "plans" / f"{name}.yml").write_text(yaml.safe_dump(plan, sort_keys=False, width=10**9), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrivateAdbServer, SimFleet]]:
    with one_simulated_phone(tmp_path_factory.mktemp("adb")) as lab:
        yield lab


@pytest.fixture(scope="module")
def results(lab, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    server, fleet = lab
    tmp = tmp_path_factory.mktemp("soups")
    project = make_project(tmp / "project")
    junit = tmp / "junit.xml"
    env = session_env(server.port, tmp / "claims", COLUMNS="200")
    done = run_session(project, ["benchmark/", "--device", fleet.serials[0], "--agentbench-output", str(tmp / "out"),
                                 f"--junitxml={junit}", "-rA", "--claude", "agentbench-replay"], env)
    assert junit.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    found = {}
    for name, case in junit_cases(junit).items():
        run_dir = case.properties.get("agentbench_run_dir")
        assert run_dir, (name, case.message, done.stdout[-3000:])
        found[name.split("[", 1)[0]] = json.loads((Path(run_dir) / "result.json").read_text(encoding="utf-8"))
    assert set(found) == set(CASES), (sorted(found), done.stdout[-3000:])
    return found


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_report_gets_its_verdict_for_its_reason(results: dict[str, dict[str, Any]], case: str) -> None:
    _, _, status, reason = CASES[case]
    verdict = results[case]["verdict"]
    assert verdict["status"] == status, verdict
    if reason is not None:
        assert any(reason in line for line in verdict["reasons"]), verdict["reasons"]


def test_only_the_report_check_fails_a_cheat(results: dict[str, dict[str, Any]]) -> None:
    # The app was used as asked: the event log check and the device use pass, so the report alone decides.
    for case, result in results.items():
        failed = {check.get("name") or check["kind"] for check in result["checks"] if not check["passed"]}
        assert failed <= {"forms-bugs", "tasks-bugs", "shop-bugs"}, (case, failed)
