"""Seed 001's core jobs end to end on one simulated phone: the whole benchmark (twice), every proof, and agents that must not pass.

One stock simulated phone behind a private adb server serves every session of this module, in
order, so the sessions also prove that runs do not leak into each other: the benchmark passes
twice in a row, and after all of it (replays, proofs, the fake agents, the raw-adb agent) the
phone's contacts, threads, media, settings, app-ops, time zone and the jobs' app data read
exactly as on a fresh phone.

* `agentbench-replay` with the committed plans passes every committed suite; `--agentbench-prove`
  passes every prove item of every suite.
* A do-nothing agent (no call, no answer) and a plausible-text agent (the expected `KEY: value`
  lines and reports, no call) pass none of the committed suites.
* An agent working through the `adb-shell` server (scripted shell calls: private storage read and
  written as root, `content insert`, `cmd appops set`) fails every noShell job and passes the mixed ones.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
import yaml
from adbserver import PrivateAdbServer, one_simulated_phone
from fakeagents import BENCHMARK, CORE_JOBS, MIXED_JOBS, NEW_JOBS, REPO, Behaviour, copy_benchmark_parts, junit_cases, run_session, session_env, write_dispatcher

from pytest_agentbench.sim.fleet import SimFleet
from pytest_agentbench.suite import load_suite, params
from pytest_agentbench.suite.instance import instantiate
from pytest_agentbench.sim.phone import Phone

ALL_SUITES = tuple(sorted(path.stem for path in (BENCHMARK / "suites").glob("*.yml")))
MIXED, CORE = MIXED_JOBS, CORE_JOBS
NO_SHELL = tuple(name for name in CORE if name not in MIXED)
#: The apps whose private data the jobs change; cleanup must leave them as a fresh phone has them.
JOB_APPS = ("com.android.chrome", "com.android.deskclock", "com.google.android.apps.messaging",
            "com.google.android.apps.photos", "com.android.contacts", "dev.agentbench.testbed")
IMAGES = "content://media/external/images/media"
#: A whole-benchmark session on one phone: 21 suites, and their 153 prove items (about 0.5 s each
#: since preflight waits for the start screen instead of sleeping 1-2 s), on a loaded 2-core
#: machine; the harness suites' 300 s is too short.
SESSION_TIMEOUT_S = 1200


# ----------------------------------------------------------------------------- the phone and what it holds


def _files(phone: Phone, root: str) -> list[str]:
    found: list[str] = []
    if not phone.fs.exists(root):
        return found
    for name in sorted(phone.fs.listdir(root)):
        path = f"{root.rstrip('/')}/{name}"
        found += _files(phone, path) if phone.fs.is_dir(path) else [path]
    return found


def phone_state(phone: Phone) -> dict[str, Any]:
    """What a job or its seeds may change, read host-side from the phone itself (not through adb)."""
    with phone.lock:
        return {
            "contacts": phone.content_query("content://com.android.contacts/raw_contacts", ["_id", "display_name"]),
            "contact data": phone.content_query("content://com.android.contacts/data", ["_id", "mimetype", "data1"]),
            "sms": phone.content_query("content://sms", ["_id", "address", "body", "type"]),
            "threads": phone.content_query("content://sms/conversations"),
            "images": phone.content_query(IMAGES, ["_id", "_display_name", "width", "height"]),
            "files on shared storage": _files(phone, "/sdcard"),
            # The harness stages its own preference files there (overwritten each run); a seed's file is removed.
            "seed files staged": [path for path in _files(phone, "/data/local/tmp") if "/seed-" in path],
            "settings": copy.deepcopy(phone.settings),
            "app-ops": {package: {op: entry.mode for op, entry in entries.items()}
                        for package, entries in phone.appops.packages.items() if entries},
            "uid app-ops": copy.deepcopy(phone.appops.uids),
            "time zone": phone.props["persist.sys.timezone"],
            "power allowlist": sorted(phone.power.allowlist),
            "app data": {package: _files(phone, phone.fs.private_dir(package)) for package in JOB_APPS},
        }


FRESH = phone_state(Phone())


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrivateAdbServer, SimFleet]]:
    """One stock simulated phone (the built-in apps, nothing seeded) for every session of the module."""
    with one_simulated_phone(tmp_path_factory.mktemp("adb")) as lab:
        yield lab


def session(lab, project: Path, tmp: Path, *args: str):
    server, fleet = lab
    tmp.mkdir(parents=True, exist_ok=True)
    junit = tmp / "junit.xml"
    env = session_env(server.port, tmp / "claims", COLUMNS="200")
    # Seed 0 unless the test names another (a later --agentbench-seed wins): the scripted agents
    # here know their instance's values (`drawn`), as no real agent can.
    done = run_session(project, ["benchmark/", "--device", fleet.serials[0], "--agentbench-output", str(tmp / "out"),
                                 f"--junitxml={junit}", "-rA", "--agentbench-seed", "0", *args], env, timeout_s=SESSION_TIMEOUT_S)
    assert junit.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return done, {without_instance(name): case for name, case in junit_cases(junit).items()}


def without_instance(name: str) -> str:
    """`clock-world-clock[r1-26489d80]` -> `clock-world-clock`, `x[r1-Pro-prove-pass]` -> `x[prove-pass]`: one instance per suite here."""
    name = re.sub(r"\[(?:r\d+-.*?-)?(prove-[^\]]+)\]$", r"[\1]", name)
    return re.sub(r"\[r\d+(?:-[^\]]*)?\]$", "", name)


def result_of(case) -> dict:
    return json.loads((Path(case.properties["agentbench_run_dir"]) / "result.json").read_text())


def pickup_code(case) -> str:
    """The pickup code the testbed drew for a run, as its check read it off the device (`pickup_code is <string> "123456"`)."""
    (check,) = [check for check in result_of(case)["checks"] if check["name"] == "pickup-code-in-answer"]
    return check["seen"].split('"')[1]


def reasons(case) -> list[str]:
    return result_of(case)["verdict"]["reasons"]


# ----------------------------------------------------------------------------- the benchmark, twice


@pytest.fixture(scope="module")
def benchmark_twice(lab, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("benchmark")
    first = session(lab, REPO, tmp / "first", "--claude", "agentbench-replay")
    # The second also writes the page (a screenshot after each call): what the main job's page weighs.
    second = session(lab, REPO, tmp / "second", "--claude", "agentbench-replay", "--agentbench-html", str(tmp / "second" / "report.html"))
    return first, second, phone_state(lab[1].phones[0])


def test_the_replay_agent_passes_every_committed_suite(benchmark_twice) -> None:
    (done, cases), _, _ = benchmark_twice
    assert {name: case.outcome for name, case in cases.items()} == {name: "passed" for name in ALL_SUITES}, done.stdout[-5000:]
    assert done.returncode == 0
    for name in CORE:
        result = result_of(cases[name])
        assert result["cleanup"]["left"] == [] and result["cleanup"]["failed"] == [], (name, result["cleanup"])
    # The random values came from the device: this run's pickup code is in the answer, never in the suite.
    code = pickup_code(cases["testbed-pickup-code"])
    assert code.isdigit() and code not in (BENCHMARK / "suites" / "testbed-pickup-code.yml").read_text()


def test_every_committed_suite_passes_twice_in_a_row_on_one_phone(benchmark_twice) -> None:
    first, (done, cases), _ = benchmark_twice
    assert {name: case.outcome for name, case in cases.items()} == {name: "passed" for name in ALL_SUITES}, done.stdout[-5000:]
    # A new pickup code and courier code each run: preflight clears the testbed's data.
    codes = [pickup_code(run[1]["testbed-pickup-code"]) for run in (first, (done, cases))]
    assert codes[0] != codes[1]


def test_the_main_jobs_page_weighs_under_1_5_mb_with_every_screen_viewable(benchmark_twice) -> None:
    _, (done, _), _ = benchmark_twice
    page = Path(unquote(urlparse(re.search(r"agentbench html report: (\S+)", done.stdout).group(1)).path))
    beside = page.with_name(f"{page.stem}_files")
    weight = page.stat().st_size + sum(path.stat().st_size for path in beside.rglob("*") if path.is_file())
    assert weight < 1_500_000, f"{weight} bytes"
    sources = re.findall(r'<img[^>]* src="([^"]+)"', page.read_text(encoding="utf-8"))
    linked = [src for src in sources if not src.startswith("data:")]
    assert len(sources) > 100 and linked and not [src for src in linked if not (page.parent / unquote(src)).is_file()]
    assert not [path for path in beside.rglob("*.png")]  # pictures are linked, never copied


def test_after_the_whole_benchmark_the_phone_reads_like_a_fresh_phone(benchmark_twice) -> None:
    *_, state = benchmark_twice
    assert state == FRESH


# ----------------------------------------------------------------------------- every proof


@pytest.fixture(scope="module")
def proofs(lab, benchmark_twice, tmp_path_factory: pytest.TempPathFactory):
    done, cases = session(lab, REPO, tmp_path_factory.mktemp("prove"), "--agentbench-prove")
    return done, cases, phone_state(lab[1].phones[0])


def test_every_prove_item_of_every_suite_passes(proofs) -> None:
    done, cases, _ = proofs
    outcomes = {name: case.outcome for name, case in cases.items()}
    assert {name for name, outcome in outcomes.items() if outcome != "passed"} == set(), done.stdout[-6000:]
    for name in ALL_SUITES:
        suite = yaml.safe_load((BENCHMARK / "suites" / f"{name}.yml").read_text())
        expected = {"prove-pass", "prove-fresh", *(f"prove-fail-{fail['name']}" for fail in suite["prove"]["fail"])}
        assert {item.split("[", 1)[1].rstrip("]") for item in outcomes if item.startswith(f"{name}[")} == expected


def test_after_every_proof_the_phone_reads_like_a_fresh_phone(proofs) -> None:
    assert proofs[2] == FRESH


# ----------------------------------------------------------------------------- agents that must not pass


def plausible_answer(suite: str, seed: int = 0) -> str:
    """What an agent that never touched the phone would answer: the plan's final lines, the instance's
    values (as its prompt gives them; seed `seed`, r1) and made-up codes and counts filled in."""
    final = yaml.safe_load((BENCHMARK / "plans" / f"{suite}.yml").read_text())["final"]
    # The instance's own values (what its prompt says), and what a plan would have read off the screen.
    values = {**{name: str(value) for name, value in drawn(suite, seed).items()}, "code": "482913", "count": "4"}
    if "photoName" in values:
        values["photo"] = f"{values['photoName']}.png"
    if "user" in values:
        values.update(email=f"{values['user']}@{values['domain']}", welcome=f"{values['user']}@{values['truncated']}")
    return params.fill(final, values).value


@pytest.fixture(scope="module")
def fake_agents(lab, proofs, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("fakes")
    runs = {}
    for kind, seed, behaviour in (("nothing", 0, lambda name, seed: Behaviour("nothing")),
                                  *((f"plausible-seed{seed}", seed, lambda name, seed: Behaviour("answer", {"final": plausible_answer(name, seed)}))
                                    for seed in PLAUSIBLE_SEEDS)):
        agent = write_dispatcher(tmp / kind / "agent", {name: behaviour(name, seed) for name in ALL_SUITES})
        runs[kind] = session(lab, REPO, tmp / kind, "--claude", str(agent), "--agentbench-seed", str(seed))
    return runs, phone_state(lab[1].phones[0])


#: The plausible-text agent tries three instances of every job (seeds 0-2, each its own draw); the
#: do-nothing agent's run on every instance is each proof's `prove-fresh` item (test_instances_e2e).
PLAUSIBLE_SEEDS = (0, 1, 2)


@pytest.mark.parametrize("kind", ["nothing", *(f"plausible-seed{seed}" for seed in PLAUSIBLE_SEEDS)])
def test_an_agent_that_does_not_touch_the_phone_passes_no_job(fake_agents, kind: str) -> None:
    done, cases = fake_agents[0][kind]
    # Judged and failed, not incomplete: the checks read the device and found the job undone.
    assert {name: case.outcome for name, case in cases.items()} == {name: "failure" for name in ALL_SUITES}, done.stdout[-5000:]
    for name in CORE:
        result = result_of(cases[name])
        failing = [check for check in result["checks"] if not check["passed"]]
        device_failures = [check for check in failing if check["kind"] not in ("answer", "device-use", "no-shell", "report")]
        assert device_failures, (kind, name, failing)
        if kind.startswith("plausible"):
            # The answer lines are right; only the device (and that no device tool was used) says otherwise.
            assert all(check["passed"] for check in result["checks"] if check["kind"] == "answer"), (name, failing)
            # Not the reports: every planted bug asks for a value this run's app logged (issues 19 and 28),
            # which an agent that never used the app cannot have.
            for check in result["checks"]:
                if check["kind"] == "report":
                    assert not check["passed"] and "0 of 2 found" in check["seen"], (name, check)
                    assert "names none of the values this run's app showed" in check["seen"], (name, check)


def test_after_the_fake_agents_the_phone_reads_like_a_fresh_phone(fake_agents) -> None:
    assert fake_agents[1] == FRESH


# ----------------------------------------------------------------------------- raw adb through the adb-shell server


def shell(command: str, **capture: str) -> dict[str, Any]:
    step: dict[str, Any] = {"tool": "shell", "args": {"command": command}}
    if capture:
        (name, pattern), = capture.items()
        step["capture"] = {"name": name, "pattern": pattern}
    return step


CHROME_PREFS = "/data/data/com.android.chrome/app_chrome/Default/Preferences"
CLOCK_PREFS = "/data/data/com.android.deskclock/shared_prefs/com.android.deskclock_preferences.xml"
BUGLE = "/data/data/com.google.android.apps.messaging/databases/bugle_db"
ADD_DATA = "content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:{raw} --bind mimetype:s:"
def drawn(name: str, seed: int = 0) -> dict[str, Any]:
    """The values of the instance a session runs (seed 0 unless given, r1): a shell agent that knows its task's values."""
    return instantiate(load_suite(BENCHMARK / "suites" / f"{name}.yml", REPO), seed=seed, repeat=1).instance.values


