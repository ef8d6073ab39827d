"""The real formats the simulated phone can print, end to end through the plugin: a Magisk-style su, Android 13's
`custom_bedtime` night mode and a Contacts screen whose first dumps say "could not get idle state".

One session of the plugin on one such phone runs the committed jobs that need root (seeds, private
storage, bugle_db) and the one that ends in Contacts, with the replay agent: each passes, because
the harness detected `su -c` once and wrote every root command in it, recorded the night mode and
the su form in the device fingerprint, recorded Contacts' build with the testbed's, and dumped the
busy screen again.
"""

from __future__ import annotations

import re

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from adbserver import one_simulated_phone
from fakeagents import BENCHMARK, REPO, junit_cases, run_session, session_env

from pytest_agentbench.sim.phone import Phone

pytestmark = pytest.mark.e2e

SUITES = ("messages-pin-archive", "testbed-pickup-code", "log-code-to-contact")


def _phone(index: int) -> Phone:
    return Phone(serial_hint=f"sim{index}", su_variant="magisk", busy_screen_dumps={"com.android.contacts": 2},
                 settings={"secure": {"ui_night_mode": "3", "ui_night_mode_custom_type": "1"}})


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, object]]:
    log_dir = tmp_path_factory.mktemp("real-formats-adb")
    with one_simulated_phone(log_dir, phone_factory=_phone) as lab:
        yield lab


def _run(lab, tmp: Path, *args: str):
    server, fleet = lab
    junit = tmp / "junit.xml"
    env = session_env(server.port, tmp / "claims", COLUMNS="200")
    suites = [str((BENCHMARK / "suites" / f"{name}.yml").relative_to(REPO)) for name in SUITES]
    done = run_session(REPO, [*suites, "--device", fleet.serials[0], "--agentbench-output", str(tmp / "out"),
                              f"--junitxml={junit}", "-rA", *args], env)
    assert junit.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    # One instance per suite: a seeded suite's `name[r1-<id>]` (or `name[r1-<id>-prove-pass]`) read as `name` (`name[prove-pass]`).
    cases = {_one_instance_key(name): case for name, case in junit_cases(junit).items()}
    return done, cases, fleet.phones[0]


def _one_instance_key(name: str) -> str:
    if "prove-" in name:
        return re.sub(r"\[r1-.*?(prove-[^\]]+)\]$", r"[\1]", name)
    return re.sub(r"\[r1-[^\]]*\]$", "", name)


@pytest.fixture(scope="module")
def session(lab, tmp_path_factory: pytest.TempPathFactory):
    return _run(lab, tmp_path_factory.mktemp("real-formats"), "--claude", "agentbench-replay")


@pytest.fixture(scope="module")
def proofs(lab, session, tmp_path_factory: pytest.TempPathFactory):
    return _run(lab, tmp_path_factory.mktemp("real-formats-prove"), "--agentbench-prove")


def _result(case) -> dict:
    return json.loads((Path(case.properties["agentbench_run_dir"]) / "result.json").read_text())


def test_the_root_jobs_pass_on_a_su_that_only_takes_dash_c(session) -> None:
    done, cases, phone = session
    assert {name: case.outcome for name, case in cases.items()} == {name: "passed" for name in SUITES}, done.stdout[-5000:]
    # As written, the harness's `su 0 CMD` does not run on this su: the form was detected and used.
    assert phone.shell("su 0 id -u").stdout.decode() != "0\n"
    for name in SUITES:
        fingerprint = _result(cases[name])["fingerprints"]["deviceFingerprint"]
        assert fingerprint["suForm"] == "su -c" and fingerprint["theme"] == "custom_bedtime", (name, fingerprint)
        cleanup = _result(cases[name])["cleanup"]
        assert cleanup["left"] == [] and cleanup["failed"] == [], (name, cleanup)  # the undo's root commands ran too
        log = (Path(cases[name].properties["agentbench_run_dir"]) / "preflight.log").read_text()
        assert "su 0 " not in log.split("$ ", 1)[1].splitlines()[0], name  # the reset script's root commands


def test_contacts_build_is_recorded_with_the_testbeds(session) -> None:
    _, cases, phone = session
    build = _result(cases["log-code-to-contact"])["fingerprints"]["appBuild"]
    contacts = phone.packages["com.android.contacts"]
    assert build["otherApps"]["com.android.contacts"]["versionName"] == contacts.version_name
    assert build["otherApps"]["com.android.contacts"]["versionCode"] == contacts.version_code


def test_the_busy_contacts_screen_was_dumped_again(session) -> None:
    _, _, phone = session
    assert phone.counters["busy-screen-dumps"] == 2 and phone.busy_screen_dumps["com.android.contacts"] == 0


def test_every_prove_item_of_those_jobs_is_judged_as_on_the_stock_phone(proofs) -> None:
    # The scenarios' seeds and `adb` steps run in the device's su form too; every pass and fail state is judged right.
    done, cases, _ = proofs
    assert cases and {name: case.outcome for name, case in cases.items() if case.outcome != "passed"} == {}, done.stdout[-6000:]
    assert {name.split("[", 1)[0] for name in cases} == set(SUITES)
