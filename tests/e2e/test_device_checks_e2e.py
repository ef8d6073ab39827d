"""Device checks end to end: pytest sessions on a simulated phone with the Checks Lab -> verdicts, saved reads, re-audits, cleanup.

The phone runs in this process (SimFleet behind a private real adb server), so the tests can read
its sources directly before and after a session; each session is `pytest --device SERIAL` in a
project of its own, with the replay agent.
"""

from __future__ import annotations

import re

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from adbserver import PrivateAdbServer, one_simulated_phone
from checklab import FIVE_CHECKS, LAB, PASS_STEPS, lab_phone, lab_suite, phone_sources, tap, write_project
from fakeagents import HARNESS_K, REPO, junit_cases, run_session, session_env

from pytest_agentbench.sim.fleet import SimFleet


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrivateAdbServer, SimFleet]]:
    """One Checks Lab phone behind a private adb server for the module's sessions."""
    with one_simulated_phone(tmp_path_factory.mktemp("adb"), lab_phone) as lab:
        yield lab


def session(lab, project: Path, tmp: Path, *args: str):
    server, fleet = lab
    tmp.mkdir(parents=True, exist_ok=True)
    junit = tmp / f"junit-{len(list(tmp.glob('junit-*')))}.xml"
    env = session_env(server.port, tmp / "claims", COLUMNS="200")
    done = run_session(project, ["benchmark/", "--device", fleet.serials[0], "--agentbench-output", str(tmp / "out"),
                                 f"--junitxml={junit}", "-rA", *args], env)
    assert junit.exists(), done.stdout + done.stderr
    return done, junit_cases(junit)


PLAN_ALL = {"steps": [{**step, "args": {**step["args"], "device": "{device}"}} for step in PASS_STEPS], "final": "LAB: done"}
PLAN_CONTACT_ONLY = {"steps": [{**tap("Save contact"), "args": {"text": "Save contact", "device": "{device}"}}], "final": "LAB: done"}