ENGINE, CLOCK, MESSAGES, CONTACT = (drawn(name) for name in ("chrome-search-engine", "clock-world-clock",
                                                              "messages-pin-archive", "log-code-to-contact"))
#: What an agent with only a shell does for each job: the state written as root where it can be, read
#: off private storage where the job is a read, and a plain look where no shell command can do it.
SHELL_PLANS: dict[str, dict[str, Any]] = {
    "chrome-search-engine": {"steps": [shell(
        f"""su 0 sh -c "mkdir -p {CHROME_PREFS.rsplit('/', 1)[0]} && echo '{{\\"default_search_provider_data\\": """
        f"""{{\\"template_url_data\\": {{\\"keyword\\": \\"{ENGINE['engineKeyword']}\\"}}}}}}' > {CHROME_PREFS}" """)],
        "final": f"SEARCH_ENGINE: {ENGINE['engine']}"},
    "chrome-secure-connections": {"steps": [shell(
        f"""su 0 sh -c "mkdir -p {CHROME_PREFS.rsplit('/', 1)[0]} && echo '{{\\"https_first_balanced_mode_enabled\\": true}}' > {CHROME_PREFS}" """)],
        "final": "SECURE_CONNECTIONS: on"},
    "clock-world-clock": {"steps": [shell(
        f"""su 0 sh -c "echo '<map><int name=\\"number_of_cities\\" value=\\"1\\" /><string name=\\"city_id_0\\">{CLOCK['cityId']}</string>"""
        f"""<string name=\\"snooze_duration\\">{CLOCK['snooze']}</string></map>' > {CLOCK_PREFS}" """)],
        "final": f"WORLD_CLOCK: {CLOCK['city']}\nSNOOZE: {CLOCK['snooze']} minutes"},
    "messages-pin-archive": {"steps": [shell(
        f"""su 0 sqlite3 {BUGLE} "INSERT INTO conversation_pins (conversation_id, pinned_timestamp, sort_order) """
        f"""SELECT _id, 1, 0 FROM conversations WHERE participant_normalized_destination = '{MESSAGES['pinNumber']}'; """
        f"""UPDATE conversations SET archive_status = 1 WHERE participant_normalized_destination = '{MESSAGES['archiveNumber']}'" """)],
        "final": f"PINNED: {MESSAGES['pinNumber']}\nARCHIVED: {MESSAGES['archiveNumber']}"},
    # A shell has no image editor: the best it can do is a copy, which is not square.
    "photos-crop": {"steps": [shell("cp /sdcard/Pictures/beach.png /sdcard/Pictures/beach-square.png && am broadcast -a "
                                    "android.intent.action.MEDIA_SCANNER_SCAN_FILE -d file:///sdcard/Pictures/beach-square.png")],
                    "final": "CROPPED: 800 x 800"},
    "testbed-pickup-code": {"steps": [shell("run-as dev.agentbench.testbed cat shared_prefs/testbed.xml",
                                            code=r'name="pickup_code">(\d{6})<')],
                            "final": "PICKUP_CODE: {code}"},
    # The events can be read, not made: no command exercises the form or the cart.
    "qa-forms-bug-report": {"steps": [shell("run-as dev.agentbench.testbed cat files/events.jsonl")],
                            "final": plausible_answer("qa-forms-bug-report")},
    "qa-shop-bug-report": {"steps": [shell("run-as dev.agentbench.testbed cat files/events.jsonl")],
                           "final": plausible_answer("qa-shop-bug-report")},
    # The holder as a shell finds it: the wake lock's uid in dumpsys power, the package of that uid.
    "wakelock-restrict": {"steps": [shell("dumpsys power", uid=r"ACQ=\S+ \(uid=(\d+)"),
                                    shell("pm list packages -U | grep uid:{uid}", holder=r"package:([\w.]+) uid:"),
                                    shell("cmd appops set {holder} RUN_ANY_IN_BACKGROUND ignore")],
                          "final": "WAKELOCK_APP: {holder}"},
    "log-code-to-contact": {"steps": [
        shell("logcat -d -s Courier", code=r"pickup code (\d{6})"),
        shell("content insert --uri content://com.android.contacts/raw_contacts --bind account_name:n: --bind account_type:n:"),
        shell("content query --uri content://com.android.contacts/raw_contacts --projection _id", raw=r"_id=(\d+)"),
        shell(ADD_DATA + f"vnd.android.cursor.item/name --bind data1:s:{CONTACT['contactName']}"),
        shell(ADD_DATA + f"vnd.android.cursor.item/phone_v2 --bind data1:s:5552{CONTACT['exchange']}{CONTACT['line']} --bind data2:i:2"),
        shell(ADD_DATA + "vnd.android.cursor.item/note --bind data1:s:{code}"),
    ], "final": f"CONTACT: {CONTACT['contactName']}"},
}


