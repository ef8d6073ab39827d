"""What the core jobs added to the machinery: seeds (suite, commands, preflight, cleanup), captures, indexed preference lists, readLogs.

Pure parts get tables; the device parts run on an in-process simulated phone (PhoneAdb), so nothing
here starts adb.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from fakeagents import CORE_JOBS, MIXED_JOBS
from phoneadb import PhoneAdb
from suitefiles import BASE, write_suite

from pytest_agentbench.checks import CheckContext, evaluate, suite_checks
from pytest_agentbench.suite import checks_of_suite
from pytest_agentbench.checks.cleanup import trackers_for
from pytest_agentbench.checks.prefs import parse as parse_prefs_check
from pytest_agentbench.checks.prefs import validate as validate_prefs
from pytest_agentbench.checks.read import read_device
from pytest_agentbench.errors import SuiteError
from pytest_agentbench.suite.instance import instantiate
from pytest_agentbench.mcp_server import ServerConfig, build_server
from pytest_agentbench.mcp_server.server import log_excerpt
from pytest_agentbench.run.cleanup import run_cleanup
from pytest_agentbench.run.preflight import DEVICE_STAGING_DIR, run_preflight
from pytest_agentbench.run.seed import SMS_SPACING_MS, photo_png, plan_seeds
from pytest_agentbench.sim.images import image_size
from pytest_agentbench.suite import AppSpec, PreflightSpec, load_suite
from pytest_agentbench.suite.capture import Capture
from pytest_agentbench.checks.seed import PhotoSeed, SmsSeed, parse_seeds, seeds_cleanup_watches

REPO = Path(__file__).resolve().parents[2]
SUITES = REPO / "benchmark" / "agent" / "suites"
MESSAGES = "com.google.android.apps.messaging"
SEEDS = [{"sms": {"from": "+15551230001", "body": "Lunch at noon?"}},
         {"photo": {"name": "beach.png", "width": 1200, "height": 800}},
         {"sms": {"from": "+15551230002", "body": "It's 'quoted'; $(not run)", "read": True}}]


def _suite(tmp_path: Path, **overrides: Any) -> Path:
    data = copy.deepcopy(BASE)
    for key, value in overrides.items():
        data[key] = value
    return write_suite(tmp_path, data)


def _problems(tmp_path: Path, **overrides: Any) -> str:
    with pytest.raises(SuiteError) as raised:
        load_suite(_suite(tmp_path, **overrides), tmp_path)
    return str(raised.value)


# ----------------------------------------------------------------------------- seeds: the suite stage


def test_seeds_load_as_typed_steps_in_order(tmp_path: Path) -> None:
    suite = load_suite(_suite(tmp_path, preflight={"seed": SEEDS}), tmp_path)
    assert suite.preflight.seed == (SmsSeed("+15551230001", "Lunch at noon?"), PhotoSeed("beach.png", 1200, 800),
                                    SmsSeed("+15551230002", "It's 'quoted'; $(not run)", read=True))
    assert suite.preflight.seed[1].path == "/sdcard/Pictures/beach.png"
    assert load_suite(_suite(tmp_path, preflight={}), tmp_path).preflight.seed == ()


@pytest.mark.parametrize(
    ("seed", "problem"),
    [
        ([{"photo": {"name": "beach.jpg", "width": 10, "height": 10}}], "preflight.seed[0].photo.name: expected a file name ending in .png"),
        ([{"photo": {"name": "a/b.png", "width": 10, "height": 10}}], "preflight.seed[0].photo.name: expected a file name ending in .png"),
        ([{"photo": {"name": "b.png", "width": 0, "height": 10}}], "preflight.seed[0].photo.width: expected an integer from 1 to 4096, or one {param} that draws one, got 0"),
        ([{"photo": {"name": "b.png", "width": 5000, "height": 10}}], "preflight.seed[0].photo.width: expected an integer from 1 to 4096, or one {param} that draws one, got 5000"),
        ([{"sms": {"from": "Alice", "body": "hi"}}], "preflight.seed[0].sms.from: expected a phone number of digits"),
        ([{"sms": {"from": "+15551230001"}}], "preflight.seed[0].sms.body: required key is missing"),
        ([{"contact": {"name": "x"}}], "preflight.seed[0].contact: unknown key"),
        ([{"sms": {"from": "123", "body": "a"}, "photo": {"name": "p.png", "width": 1, "height": 1}}], "preflight.seed[0]: expected one seed step"),
        ([{"photo": {"name": "p.png", "width": 1, "height": 1}}, {"photo": {"name": "p.png", "width": 2, "height": 2}}],
         "preflight.seed[1].photo.name: expected a name no other seeded photo has, got 'p.png' (also preflight.seed[0])"),
    ],
    ids=["not-png", "slash", "zero-wide", "too-wide", "sms-from-name", "sms-no-body", "unknown-kind", "two-kinds", "same-name"],
)
def test_bad_seeds_name_the_key_path_and_what_was_expected(tmp_path: Path, seed: list, problem: str) -> None:
    text = _problems(tmp_path, preflight={"seed": seed})
    assert problem in text, text


# ----------------------------------------------------------------------------- seeds: commands and files


@pytest.mark.parametrize(("width", "height"), [(1, 1), (1200, 800), (800, 1200), (3, 4096)])
def test_a_seeded_photo_is_a_real_png_of_its_size(width: int, height: int) -> None:
    data = photo_png(width, height)
    assert image_size(data) == (width, height)
    # IHDR, IDAT, IEND with valid CRCs, and exactly one filter byte plus 3 bytes a pixel per row.
    offset, chunks = 8, []
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset:offset + 4])
        kind, body = data[offset + 4:offset + 8], data[offset + 8:offset + 8 + length]
        assert struct.unpack(">I", data[offset + 8 + length:offset + 12 + length])[0] == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks.append((kind, body))
        offset += 12 + length
    assert [kind for kind, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    assert len(zlib.decompress(chunks[1][1])) == height * (1 + 3 * width)
    assert photo_png(width, height) == data  # the same bytes every time


@pytest.mark.parametrize(("width", "height"), [(0, 1), (1, 0), (70000, 1)])
def test_a_png_needs_a_real_size(width: int, height: int) -> None:
    with pytest.raises(ValueError, match="a PNG needs a size"):
        photo_png(width, height)


def test_seed_commands_are_quoted_root_inserts_and_a_staged_copy_plus_scan() -> None:
    seeds = parse_seeds(SEEDS)
    plan = plan_seeds(seeds, staging_dir=DEVICE_STAGING_DIR, now_ms=1_700_000_000_000)
    assert [name for name, _ in plan.steps] == ["seed 1 sms from +15551230001", "seed 2 photo beach.png 1200x800",
                                               "seed 3 sms from +15551230002"]
    first, photo, last = (command.text for _, command in plan.steps)
    assert first == ("su 0 content insert --uri content://sms/inbox --bind address:s:+15551230001 "
                     "--bind 'body:s:Lunch at noon?' --bind date:l:1699999880000 --bind read:i:0 --bind seen:i:0")
    # Oldest first, a minute apart; a body reaches the device as one quoted word.
    assert "date:l:1699999940000" in last and "read:i:1" in last
    assert """'body:s:It'"'"'s '"'"'quoted'"'"'; $(not run)'""" in last
    assert 1_700_000_000_000 - 2 * SMS_SPACING_MS == int(first.split("date:l:")[1].split()[0])
    assert photo == ("mkdir -p /sdcard/Pictures && cp /data/local/tmp/agentbench/seed-beach.png /sdcard/Pictures/beach.png "
                     "&& rm -f /data/local/tmp/agentbench/seed-beach.png "
                     "&& am broadcast -a android.intent.action.MEDIA_SCANNER_SCAN_FILE -d file:///sdcard/Pictures/beach.png 2>/dev/null")
    ((remote, data),) = plan.files
    assert remote == "/data/local/tmp/agentbench/seed-beach.png" and image_size(data) == (1200, 800)


def test_seeds_make_cleanup_watch_what_they_fill() -> None:
    labels = [tracker.label for tracker in trackers_for([], [], parse_seeds(SEEDS))]
    assert labels == ["SMS", "MediaStore images"]
    assert trackers_for([], [], ()) == ()
    # The baseline (read before the reset and the seeds) is the SMS and MediaStore images, once each.
    baseline = suite_checks([], [], parse_seeds(SEEDS)).baseline_reads()
    # SMS are read as root: only the default SMS app and root see every box.
    assert [read.key for read in baseline] == ["content:root:content://sms|_id|", "content:content://media/external/images/media|_id|"]


def test_cleanup_watches_what_a_proofs_own_seed_fills_as_well_as_preflights() -> None:
    sms_only = ({"sms": {"from": "+15551230001", "body": "hi"}},)
    prove = {"pass": {"steps": [{"tool": "observe"}]},
             "fail": [{"name": "big", "check": "answer", "reasonIncludes": "x",
                       "steps": [{"seed": {"photo": {"name": "big.png", "width": 1000, "height": 1000}}}]}]}
    seeds = seeds_cleanup_watches(parse_seeds(sms_only), prove)
    assert [seed.describe() for seed in seeds] == ["sms from +15551230001", "photo big.png 1000x1000"]
    assert [tracker.label for tracker in trackers_for([], [], seeds)] == ["SMS", "MediaStore images"]
    assert seeds_cleanup_watches((), None) == ()


# ----------------------------------------------------------------------------- seeds on a phone: preflight and cleanup


def _phone_state(adb: PhoneAdb) -> dict[str, Any]:
    phone = adb.phone
    return {"sms": phone.content_query("content://sms", ["_id", "address", "body"]),
            "threads": phone.content_query("content://sms/conversations"),
            "images": phone.content_query("content://media/external/images/media", ["_id", "_display_name", "width", "height"])}


def test_a_seeded_sms_body_with_colons_arrives_whole(tmp_path: Path) -> None:
    # `content` splits COLUMN:TYPE:VALUE at every unescaped colon: an unescaped "Reminder: 9:30"
    # was a malformed binding, `content` printed its usage (exit 0) and the SMS never arrived.
    seeds = parse_seeds([{"sms": {"from": "+15551230001", "body": "Reminder: dentist at 9:30"}}])
    ((_, command),) = plan_seeds(seeds, staging_dir=DEVICE_STAGING_DIR, now_ms=1_700_000_000_000).steps
    assert "'body:s:Reminder\\: dentist at 9\\:30'" in command.text
    adb = PhoneAdb()
    preflight = PreflightSpec(clear_app_data=True, shared_preferences={}, launch_uri=None, settle_seconds=0,
                              start_screen_includes=("+15551230001",), seed=seeds)
    run_preflight(adb, "sim", app=AppSpec(MESSAGES, None), preflight=preflight, run_dir=tmp_path,
                  device_reads=(), baseline_reads=(), now_ms=1_700_000_000_000)
    assert [row["body"] for row in _phone_state(adb)["sms"]] == ["Reminder: dentist at 9:30"]


def test_preflight_seeds_after_a_baseline_read_in_the_reset_round_trip_and_cleanup_puts_the_phone_back(tmp_path: Path) -> None:
    adb = PhoneAdb()
    fresh = _phone_state(adb)
    seeds = parse_seeds(SEEDS)
    checks = suite_checks([], [], seeds)
    preflight = PreflightSpec(clear_app_data=True, shared_preferences={}, launch_uri=None, settle_seconds=0,
                              start_screen_includes=("+15551230001",), seed=seeds)
    result = run_preflight(adb, "sim", app=AppSpec(MESSAGES, None), preflight=preflight, run_dir=tmp_path,
                           device_reads=checks.before_reads(), baseline_reads=checks.baseline_reads(), now_ms=1_700_000_000_000)
    # One push (the PNG), one reset trip (device read, baseline, reset, seeds, launch), one exec-out
    # (the before-snapshot and the start screen).
    assert result.round_trips == 3, adb.commands
    seeded = _phone_state(adb)
    assert sorted(row["body"] for row in seeded["sms"]) == ["It's 'quoted'; $(not run)", "Lunch at noon?"]
    assert [(row["_display_name"], row["width"], row["height"]) for row in seeded["images"]] == [("beach.png", 1200, 800)]
    # Messages started on the seeded threads: both are conversations in its bugle_db.
    assert "+15551230001" in result.start_screen_texts and "+15551230002" in result.start_screen_texts
    # The baseline was read before the seeds, the before-snapshot after them.
    sms_key = "content:root:content://sms|_id|"
    assert result.device_baseline.get(sms_key).text.strip() == "No result found."
    assert result.device_before.get(sms_key).text.count("Row: ") == 2
    saved = json.loads((tmp_path / "device-baseline.json").read_text())
    assert set(saved["reads"]) == {read.key for read in checks.baseline_reads()}
    report = run_cleanup(adb, "sim", checks, before=result.device_baseline, after=result.device_before, run_dir=tmp_path)
    assert report["failed"] == [] and report["left"] == []
    assert _phone_state(adb) == fresh


def test_a_seed_that_fails_names_its_step_and_the_remedy(tmp_path: Path) -> None:
    from pytest_agentbench.errors import PreflightError
    from pytest_agentbench.sim.phone import Phone

    adb = PhoneAdb(Phone(props={"ro.build.type": "user"}))  # no su on a user build
    preflight = PreflightSpec(clear_app_data=False, shared_preferences={}, launch_uri=None, settle_seconds=0,
                              start_screen_includes=(), seed=(SmsSeed("+15551230001", "hi"),))
    with pytest.raises(PreflightError, match=r"preflight step `seed 1 sms from \+15551230001` failed.*needs root"):
        run_preflight(adb, "sim", app=AppSpec(MESSAGES, None), preflight=preflight, run_dir=tmp_path)


# ----------------------------------------------------------------------------- captures


@pytest.mark.parametrize(
    ("pattern", "text", "value"),
    [
        (r'"(\d{6})" #pickup_code', '2 TextView "482913" #pickup_code @540,419', "482913"),
        (r"pickup code (\d{6})", "I Courier : pickup code 111111\nI Courier : pickup code 222222", "222222"),
        (r"Count: \d+", "Count: 7", "Count: 7"),
        (r"pickup code (\d{6})", "no code here", None),
        (r"(a)|(b)", "b", None),
    ],
    ids=["first-group", "last-match-wins", "whole-match", "no-match", "unmatched-group"],
)
def test_a_capture_keeps_the_last_match(pattern: str, text: str, value: str | None) -> None:
    assert Capture("code", pattern).find(text) == value


def test_prove_scenarios_may_use_device_and_their_own_captures(tmp_path: Path) -> None:
    data = copy.deepcopy(BASE)
    data["prove"] = {"pass": {"steps": [{"tool": "observe", "args": {"device": "{device}"},
                                         "capture": {"name": "code", "pattern": r"(\d{6})"}}], "answer": "CODE: {code}"}}
    assert load_suite(write_suite(tmp_path, data), tmp_path).prove["pass"]["answer"] == "CODE: {code}"
    data["prove"]["fail"] = [{"name": "other", "check": "answer", "reasonIncludes": "x", "steps": [], "answer": "CODE: {code}"}]
    text = _problems(tmp_path, prove=data["prove"])
    # A capture belongs to its own scenario.
    assert "prove.fail[0].answer: unknown placeholder {code}" in text
    data["prove"].pop("fail")
    data["prove"]["pass"]["steps"][0]["capture"]["pattern"] = "(\\d"
    assert "prove.pass.steps[0].capture.pattern: expected a regular expression" in _problems(tmp_path, prove=data["prove"])
    data["prove"]["pass"]["steps"] = [{"wait": 1, "capture": {"name": "x", "pattern": "y"}}]
    assert "capture keeps a value from a tool or adb step's output, not from wait" in _problems(tmp_path, prove=data["prove"])


# ----------------------------------------------------------------------------- indexed preference lists

CLOCKS = {"kind": "sharedPreferences", "name": "london", "package": "com.android.deskclock",
          "file": "com.android.deskclock_preferences", "list": {"count": "number_of_cities", "item": "city_id_"},
          "contains": "C15"}


def _prefs(**entries: tuple[str, Any]) -> dict[str, Any]:
    return {"values": {key: {"tag": tag, "value": value} for key, (tag, value) in entries.items()}}


@pytest.mark.parametrize(
    ("values", "passed", "seen"),
    [
        (_prefs(number_of_cities=("int", 2), city_id_0=("string", "C21"), city_id_1=("string", "C15")), True,
         'number_of_cities is 2; city_id_0..: ["C21", "C15"]'),
        # DeskClock never deletes item keys: one past the count was removed from the list.
        (_prefs(number_of_cities=("int", 1), city_id_0=("string", "C21"), city_id_1=("string", "C15")), False,
         'number_of_cities is 1; city_id_0..: ["C21"]'),
        (_prefs(home_time_zone=("string", "Europe/London")), False, "number_of_cities is not in the file"),
        (_prefs(number_of_cities=("string", "1"), city_id_0=("string", "C15")), False, 'number_of_cities is <string> "1", not a count'),
        (_prefs(number_of_cities=("int", 0)), False, "number_of_cities is 0; city_id_0..: []"),
        # A corrupt count is cut at the file's size, not looped over.
        (_prefs(number_of_cities=("int", 2**31 - 1), city_id_0=("string", "C15")), True, 'city_id_0..: ["C15"]'),
    ],
    ids=["listed", "stale-item-past-the-count", "no-list-home-zone-elsewhere", "count-not-a-number", "empty-list",
         "corrupt-count"],
)
def test_a_preference_list_is_its_count_of_item_keys(values: dict, passed: bool, seen: str) -> None:
    check = validate_prefs(None, values, parse_prefs_check(CLOCKS), CheckContext())
    assert check.passed is passed and seen in check.seen, check
    assert check.expected.startswith("the list city_id_0..city_id_N-1 (N = number_of_cities) contains \"C15\"")


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({**CLOCKS, "key": "x"}, "verify.device[0]: expected one of key or list, got both"),
        ({k: v for k, v in CLOCKS.items() if k != "list"} | {"list": {"count": "n"}}, "verify.device[0].list.item: required key is missing"),
        ({k: v for k, v in CLOCKS.items() if k not in ("list", "contains")} | {"anyOf": [{"contains": "C15"}]},
         "verify.device[0].anyOf[0].key: required key is missing (expected key (or list))"),
    ],
    ids=["key-and-list", "list-without-item", "any-of-without-subject"],
)
def test_bad_preference_lists(tmp_path: Path, entry: dict, problem: str) -> None:
    text = _problems(tmp_path, verify={"answerIncludes": ["RESULT: ok"], "device": [entry]})
    assert problem in text, text


# ----------------------------------------------------------------------------- readLogs


@pytest.mark.parametrize(
    ("text", "contains", "lines", "shown"),
    [
        ("--------- beginning of main\na Courier 1\nb Other\nc courier 2\n", "COURIER", 5, "a Courier 1\nc courier 2"),
        ("a 1\nb 2\nc 3\n", "", 2, "(1 older matching lines not shown)\nb 2\nc 3"),
        ("a 1\n", "zzz", 5, "no log line contains 'zzz'"),
        ("--------- beginning of main\n", "", 5, "the log is empty"),
    ],
    ids=["contains-ignores-case", "newest-lines", "nothing-matches", "empty"],
)
def test_log_excerpt(text: str, contains: str, lines: int, shown: str) -> None:
    assert log_excerpt(text, contains=contains, lines=lines) == shown


def _call(adb: PhoneAdb, tmp_path: Path, tool: str, **arguments: Any) -> tuple[bool, str]:
    config = dataclasses.replace(ServerConfig.from_environ({"AGENTBENCH_DEVICE_SERIAL": "sim",
                                                            "AUTOMOBILE_ADB_SERVER_COORDINATION_DIR": str(tmp_path / "claims")}),
                                 log_dir=None, data_dir=None, db_dir=None, socket_dir=None)

    async def body() -> tuple[bool, str]:
        async with Client(build_server(config, adb=adb)) as client:  # type: ignore[arg-type]
            answer = await client.call_tool(tool, arguments)
            return bool(answer.is_error), "\n".join(getattr(block, "text", "") for block in answer.content)

    return asyncio.run(body())


def test_read_logs_shows_the_testbeds_courier_line_and_refuses_bad_arguments(tmp_path: Path) -> None:
    adb = PhoneAdb()
    adb.phone.shell("am start -a android.intent.action.VIEW -d agentbench://testbed/home")
    code = adb.phone.private_file("dev.agentbench.testbed", "shared_prefs/testbed.xml").decode()
    error, text = _call(adb, tmp_path, "readLogs", tag="Courier")
    assert not error and text.count("\n") == 0 and " I Courier : Parcel AB-" in text
    assert text.split("pickup code ")[1] in code
    assert _call(adb, tmp_path, "readLogs", tag="Courier; rm -rf /") == (
        True, "'Courier; rm -rf /' is not a log tag; expected letters, digits and . _ : - (e.g. ActivityManager)")
    assert _call(adb, tmp_path, "readLogs", lines=0)[0]
    error, text = _call(adb, tmp_path, "readLogs", contains="ActivityManager", lines=1)
    assert not error and "Start proc" in text and text.count("\n") == 1  # one line plus the "older lines" note


# ----------------------------------------------------------------------------- Chrome's key by version


@pytest.mark.parametrize(("version", "key"), [("131.0.6778.200", "https_first_balanced_mode_enabled"),
                                              ("124.0.6367.219", "https_only_mode_enabled")])
def test_the_secure_connections_check_passes_on_either_chromes_key(tmp_path: Path, version: str, key: str) -> None:
    suite = load_suite(SUITES / "chrome-secure-connections.yml", REPO)
    adb = PhoneAdb()
    adb.phone.set_version("com.android.chrome", version_name=version)
    adb.phone.shell("monkey -p com.android.chrome -c android.intent.category.LAUNCHER 1")
    checks = suite_checks(suite.verify.device)
    for text in ("More options", "Settings", "Privacy and security", "Always use secure connections"):
        assert not _call(adb, tmp_path, "tapOn", text=text)[0]
    after = read_device(adb, "sim", checks.after_reads()).reads
    (check,) = evaluate(checks.checks, None, after, CheckContext("SECURE_CONNECTIONS: on"))
    assert check.passed and f"{key} is true" in check.seen, check
    prefs = json.loads(adb.phone.private_file("com.android.chrome", "app_chrome/Default/Preferences"))
    assert prefs[key] is True and len({"https_first_balanced_mode_enabled", "https_only_mode_enabled"} & set(prefs)) == 1


# ----------------------------------------------------------------------------- the committed core jobs

CORE, MIXED = CORE_JOBS, MIXED_JOBS


@pytest.mark.parametrize("name", CORE)
def test_a_core_job_says_why_it_needs_the_phone_and_proves_every_check(name: str) -> None:
    path = SUITES / f"{name}.yml"
    text = path.read_text(encoding="utf-8")
    header = text.split("\nname:", 1)[0]
    # Seed 001: the reason is written per job, in the open, as the suite's first comment (issue 23's
    # jobs: "(seed 001's candidate)" or "(seed 001's rule)").
    assert ("A mixed job (seed 001)" if name in MIXED else "Why this job needs the phone (seed 001") in header
    suite = load_suite(path, REPO)
    assert suite.verify.no_shell is (name not in MIXED)
    assert suite.claude.model == "claude-sonnet-5-5"
    assert suite.verify.device and suite.prove is not None
    failed_checks = {scenario["check"] for scenario in suite.prove["fail"]}
    assert {entry["name"] for entry in suite.verify.device} <= failed_checks
    if suite.verify.answer_includes:
        assert "answer" in failed_checks
    # What a job changes is put back one of three ways: cleanup's watched sources (the checks'
    # providers and app-ops, the seeds'), its own cleanup steps, or the next preflight clearing the
    # app's data; test_jobs_e2e.py compares the whole phone with a fresh one.
    watched = checks_of_suite(suite)
    assert watched.trackers or watched.steps or suite.preflight.clear_app_data
    if suite.preflight.seed:
        # SMS and photos are watched sources; a job is stopped by the suite's own cleanup step.
        watched_seeds = [seed for seed in suite.preflight.seed if type(seed).__name__ != "JobSeed"]
        assert {tracker.label for tracker in watched.trackers} >= {
            {"sms": "SMS", "photo": "MediaStore images"}[type(seed).__name__.removesuffix("Seed").lower()]
            for seed in watched_seeds}
        if len(watched_seeds) < len(suite.preflight.seed):
            assert {"adb": ["cmd", "jobscheduler", "timeout"]} in watched.steps, watched.steps


def test_the_dry_run_lists_a_suites_seeds_with_their_commands() -> None:
    from pytest_agentbench.run.dryrun import device_reads_text

    # Seed 3's first instance: the senders are drawn, so the test reads them from the instance.
    suite = instantiate(load_suite(SUITES / "messages-pin-archive.yml", REPO), seed=3, repeat=1)
    text = device_reads_text(suite)
    first = suite.instance.values["first"]
    assert "seeds (in the reset round trip, after a baseline read of the watched sources; 0 files pushed first):" in text
    assert f"  seed 1 sms from {first}: su 0 content insert --uri content://sms/inbox --bind address:s:{first}" in text
    crop = instantiate(load_suite(SUITES / "photos-crop.yml", REPO), seed=3, repeat=1)
    photo, name = device_reads_text(crop), crop.instance.values["photoName"]
    assert "1 files pushed first" in photo and f"cp /data/local/tmp/agentbench/seed-{name}.png /sdcard/Pictures/{name}.png" in photo
