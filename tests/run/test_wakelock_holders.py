"""wakelock-restrict's drawn holder: the `job` seed (suite, command), `cmd jobscheduler` on the simulated phone, and each candidate app.

Pure parts get tables; the device parts run on an in-process simulated phone, so nothing here starts adb.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
from suitefiles import BASE, write_suite

from phoneadb import PhoneAdb

from pytest_agentbench.checks.seed import JobSeed, parse_seeds
from pytest_agentbench.errors import PreflightError, SuiteError
from pytest_agentbench.run.preflight import DEVICE_STAGING_DIR, run_preflight
from pytest_agentbench.run.seed import plan_seeds
from pytest_agentbench.sim.phone import Phone
from pytest_agentbench.suite import AppSpec, PreflightSpec, load_suite
from pytest_agentbench.suite.instance import instantiate

from simui import back, tap, texts

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "benchmark" / "agent" / "suites" / "wakelock-restrict.yml"
TESTBED = "dev.agentbench.testbed"
SETTINGS = "com.android.settings"
#: The suite's candidates: (holder, its name in Settings, its job id).
CANDIDATES = [(record["holder"], record["holderName"], record["holderJob"])
              for record in load_suite(SUITE, ROOT).raw["params"]["holder"]["values"]]


def _load(tmp_path: Path, **overrides) -> object:
    data = copy.deepcopy(BASE)
    data.update(overrides)
    return load_suite(write_suite(tmp_path, data), tmp_path)


def _problems(tmp_path: Path, **overrides) -> str:
    with pytest.raises(SuiteError) as raised:
        _load(tmp_path, **overrides)
    return str(raised.value)


def out(phone: Phone, command: str) -> str:
    result = phone.shell(command)
    return result.stdout.decode() + result.stderr.decode()


def wake_locks(phone: Phone) -> list[str]:
    return re.findall(r"PARTIAL_WAKE_LOCK +'([^']+)' ACQ=\S+ \(uid=(\d+)", out(phone, "dumpsys power"))


def seed_holder(phone: Phone, package: str, job_id: int) -> None:
    """The suite's seed, as preflight sends it."""
    ((_, command),) = plan_seeds((JobSeed(package, job_id),), staging_dir=DEVICE_STAGING_DIR).steps
    result = phone.shell(command.text)
    assert result.exit_code == 0, result.stderr


# ----------------------------------------------------------------------------- the seed in a suite


def test_a_job_seed_loads_and_becomes_stop_all_force_stop_and_run() -> None:
    (seed,) = parse_seeds([{"job": {"package": "com.android.chrome", "id": 83}}])
    assert seed == JobSeed("com.android.chrome", 83)
    ((name, command),) = plan_seeds((seed,), staging_dir=DEVICE_STAGING_DIR).steps
    assert name == "seed 1 job 83 of com.android.chrome"
    assert command.text == ("cmd jobscheduler timeout 2>/dev/null && am force-stop com.android.chrome "
                            "&& cmd jobscheduler run -f com.android.chrome 83")


@pytest.mark.parametrize(
    ("seed", "problem"),
    [
        ({"job": {"package": "chrome", "id": 1}}, "preflight.seed[0].job.package: expected an Android package name"),
        ({"job": {"package": "com.android.chrome", "id": -1}}, "preflight.seed[0].job.id: expected a job id from 0 to 2147483647"),
        ({"job": {"package": "com.android.chrome", "id": 2**31}}, "preflight.seed[0].job.id: expected a job id from 0 to 2147483647"),
        ({"job": {"package": "com.android.chrome"}}, "preflight.seed[0].job.id: required key is missing"),
        ({"job": {"package": "com.android.chrome", "id": 1, "user": 0}}, "preflight.seed[0].job.user: unknown key"),
    ],
    ids=["not-a-package", "negative-id", "id-too-large", "no-id", "unknown-key"],
)
def test_bad_job_seeds_name_the_key_path_and_what_was_expected(tmp_path: Path, seed: dict, problem: str) -> None:
    text = _problems(tmp_path, preflight={"seed": [seed]})
    assert problem in text, text


def test_a_drawn_package_or_job_id_a_phone_cannot_take_is_refused_with_the_instance(tmp_path: Path) -> None:
    # The schema lets a package and a job id be a {param}; what the param draws is checked once drawn.
    suite = _load(tmp_path, params={"app": {"type": "choice", "values": [{"app": "not a package", "job": "x1"}]}},
                  preflight={"seed": [{"job": {"package": "{app}", "id": "{job}"}}]},
                  verify={"device": [{"kind": "appops", "name": "restricted", "op": "RUN_ANY_IN_BACKGROUND",
                                      "package": "{app}", "mode": "ignore"}]},
                  cleanup=[{"restoreAppop": {"package": "{app}", "op": "RUN_ANY_IN_BACKGROUND"}}, {"pmClear": "{app}"}])
    with pytest.raises(SuiteError) as raised:
        instantiate(suite, seed=0, repeat=1)
    text = str(raised.value)
    for problem in ("preflight.seed[0].job.package: expected an Android package name, got 'not a package'",
                    "preflight.seed[0].job.id: expected a job id from 0 to 2147483647, got 'x1'",
                    "verify.device[0].package: expected an Android package name, got 'not a package'",
                    "cleanup[0].restoreAppop.package: expected an Android package name, got 'not a package'",
                    "cleanup[1].pmClear: expected an Android package name, got 'not a package'"):
        assert problem in text, text


def _preflight(seed: JobSeed) -> PreflightSpec:
    return PreflightSpec(clear_app_data=False, shared_preferences={}, launch_uri=None, settle_seconds=0,
                         start_screen_includes=("Apps",), seed=(seed,))