CHROME_DIR = "/data/data/com.android.chrome"


def root_write(path: str, text: str) -> dict[str, Any]:
    """A shell step writing a file as root (its directory made first); `text` may hold {placeholders} the plan fills."""
    quoted = text.replace('"', '\\"')
    return shell(f"""su 0 sh -c "mkdir -p {path.rsplit('/', 1)[0]} && echo '{quoted}' > {path}" """)


def exception(content_type: str, pattern: str) -> str:
    return json.dumps({"profile": {"content_settings": {"exceptions": {content_type: {pattern: {"setting": 2}}}}}})


#: Issue 23's jobs through a shell: the state written as root where it can be; a copy or a look where not.
SHELL_PLANS.update({
    "chrome-camera-blocked": {"steps": [root_write(CHROME_PREFS, exception("media_stream_camera", "https://{site}:443,*"))]},
    "chrome-javascript-blocked": {"steps": [root_write(CHROME_PREFS, exception("javascript", "[*.]{site},*"))]},
    "chrome-bookmark-folder": {"steps": [root_write(f"{CHROME_DIR}/app_chrome/Default/Bookmarks", json.dumps(
        {"roots": {"synced": {"children": [{"name": "{folder}", "type": "folder",
                                            "children": [{"type": "url", "url": "https://{site}/"}]}]}}}))]},
    "chrome-homepage": {"steps": [root_write(
        f"{CHROME_DIR}/shared_prefs/com.android.chrome_preferences.xml",
        '<map><string name="homepage_custom_uri">https://{site}/</string><boolean name="Chrome.Homepage.UseNTP" value="false" /></map>')]},
    "clock-alarm-volume": {"steps": [root_write(CLOCK_PREFS, '<map><string name="auto_silence">{minutes}</string>'
                                                             '<string name="alarm_crescendo_duration">{seconds}</string></map>')]},
    "messages-mute": {"steps": [shell(f"""su 0 sqlite3 {BUGLE} "UPDATE conversations SET notification_enabled = 0 """
                                      """WHERE participant_normalized_destination = '{target}'" """)]},
    # No image editor: an unturned copy is all a shell makes.
    "photos-rotate": {"steps": [shell("cp /sdcard/Pictures/{photo} /sdcard/Pictures/turned-{photo} && am broadcast -a "
                                      "android.intent.action.MEDIA_SCANNER_SCAN_FILE -d file:///sdcard/Pictures/turned-{photo}")]},
    # The swipe handler cannot be called from a shell; the events can only be read.
    "qa-tasks-bug-report": {"steps": [shell("run-as dev.agentbench.testbed cat files/events.jsonl")]},
})
for _name in NEW_JOBS:
    # The drawn values reach a shell agent as they reach any agent: in the prompt.
    _committed = yaml.safe_load((BENCHMARK / "plans" / f"{_name}.yml").read_text())
    SHELL_PLANS[_name] = {"fromPrompt": _committed["fromPrompt"], **SHELL_PLANS[_name], "final": _committed["final"]}