@pytest.fixture(scope="module")
def runs(lab, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("runs")
    phone = lab[1].phones[0]
    before = phone_sources(phone)
    project = write_project(tmp / "project", {"lab-five": lab_suite("lab-five"), "lab-missed": lab_suite("lab-missed")},
                            {"lab-five": PLAN_ALL, "lab-missed": PLAN_CONTACT_ONLY})
    done, cases = session(lab, project, tmp, "--claude", "agentbench-replay")
    return done, cases, before, phone_sources(phone), project, tmp


def result_of(case) -> dict:
    return json.loads((Path(case.properties["agentbench_run_dir"]) / "result.json").read_text())


def test_five_device_checks_pass_a_run_that_did_the_job_and_fail_one_that_did_not(runs) -> None:
    done, cases, *_ = runs
    assert cases["lab-five"].outcome == "passed", done.stdout[-4000:]
    result = result_of(cases["lab-five"])
    device = {check["name"]: check for check in result["checks"] if check["kind"] not in ("answer", "device-use", "transcript")}
    assert set(device) == {check["name"] for check in FIVE_CHECKS} and all(c["passed"] for c in device.values())
    assert device["cropped"]["seen"] == 'added: ["crop.png 800x800"]'
    # JUnit shows each device check with what was expected and what was seen.
    assert cases["lab-five"].properties["agentbench_check_pinned-alice"].startswith('passed: expected exactly the rows [["Alice"]]')
    missed = result_of(cases["lab-missed"])
    assert cases["lab-missed"].outcome == "failure" and missed["verdict"]["status"] == "failed"
    reasons = missed["verdict"]["reasons"]
    assert [reason.split(" failed:")[0] for reason in reasons] == [
        "jsonFile check 'secure-connections'", "sqlite check 'pinned-alice'", "appops check 'restricted'", "media check 'cropped'"]
    assert "does not exist" in reasons[0] and "jsonFile check 'secure-connections' failed" in cases["lab-missed"].message


def test_the_reads_are_saved_in_the_run_directory_and_cleanup_leaves_the_phone_as_it_found_it(runs) -> None:
    done, cases, before, after, *_ = runs
    run_dir = Path(cases["lab-five"].properties["agentbench_run_dir"])
    for name in ("device-before.json", "device-after.json", "device-cleanup.json", "cleanup.log"):
        assert (run_dir / name).is_file(), name
    saved = json.loads((run_dir / "device-after.json").read_text())
    database = saved["reads"][f"b64:/data/data/{LAB}/databases/lab.db"]
    assert (run_dir / database["file"]).is_file() and database["file"].startswith("device-state/after/")
    result = result_of(cases["lab-five"])
    assert result["auditInputs"]["deviceState"] == {"before": "device-before.json", "after": "device-after.json", "unavailableReason": None}
    # Contact, image row, app-op, and the image's file on shared storage (already gone with its row: `rm -f` says nothing).
    assert result["cleanup"]["left"] == [] and len(result["cleanup"]["actions"]) == 4, result["cleanup"]["actions"]
    assert [a["command"] for a in result["cleanup"]["actions"]][-1] == "rm -f /storage/emulated/0/Pictures/crop.png"
    assert after == before, "the session left the phone changed"
    report = (run_dir / "result.json").read_text()
    assert "cleanup left" not in report


def test_a_saved_run_re_audits_to_the_same_verdict_from_its_saved_reads(runs, lab) -> None:
    done, cases, _, _, project, tmp = runs
    for name in ("lab-five", "lab-missed"):
        original = result_of(cases[name])
        again, rerendered = session(lab, project, tmp, "--agentbench-from-result", cases[name].properties["agentbench_run_dir"])
        (case,) = rerendered.values()
        result = json.loads(Path(case.properties["agentbench_result_json"]).read_text())
        assert result["verdict"] == original["verdict"], again.stdout[-3000:]
        assert [c["seen"] for c in result["checks"]] == [c["seen"] for c in original["checks"]]


# ----------------------------------------------------------------------------- --agentbench-prove

ANY_IMAGE = {"kind": "content", "name": "beach-listed", "uri": "content://media/external/images/media",
             "projection": ["_display_name"], "match": {"_display_name": "beach.png"}}


@pytest.fixture(scope="module")
def proofs(lab, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("prove")
    phone = lab[1].phones[0]
    before = phone_sources(phone)
    suites = {
        "lab-proven": lab_suite("lab-proven"),
        # The seeded photo is listed before anything happens: this check passes on the fresh state.
        "lab-fresh-passes": lab_suite("lab-fresh-passes", verify={"answerIncludes": ["LAB: done"], "device": [FIVE_CHECKS[0], ANY_IMAGE]},
                                      prove={"pass": {"steps": [tap("Save contact")], "answer": "LAB: done"}}),
        # Its fail scenario does the whole job, so the check it names cannot fail.
        "lab-fail-passes": lab_suite("lab-fail-passes", prove={
            "pass": {"steps": PASS_STEPS, "answer": "LAB: done"},
            "fail": [{"name": "all-done", "check": "secure-connections", "reasonIncludes": "does not exist",
                      "answer": "LAB: done", "steps": PASS_STEPS}]}),
        # No prove: block: the fresh state is still proven, the pass state is skipped with the reason.
        "lab-unproven": {key: value for key, value in lab_suite("lab-unproven").items() if key != "prove"},
    }
    project = write_project(tmp / "project", suites)
    done, cases = session(lab, project, tmp, "--agentbench-prove")
    return done, cases, before, phone_sources(phone), project, tmp


def test_prove_items_pass_on_a_correct_suite(proofs) -> None:
    done, cases, *_ = proofs
    proven = {name: case.outcome for name, case in cases.items() if name.startswith("lab-proven")}
    assert proven == {"lab-proven[prove-pass]": "passed", "lab-proven[prove-fail-no-pin]": "passed",
                      "lab-proven[prove-fresh]": "passed"}, done.stdout[-4000:]
    run_dir = Path(cases["lab-proven[prove-fail-no-pin]"].properties["agentbench_run_dir"])
    proof = json.loads((run_dir / "prove.json").read_text())
    assert proof["passed"] and "fails exactly 'pinned-alice'" in proof["reason"] and "returned 0 rows" in proof["reason"]
    assert [step["step"] for step in proof["steps"]][:2] == ["tapOn(text='Save contact')", "tapOn(text='Secure on')"]


def test_a_suite_without_a_prove_block_is_proven_fresh_and_its_pass_state_skipped_with_the_reason(proofs) -> None:
    done, cases, *_ = proofs
    unproven = {name: case for name, case in cases.items() if name.startswith("lab-unproven")}
    assert {name: case.outcome for name, case in unproven.items()} == {
        "lab-unproven[prove-pass]": "skipped", "lab-unproven[prove-fresh]": "passed"}, done.stdout[-4000:]
    assert "lab-unproven has no prove: block" in unproven["lab-unproven[prove-pass]"].message


def test_prove_fails_the_item_whose_check_passes_on_the_fresh_state_and_says_which(proofs) -> None:
    done, cases, *_ = proofs
    fresh = cases["lab-fresh-passes[prove-fresh]"]
    assert fresh.outcome == "failure"
    assert "the suite passes with no action" in fresh.message and "beach-listed passes" in fresh.message
    assert cases["lab-fresh-passes[prove-pass]"].outcome == "passed"


def test_prove_fails_the_item_whose_fail_scenario_passes_and_says_which(proofs) -> None:
    done, cases, *_ = proofs
    failing = cases["lab-fail-passes[prove-fail-all-done]"]
    assert failing.outcome == "failure"
    assert "the fail scenario 'all-done' passes every check: 'secure-connections' does not catch it" in failing.message


def test_the_summary_counts_proofs_not_runs_and_says_in_a_sentence_why_each_is_not_proven(proofs) -> None:
    # Issue 33: a proof that failed read `1 incomplete ... no result: call:` as if a run had lost its result.
    done, *_ = proofs
    summary = done.stdout[done.stdout.index("= agentbench ="):]
    assert "10 proofs of 4 suites: 7 proven, 2 not proven, 1 skipped (-rs says why)" in summary, summary
    shown = " ".join(summary.split())
    assert "lab-fresh-passes[prove-fresh]: the suite passes with no action: on the fresh state" in shown, summary
    assert "lab-fail-passes[prove-fail-all-done]: the fail scenario 'all-done' passes every check" in shown, summary
    assert "no result" not in summary and "incomplete" not in summary and "runs of" not in summary


def test_prove_items_clean_up_after_themselves(proofs) -> None:
    done, cases, before, after, *_ = proofs
    assert after == before


def test_a_proof_whose_cleanup_leaves_the_phone_changed_fails_and_says_what_is_left(lab, tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    phone = lab[1].phones[0]
    # The contacts provider refuses to forget (the phone runs in this process): cleanup's delete
    # runs, the contact the pass scenario saved stays.
    provider = phone.providers["com.android.contacts"]
    real_delete = provider.delete
    monkeypatch.setattr(provider, "delete", lambda *args, **kwargs: 0)
    project = write_project(tmp_path / "project", {"lab-sticky": lab_suite("lab-sticky")})
    try:
        done, cases = session(lab, project, tmp_path, "--agentbench-prove", "-k", "prove-pass")
    finally:
        # Put the phone back for the module's other sessions.
        monkeypatch.setattr(provider, "delete", real_delete)
        for row in phone.content_query("content://com.android.contacts/raw_contacts", ["_id"]):
            phone.content_delete("content://com.android.contacts/raw_contacts", f"_id={row['_id']}")
    item = cases["lab-sticky[prove-pass]"]
    assert item.outcome == "failure", done.stdout[-4000:]
    assert "passes all 6 checks, but cleanup did not put the phone back: contacts: rows _id=" in item.message
    proof = json.loads((Path(item.properties["agentbench_run_dir"]) / "prove.json").read_text())
    assert not proof["passed"] and proof["cleanup"]["left"]


def test_prove_items_are_selectable_with_k(proofs, lab) -> None:
    done, cases, _, _, project, tmp = proofs
    again, selected = session(lab, project, tmp, "--agentbench-prove", "-k", "prove-fresh and lab-proven")
    assert list(selected) == ["lab-proven[prove-fresh]"] and selected["lab-proven[prove-fresh]"].outcome == "passed"


# ----------------------------------------------------------------------------- noShell and the adb-shell server

WIFI_SETTING = {"kind": "content", "name": "wifi-setting", "uri": "content://settings/global", "projection": ["name", "value"],
                "where": "name='wifi_on'", "match": {"value": "1"}}


def shell_suite(name: str, no_shell: bool) -> dict:
    return {"name": name, "platform": "android", "prompt": "../prompts/lab.txt",
            "app": {"packageName": "com.android.settings"}, "preflight": {"clearAppData": False, "settleSeconds": 0},
            "claude": {"timeoutSeconds": 120},
            "verify": {"answerIncludes": ["WIFI: on"], "device": [WIFI_SETTING], "noShell": no_shell},
            "cleanup": [{"restoreSetting": {"namespace": "global", "key": "wifi_on"}}]}


SHELL_PLAN = {"steps": [{"tool": "shell", "args": {"command": "settings put global wifi_on 1"}}], "final": "WIFI: on"}


def test_a_replay_through_the_adb_shell_server_fails_a_no_shell_suite_and_passes_one_without(lab, tmp_path: Path) -> None:
    phone = lab[1].phones[0]
    before = phone_sources(phone)
    project = write_project(tmp_path / "project", {"wifi-shell": shell_suite("wifi-shell", False),
                                                   "wifi-shell-noshell": shell_suite("wifi-shell-noshell", True)},
                            {"wifi-shell": SHELL_PLAN, "wifi-shell-noshell": SHELL_PLAN}, ini="agentbench_server = adb-shell\n")
    done, cases = session(lab, project, tmp_path, "--claude", "agentbench-replay")
    assert cases["wifi-shell"].outcome == "passed", done.stdout[-4000:]
    assert cases["wifi-shell-noshell"].outcome == "failure"
    result = result_of(cases["wifi-shell-noshell"])
    assert result["verdict"]["reasons"] == [
        'shell use (verify.noShell): the run called mcp__adb-shell__shell({"command": "settings put global wifi_on 1"}) (ok)']
    assert result["auditInputs"]["shellTools"] == ["mcp__adb-shell__shell"]
    assert phone_sources(phone) == before  # each run put Wi-Fi back


# ----------------------------------------------------------------------------- the committed suites on one phone


def test_wifi_on_passes_twice_in_a_row_on_one_phone_because_cleanup_puts_wi_fi_back(lab, tmp_path: Path) -> None:
    phone = lab[1].phones[0]
    assert phone.settings["global"]["wifi_on"] == "0"
    for attempt in (1, 2):
        done, cases = session(lab, REPO, tmp_path / f"run{attempt}", "--claude", "agentbench-replay", "-k", "wifi_on")
        assert {name: case.outcome for name, case in cases.items()} == {"wifi-on": "passed"}, done.stdout[-3000:]
        assert result_of(cases["wifi-on"])["cleanup"]["actions"][0]["action"] == "put setting global wifi_on back to 0"
        assert phone.settings["global"]["wifi_on"] == "0"


def test_the_harness_suites_prove_on_the_simulated_phone(lab, tmp_path: Path) -> None:
    # The core jobs' proofs run on a stock phone in test_jobs_e2e.py.
    done, cases = session(lab, REPO, tmp_path, "--agentbench-prove", "-k", HARNESS_K)
    # One instance each: a seeded suite's `bug-repro[r1-4-5-prove-pass]` is read as `bug-repro[prove-pass]`.
    outcomes = {re.sub(r"\[r1-[^\]]*?-(prove-)", r"[\1", name): case.outcome for name, case in cases.items()}
    assert outcomes == {
        "bug-repro[prove-pass]": "passed", "bug-repro[prove-fail-one-tap-short]": "passed",
        "bug-repro[prove-fail-count-read-wrong]": "passed", "bug-repro[prove-fail-typed-into-email]": "passed",
        "bug-repro[prove-fail-bug-left-off]": "passed", "bug-repro[prove-fail-bug-on-for-the-last-tap]": "passed",
        "bug-repro[prove-fresh]": "passed",
        "ux-flow[prove-pass]": "passed", "ux-flow[prove-fail-stopped-on-details]": "passed",
        "ux-flow[prove-fail-answer-without-status]": "passed", "ux-flow[prove-fresh]": "passed",
        "wifi-on[prove-pass]": "passed", "wifi-on[prove-fail-answer-without-switch]": "passed", "wifi-on[prove-fresh]": "passed",
    }, done.stdout[-4000:]