def test_preflight_seeds_the_holder_as_the_only_wake_lock_before_settings_opens(tmp_path: Path) -> None:
    adb = PhoneAdb()
    run_preflight(adb, "sim", app=AppSpec(SETTINGS, None), preflight=_preflight(JobSeed("com.android.chrome", 83)),
                  run_dir=tmp_path)
    assert wake_locks(adb.phone) == [("Chrome:DownloadResumption", str(adb.phone.packages["com.android.chrome"].uid))]
    assert adb.phone.foreground()[0] == SETTINGS


def test_a_job_seed_the_app_does_not_have_fails_preflight_naming_its_step(tmp_path: Path) -> None:
    with pytest.raises(PreflightError, match=r"preflight step `seed 1 job 5 of com.android.chrome` failed"):
        run_preflight(PhoneAdb(), "sim", app=AppSpec(SETTINGS, None), preflight=_preflight(JobSeed("com.android.chrome", 5)),
                      run_dir=tmp_path)


# ----------------------------------------------------------------------------- cmd jobscheduler on the simulated phone


def test_the_testbeds_sync_runs_from_boot_and_timeout_stops_it() -> None:
    phone = Phone()
    uid = phone.packages[TESTBED].uid
    assert wake_locks(phone) == [("Testbed:SyncWorker", str(uid))]
    assert out(phone, "cmd jobscheduler timeout") == "Timing out: dev.agentbench.testbed/.SyncService\n"
    assert wake_locks(phone) == []
    assert out(phone, "cmd jobscheduler timeout") == "No matching executing jobs found.\n"
    assert out(phone, f"cmd jobscheduler run -f {TESTBED} 1") == "Running job [FORCED]\n"
    assert wake_locks(phone) == [("Testbed:SyncWorker", str(uid))]


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("cmd jobscheduler run -f com.android.chrome 1", "Could not find job 1 in package com.android.chrome / user 0"),
        ("cmd jobscheduler run -f com.example.none 1", "Package not found: com.example.none / user 0"),
        ("cmd jobscheduler run -f com.android.chrome", "Error: run needs a PACKAGE and a numeric JOB_ID"),
        ("cmd jobscheduler run --frobnicate com.android.chrome 83", "Error: unknown option"),
        ("cmd jobscheduler explode", "Unknown command: explode"),
        ("run-as dev.agentbench.testbed cmd jobscheduler run -f com.android.chrome 83",
         "Security exception: Uid does not have permission to run jobs"),
    ],
    ids=["no-such-job", "no-such-package", "no-job-id", "unknown-option", "unknown-verb", "an-app-user"],
)
def test_jobscheduler_refuses_what_android_refuses(command: str, problem: str) -> None:
    phone = Phone()
    result = phone.shell(command)
    assert result.exit_code != 0
    assert problem in result.stderr.decode()
    assert [tag for tag, _ in wake_locks(phone)] == ["Testbed:SyncWorker"]  # nothing else started


def test_a_forced_stop_ends_the_running_job_and_its_wake_lock() -> None:
    phone = Phone()
    out(phone, "cmd jobscheduler run -f com.google.android.apps.photos 1002")
    assert [tag for tag, _ in wake_locks(phone)] == ["Photos:BackupSync", "Testbed:SyncWorker"]
    out(phone, "am force-stop com.google.android.apps.photos")
    assert [tag for tag, _ in wake_locks(phone)] == ["Testbed:SyncWorker"]


# ----------------------------------------------------------------------------- each candidate holder


@pytest.mark.parametrize(("package", "name", "job_id"), CANDIDATES, ids=[name for _, name, _ in CANDIDATES])
def test_each_candidate_is_the_only_holder_after_the_seed_and_restricting_it_in_settings_releases_it(
        package: str, name: str, job_id: int) -> None:
    phone = Phone()
    seed_holder(phone, package, job_id)
    uid = phone.packages[package].uid
    # Only dumpsys power ties the lock to the app (by uid), and its uid names the package.
    ((tag, holder_uid),) = wake_locks(phone)
    assert holder_uid == str(uid) and tag == phone.packages[package].app.sync_job.tag
    assert f"package:{package} uid:{uid}" in out(phone, "pm list packages -U").splitlines()
    # The process started for the job's service, as ActivityManager logs it (the newest such line).
    started = re.findall(r"Start proc \d+:([\w.]+)/u0a\d+ for service", out(phone, "logcat -d -s ActivityManager"))
    assert started[-1] == package
    # Settings lists it and its App battery usage restricts it; the lock is gone then.
    phone.launch(SETTINGS)
    tap(phone, "Apps")
    tap(phone, "See all apps")
    tap(phone, name)
    assert texts(phone)[:2] == ["App info", name]
    tap(phone, "App battery usage")
    tap(phone, "Restricted")
    assert out(phone, f"cmd appops get {package} RUN_ANY_IN_BACKGROUND") == "RUN_ANY_IN_BACKGROUND: ignore\n"
    assert wake_locks(phone) == []
    back(phone)
    assert "Restricted" in texts(phone)
    # Allowed again, the job still runs and holds its lock again (cleanup's restoreAppop).
    out(phone, f"cmd appops set {package} RUN_ANY_IN_BACKGROUND allow")
    assert [holder for _, holder in wake_locks(phone)] == [str(uid)]


def test_the_suites_cleanup_commands_put_the_testbeds_sync_back_as_the_only_job() -> None:
    phone = Phone()
    seed_holder(phone, "com.android.contacts", 7)
    for step in load_suite(SUITE, ROOT).raw["cleanup"]:
        if "adb" in step:
            assert phone.shell(" ".join(step["adb"])).exit_code == 0
    assert [tag for tag, _ in wake_locks(phone)] == ["Testbed:SyncWorker"]