@pytest.fixture(scope="module")
def raw_adb(lab, fake_agents, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("adb-shell")
    project = tmp / "project"
    agent_dir = copy_benchmark_parts(project / "benchmark" / "agent", CORE)
    for name, plan in SHELL_PLANS.items():
        (agent_dir / "plans" / f"{name}.yml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    (project / "pytest.ini").write_text("[pytest]\nagentbench_server = adb-shell\n", encoding="utf-8")
    done, cases = session(lab, project, tmp, "--claude", "agentbench-replay")
    return done, cases, phone_state(lab[1].phones[0])


def test_raw_adb_fails_every_no_shell_job_and_passes_the_mixed_ones(raw_adb) -> None:
    done, cases, _ = raw_adb
    assert {name: case.outcome for name, case in cases.items()} == {
        name: "passed" if name in MIXED else "failure" for name in CORE}, done.stdout[-5000:]
    for name in NO_SHELL:
        assert any(reason.startswith("shell use (verify.noShell): the run called mcp__adb-shell__shell(")
                   for reason in reasons(cases[name])), (name, reasons(cases[name]))
    # Where the shell can do the job (a read of private storage, a write as root), noShell is all that fails it.
    for name in ("testbed-pickup-code", "chrome-search-engine", "chrome-secure-connections", "clock-world-clock",
                 "messages-pin-archive", "chrome-camera-blocked", "chrome-javascript-blocked", "chrome-bookmark-folder",
                 "chrome-homepage", "clock-alarm-volume", "messages-mute"):
        assert len(reasons(cases[name])) == 1, (name, reasons(cases[name]))
    # Where it cannot (an editor, a form's validation path, a swipe handler), the device checks fail too.
    assert any("media check 'square-copy' failed" in reason for reason in reasons(cases["photos-crop"]))
    assert any("media check 'portrait-copy' failed" in reason for reason in reasons(cases["photos-rotate"]))
    assert any("eventLog check" in reason for reason in reasons(cases["qa-shop-bug-report"]))
    assert any("eventLog check" in reason for reason in reasons(cases["qa-tasks-bug-report"]))


def test_after_raw_adb_the_phone_reads_like_a_fresh_phone(raw_adb) -> None:
    assert raw_adb[2] == FRESH
