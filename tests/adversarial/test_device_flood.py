"""Floods of device-side text -> the device checks must fail them with a sentence; honest values pass (issue 28 C).

`log-code-to-contact` once passed with a de Bruijn sequence typed into the contact's notes: 1 MB
that holds every six-digit code, so `contains` found the run's courier code without the agent
reading the log. A value random per run or per instance now matches only whole or as one delimited
`token` of a field no longer than the check allows, and the suite loader refuses `contains` and
`matches` for such values. Here:

* the committed `log-code-to-contact` judged on a simulated phone whose Contacts hold the flood
  (read through the same batched adb read a run makes), and on a note listing candidate codes;
* the committed `clock-world-clock` judged on a list of every world clock;
* a flood in each other field kind a matcher reads (a preference value, a JSON value, a provider
  column, an event log field, a phone number);
* the loader refusing each substring matcher with a random value, naming the file, the key and
  what is allowed;

and the honest values beside each (a note `Pickup code 731905`, the one city added) passing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from checkcases import blob, database, judge, ok, prefs_xml, rows_output  # noqa: E402
from fakeagents import BENCHMARK  # noqa: E402
from phoneadb import PhoneAdb  # noqa: E402
from suitefiles import suite_with, write_suite  # noqa: E402

from pytest_agentbench.checks import CheckContext, evaluate  # noqa: E402
from pytest_agentbench.checks.read import read_device  # noqa: E402
from pytest_agentbench.errors import SuiteError  # noqa: E402
from pytest_agentbench.sim.phone import Phone  # noqa: E402
from pytest_agentbench.suite import load_suite  # noqa: E402
from pytest_agentbench.suite.instance import instantiate  # noqa: E402

TESTBED = "dev.agentbench.testbed"
NOTE = "vnd.android.cursor.item/note"
NAME = "vnd.android.cursor.item/name"


def de_bruijn(alphabet: str, n: int) -> str:
    """The shortest text holding every length-n word over the alphabet (linear: the first n-1 characters repeated at the end)."""
    k = len(alphabet)
    a = [0] * k * n
    sequence: list[int] = []

    def db(t: int, p: int) -> None:
        if t > n:
            if n % p == 0:
                sequence.extend(a[1:p + 1])
        else:
            a[t] = a[t - p]
            db(t + 1, p)
            for j in range(a[t - p] + 1, k):
                a[t] = j
                db(t + 1, t)

    db(1, 1)
    text = "".join(alphabet[i] for i in sequence)
    return text + text[: n - 1]


#: Every six-digit code, 1,000,005 characters: the note the issue saw pass.
EVERY_CODE = de_bruijn("0123456789", 6)


def committed(name: str):
    """The committed suite's first instance (seed 0, r1), as a run judges it."""
    return instantiate(load_suite(BENCHMARK / "suites" / f"{name}.yml", BENCHMARK.parents[1]), seed=0, repeat=1)


def test_the_flood_holds_every_six_digit_code() -> None:
    assert len(EVERY_CODE) == 10**6 + 5
    assert all(f"{code:06d}" in EVERY_CODE for code in (0, 731905, 999999, 123456))


# ----------------------------------------------------------------------------- log-code-to-contact on a phone


def _save_contact(phone: Phone, name: str, note: str) -> None:
    """A contact saved with a note, as the Contacts editor (or `content insert`) leaves it."""
    uri = phone.content_insert("content://com.android.contacts/raw_contacts", {"account_name": None, "account_type": None})
    raw_id = int(str(uri).rsplit("/", 1)[-1])
    for mimetype, value in ((NAME, name), (NOTE, note)):
        phone.content_insert("content://com.android.contacts/data", {"raw_contact_id": raw_id, "mimetype": mimetype, "data1": value})


def _judge_on_phone(note_of: Any) -> tuple[Any, str]:
    """log-code-to-contact's code check, read off a simulated phone before and after a contact is saved with `note_of(code)`."""
    suite = committed("log-code-to-contact")
    (check,) = [check for check in suite.verify.device_checks if check.name == "code-in-contact"]
    phone = Phone()
    phone.launch(TESTBED)  # the testbed draws this run's courier code on its first start
    code = str(phone.context(TESTBED).prefs("testbed")["courier_code"])
    adb = PhoneAdb(phone)
    before = read_device(adb, "sim", check.reads()).reads
    _save_contact(phone, suite.instance.values["contactName"], note_of(code))
    after = read_device(adb, "sim", check.reads()).reads
    (result,) = evaluate([check], before, after, CheckContext(answer=f"CONTACT: {suite.instance.values['contactName']}"))
    return result, code


def test_a_note_holding_every_six_digit_code_fails_with_a_sentence() -> None:
    result, _code = _judge_on_phone(lambda code: EVERY_CODE)
    assert not result.passed, result
    assert "the field is 1,000,005 characters long, over the 256" in result.seen, result.seen


def test_a_note_listing_candidate_codes_fails_with_a_sentence() -> None:
    result, code = _judge_on_phone(lambda code: f"Maybe 100000, 100001 or {code}")
    assert not result.passed, result
    assert "other values shaped like it ('100000', '100001'): a list of candidates is not an answer" in result.seen


@pytest.mark.parametrize("note", ["{code}", "Pickup code {code}", "Courier pickup code: {code} (parcel AB-1234)"],
                         ids=["the-code", "in-a-sentence", "with-the-parcel"])
def test_the_honest_note_passes(note: str) -> None:
    result, _code = _judge_on_phone(lambda code: note.format(code=code))
    assert result.passed, result


# ----------------------------------------------------------------------------- clock-world-clock: a flood of world clocks


def _world_clocks(*ids: str) -> str:
    items = [f'<string name="city_id_{index}">{city}</string>' for index, city in enumerate(ids)]
    return prefs_xml(f'<int name="number_of_cities" value="{len(ids)}" />', *items)


def _city_check() -> dict[str, Any]:
    suite = committed("clock-world-clock")
    entry = next(entry for entry in suite.verify.device if entry["name"] == "city-world-clock")
    return entry, suite.instance.values["cityId"]


def test_every_world_clock_added_fails_with_a_sentence() -> None:
    entry, city = _city_check()
    every = [f"C{number}" for number in range(1, 31)]
    check = judge(entry, [ok(_world_clocks(*every))])
    assert not check.passed and "other values shaped like it" in check.seen, check


def test_the_one_city_added_passes() -> None:
    entry, city = _city_check()
    assert judge(entry, [ok(_world_clocks(city))]).passed


# ----------------------------------------------------------------------------- a flood in every field a matcher reads

SEQUENCE_LIMITED = "ABC-" + "".join(f"{n:04d} " for n in range(60))  # 304 characters: over the limit, every 4-digit code below 60
PREFS_ENTRY = {"kind": "sharedPreferences", "name": "code", "package": TESTBED, "file": "testbed", "key": "saved", "token": "0042"}
JSON_ENTRY = {"kind": "jsonFile", "name": "code", "package": TESTBED, "file": "files/state.json", "path": "note", "token": "0042"}
EVENT_ENTRY = {"kind": "eventLog", "name": "code", "package": TESTBED, "sequence": [{"event": "saved", "note": {"token": "0042"}}]}
PHONE_ENTRY = {"kind": "content", "name": "number", "uri": "content://com.android.contacts/data/phones",
               "projection": ["data1"], "match": {"data1": {"digits": "5552341234"}}}


def _prefs(value: str) -> list:
    return [ok(prefs_xml(f'<string name="saved">{value}</string>'))]


def _json(value: str) -> list:
    return [ok(json.dumps({"note": value}))]


def _events(value: str) -> tuple[list, list]:
    return [ok(json.dumps({"ts": 2, "event": "saved", "note": value}) + "\n")], [ok("")]


@pytest.mark.parametrize(
    ("entry", "flood", "honest", "sentence"),
    [
        (PREFS_ENTRY, _prefs(EVERY_CODE), _prefs("code 0042"), "characters long, over the 256"),
        (PREFS_ENTRY, _prefs(SEQUENCE_LIMITED), _prefs("0042"), "the field is 304 characters long"),
        (JSON_ENTRY, _json(EVERY_CODE), _json("saved 0042."), "characters long, over the 256"),
        (JSON_ENTRY, _json("0041 0042 0043"), _json("0042"), "a list of candidates is not an answer"),
        (EVENT_ENTRY, _events(EVERY_CODE), _events("0042"), "its note: the field is 1,000,005 characters long"),
        (PHONE_ENTRY, [ok(rows_output(["data1"], [["1" * 40 + "5552341234"]]))], [ok(rows_output(["data1"], [["+1 555-234-1234"]]))],
         "the field holds 50 digits; a phone number has at most 15"),
    ],
    ids=["prefs-de-bruijn", "prefs-over-the-limit", "json-de-bruijn", "json-candidates", "event-de-bruijn", "phone-digits"],
)
def test_a_flood_in_any_field_fails_with_a_sentence_and_the_honest_value_passes(entry, flood, honest, sentence: str) -> None:
    if entry["kind"] == "eventLog":
        (flood_after, before), (honest_after, _) = flood, honest
        flooded, fair = judge(entry, flood_after, before), judge(entry, honest_after, before)
    else:
        flooded, fair = judge(entry, flood), judge(entry, honest)
    assert not flooded.passed and sentence in flooded.seen, flooded
    assert fair.passed, fair


# ----------------------------------------------------------------------------- the loader refuses substring matchers for random values

CONTACT_NOTE = {"kind": "content", "name": "note", "uri": "content://com.android.contacts/data", "projection": ["data1"]}


@pytest.mark.parametrize(
    ("entry", "key", "operand"),
    [
        ({**CONTACT_NOTE, "match": {"data1": {"contains": {"fromPrefs": {"package": TESTBED, "file": "testbed", "key": "courier_code"}}}}},
         "verify.device[0].match.data1.contains", "its operand is read from the device (fromPrefs courier_code), a value random per run"),
        ({**CONTACT_NOTE, "match": {"data1": {"matches": "^code {code}$"}}}, "verify.device[0].match.data1.matches",
         "its operand holds {code}, a value random per instance"),
        ({**PREFS_ENTRY, "token": None, "contains": "{code}"}, "verify.device[0].contains", "its operand holds {code}"),
        ({"kind": "jsonFile", "name": "j", "package": TESTBED, "file": "f.json", "anyOf": [{"path": "a", "equals": 1}, {"path": "b", "matches": "x{code}"}]},
         "verify.device[0].anyOf[1].matches", "its operand holds {code}"),
        ({**EVENT_ENTRY, "sequence": [{"event": "saved", "note": {"contains": "{code}"}}]}, "verify.device[0].sequence[0].note.contains",
         "its operand holds {code}"),
    ],
    ids=["content-from-prefs", "content-param-regex", "prefs-contains", "json-any-of-regex", "event-contains"],
)
def test_the_loader_refuses_a_substring_matcher_for_a_random_value(tmp_path: Path, entry: dict, key: str, operand: str) -> None:
    entry = {name: value for name, value in entry.items() if value is not None}
    path = write_suite(tmp_path, {**suite_with(device=[entry]), "params": {"code": {"type": "code", "pattern": "####"}}})
    with pytest.raises(SuiteError) as refused:
        load_suite(path, tmp_path)
    text = str(refused.value)
    assert path.name in text and f"{key}: {operand}" in text, text
    assert "must match a whole field or one delimited token: use equals, token, digits or inAnswer" in text, text


def test_the_loader_keeps_fixed_values_and_whole_matchers(tmp_path: Path) -> None:
    # A value the suite fixes may still be searched for; a random one may be matched whole or as a token.
    device = [{**CONTACT_NOTE, "match": {"data1": {"contains": "Pickup"}}},
              {**PREFS_ENTRY, "token": "{code}"},
              {**JSON_ENTRY, "name": "json-code", "token": None, "equals": "{code}"}]
    device = [{name: value for name, value in entry.items() if value is not None} for entry in device]
    path = write_suite(tmp_path, {**suite_with(device=device), "params": {"code": {"type": "code", "pattern": "####"}}})
    assert load_suite(path, tmp_path).verify.device_checks


# ----------------------------------------------------------------------------- floods over records: one candidate per record
# A flood split over records passes every per-field rule: a million contacts each holding one code,
# every thread muted, the step logged once per value, a camera blocked for every site. A check whose
# value is random now fails when the records where the rest of it holds also hold another value the
# instance could have drawn (or, for a value with a digit, another value of its shape). Each flood
# below passed before that rule; each honest run beside it passes.

PHONE = "vnd.android.cursor.item/phone_v2"


def _contacts(phone: Phone, contacts: list[dict[str, str]]) -> None:
    """Many contacts at once, as `content insert` leaves them (one provider transaction: the sim's inserts one by one are slow)."""
    from pytest_agentbench.sim.providers.contacts import insert_data, insert_raw_contact

    provider = phone.providers["com.android.contacts"]
    with provider.connect(phone) as connection:
        for contact in contacts:
            raw_id = insert_raw_contact(connection, {})
            for mimetype, value in ((NAME, contact.get("name")), (PHONE, contact.get("number")), (NOTE, contact.get("note"))):
                if value is not None:
                    insert_data(connection, {"raw_contact_id": raw_id, "mimetype": mimetype, "data1": value})


def _log_code_checks(contacts_of: Any) -> dict[str, Any]:
    """log-code-to-contact's two checks, read off a simulated phone before and after `contacts_of(name, number, code)` are saved."""
    suite = committed("log-code-to-contact")
    checks = suite.verify.device_checks
    phone = Phone()
    phone.launch(TESTBED)
    code = str(phone.context(TESTBED).prefs("testbed")["courier_code"])
    values = suite.instance.values
    number = f"5552{values['exchange']}{values['line']}"
    adb = PhoneAdb(phone)
    reads = tuple(read for check in checks for read in check.reads())
    before = read_device(adb, "sim", reads).reads
    _contacts(phone, contacts_of(values["contactName"], number, code))
    after = read_device(adb, "sim", reads).reads
    results = evaluate(list(checks), before, after, CheckContext(answer=f"CONTACT: {values['contactName']}"))
    return {result.name: result for result in results}


def test_the_code_split_over_a_thousand_contacts_fails_with_a_sentence() -> None:
    # One code per contact, the run's among them, every contact with the drawn name: each note passes the per-field rule.
    results = _log_code_checks(lambda name, number, code: [
        {"name": name, "number": number if index == 0 else None, "note": code if index == 417 else f"{(index * 7919) % 10**6:06d}"}
        for index in range(1000)])
    assert results["courier-number"].passed, results["courier-number"]
    flooded = results["code-in-contact"]
    assert not flooded.passed, flooded
    assert flooded.seen.startswith("1,000 new rows held candidate values of data1 (999 other than the one wanted: "), flooded.seen


def test_every_number_split_over_contacts_fails_the_number_check() -> None:
    # count: 1 counts the matching rows, not the candidates: one right number among 1,000 matched exactly once.
    # The drawn line is 1###: numbers ending 000 to 999 hold it once, the code noted on one contact only.
    results = _log_code_checks(lambda name, number, code: [
        {"name": name, "number": number[:-3] + f"{index:03d}", "note": code if index == 0 else None} for index in range(1000)])
    flooded = results["courier-number"]
    assert not flooded.passed, flooded
    assert "new rows held candidate values of data1" in flooded.seen and "other than the one wanted" in flooded.seen, flooded.seen


def test_the_same_names_flooded_over_contacts_fail() -> None:
    # The drawn name is one of eight: a contact under each name, each with the number, leaves the check no one contact.
    names = ["Courier", "Depot", "Dispatch", "Locker", "Parcels", "Porter", "Delivery", "Carrier"]
    results = _log_code_checks(lambda name, number, code: [{"name": other, "number": number, "note": code} for other in names])
    assert not results["courier-number"].passed
    assert "held candidate values of display_name (7 other than the one wanted" in results["courier-number"].seen


@pytest.mark.parametrize(
    "contacts_of",
    [
        lambda name, number, code: [{"name": name, "number": number, "note": f"Pickup code {code}"}],
        # Another contact of the phone's owner, with its own number and a note that holds a number too.
        lambda name, number, code: [{"name": name, "number": "+1 " + number, "note": code},
                                    {"name": "Mum", "number": "+44 20 7946 0000", "note": "gate code 246810"}],
        # Saved under the drawn name with the code in a sentence, the number written as the editor writes it.
        lambda name, number, code: [{"name": name, "number": f"({number[:3]}) {number[3:6]}-{number[6:]}",
                                     "note": f"Courier pickup code: {code} (parcel AB-1234)"}],
    ],
    ids=["one-contact", "and-another-contact", "formatted"],
)
def test_an_honest_contact_passes_both_checks(contacts_of) -> None:
    results = _log_code_checks(contacts_of)
    assert all(result.passed for result in results.values()), results


def _instance_check(tmp_path: Path, entry: dict[str, Any], params: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A suite with params and one check, instantiated as a run instantiates it (seed 0, r1): its typed check and drawn values."""
    path = write_suite(tmp_path, {**suite_with(device=[entry]), "params": params})
    suite = instantiate(load_suite(path, tmp_path), seed=0, repeat=1)
    (check,) = suite.verify.device_checks
    return check, dict(suite.instance.values)


def _judged(check: Any, after: list, before: list | None = None) -> Any:
    def reads(outputs: list) -> Any:
        from pytest_agentbench.checks import DeviceReads
        return DeviceReads({read.key: raw for read, raw in zip(check.reads(), outputs) if raw is not None})

    (result,) = evaluate([check], reads(before) if before is not None else None, reads(after), CheckContext())
    return result


THREADS = ["+15551230011", "+15551230012", "+15551230013"]
MUTED = {"kind": "sqlite", "name": "muted", "package": "com.google.android.apps.messaging", "database": "bugle_db",
         "query": "SELECT state, number FROM threads", "includes": [["muted", "{target}"]]}


def _threads(states: dict[str, str]) -> list:
    rows = ", ".join(f"('{state}', '{number}')" for number, state in states.items())
    return [blob(database(f"CREATE TABLE threads (state TEXT, number TEXT); INSERT INTO threads VALUES {rows};")), None, None]


def test_every_thread_muted_fails_an_includes_check(tmp_path: Path) -> None:
    check, values = _instance_check(tmp_path, MUTED, {"target": {"type": "choice", "values": THREADS}})
    flooded = _judged(check, _threads({number: "muted" for number in THREADS}))
    assert not flooded.passed, flooded
    assert flooded.seen.startswith("3 rows held candidate values of column number of [\"muted\", \"" + values["target"]), flooded.seen
    # Honest: the drawn thread muted; another pinned (another record kind) and one the instance never draws, muted by its owner.
    fair = _judged(check, _threads({values["target"]: "muted", next(n for n in THREADS if n != values["target"]): "pinned"}))
    assert fair.passed, fair


def test_the_step_logged_for_every_code_fails_an_event_log_check(tmp_path: Path) -> None:
    entry = {**EVENT_ENTRY, "sequence": [{"event": "saved", "note": "{code}"}]}
    check, values = _instance_check(tmp_path, entry, {"code": {"type": "code", "pattern": "####"}})
    every = "".join(json.dumps({"ts": n + 2, "event": "saved", "note": f"{n:04d}"}) + "\n" for n in range(10_000))
    flooded = _judged(check, [ok(every)], [ok("")])
    assert not flooded.passed, flooded
    assert flooded.seen.startswith("10,000 new events held candidate values of note in step {event: saved, note: "), flooded.seen
    # Honest: saved twice with the code, and events of another kind that carry other codes.
    events = [{"ts": 2, "event": "saved", "note": values["code"]}, {"ts": 3, "event": "opened", "note": "0000"},
              {"ts": 4, "event": "saved", "note": values["code"]}]
    fair = _judged(check, [ok("".join(json.dumps(event) + "\n" for event in events))], [ok("")])
    assert fair.passed, fair


SITES = ["en.wikipedia.org", "news.ycombinator.com", "www.bbc.co.uk", "github.com", "www.gutenberg.org", "maps.example.com"]


def _camera_exceptions(settings: dict[str, int]) -> list:
    exceptions = {f"https://{site}:443,*": {"last_modified": "13300000000000000", "setting": setting} for site, setting in settings.items()}
    return [ok(json.dumps({"profile": {"content_settings": {"exceptions": {"media_stream_camera": exceptions}}}}))]


def test_the_camera_blocked_for_every_site_fails_chrome_camera_blocked() -> None:
    suite = committed("chrome-camera-blocked")
    (check,) = suite.verify.device_checks
    flooded = _judged(check, _camera_exceptions({site: 2 for site in SITES}))
    assert not flooded.passed, flooded
    assert flooded.seen.startswith("6 keys held candidate values of the keys of profile.content_settings.exceptions."
                                   "media_stream_camera"), flooded.seen
    # Honest: the drawn site blocked; the owner's own exception for a site no instance draws; another site only asked.
    site = suite.instance.values["site"]
    fair = _judged(check, _camera_exceptions({site: 2, "meet.example.org": 2, next(s for s in SITES if s != site): 3}))
    assert fair.passed, fair


def test_every_drawn_key_set_fails_a_preference_key_check(tmp_path: Path) -> None:
    entry = {"kind": "sharedPreferences", "name": "slot", "package": TESTBED, "file": "testbed", "key": "slot_{slot}", "equals": True}
    check, values = _instance_check(tmp_path, entry, {"slot": {"type": "code", "pattern": "##"}})
    flooded = _judged(check, [ok(prefs_xml(*(f'<boolean name="slot_{n:02d}" value="true" />' for n in range(100))))])
    assert not flooded.passed and "100 keys held candidate values of the file's keys" in flooded.seen, flooded
    fair = _judged(check, [ok(prefs_xml(f'<boolean name="slot_{values["slot"]}" value="true" />', '<boolean name="slot_x" value="true" />',
                                        '<boolean name="slot_00" value="false" />' if values["slot"] != "00" else ""))])
    assert fair.passed, fair


def test_every_drawn_word_in_a_list_fails_a_token_check(tmp_path: Path) -> None:
    # A word has no shape rule (ordinary text is full of words), so before the space it was no candidate: a list of
    # every city the instance could have drawn held the drawn one.
    entry = {"kind": "sharedPreferences", "name": "cities", "package": TESTBED, "file": "testbed", "key": "cities", "token": "{city}"}
    cities = ["Tokyo", "Lisbon", "Cairo"]
    check, values = _instance_check(tmp_path, entry, {"city": {"type": "choice", "values": cities}})
    as_set = lambda *members: [ok(prefs_xml('<set name="cities">' + "".join(f"<string>{m}</string>" for m in members) + "</set>"))]  # noqa: E731
    flooded = _judged(check, as_set(*cities))
    assert not flooded.passed and "a list of candidates is not an answer" in flooded.seen, flooded
    assert _judged(check, as_set(values["city"], "Home")).passed


@pytest.mark.parametrize(
    ("suite_name", "flood"),
    [
        ("wakelock-restrict", "also newly in mode ignore"),
        ("photos-crop", "images added, not 1"),
    ],
    ids=["appops-every-package", "media-every-size"],
)
def test_kinds_that_judge_the_whole_difference_already_fail_a_flood(suite_name: str, flood: str) -> None:
    # appops wants exactly the named package newly in the mode; media exactly `count` new images, each judged:
    # neither looks for one record among many, so a flood of records fails them as it did before.
    suite = committed(suite_name)
    (check,) = suite.verify.device_checks
    if check.kind == "appops":
        holder = suite.instance.values["holder"]
        packages = "\n".join([holder, *(f"com.flood.app{n}" for n in range(50))])
        result = _judged(check, [ok(packages + "\n")], [ok("No operations.\n")])
    else:
        name = f"{suite.instance.values['photoName']}.png"
        original = ["1", name, f"/sdcard/Pictures/{name}", str(check.spec.original_width), str(check.spec.original_height)]
        sides = range(100, 900, 8)
        added = [[str(n + 2), f"crop{n}.png", f"/sdcard/Pictures/crop{n}.png", str(side), str(side)] for n, side in enumerate(sides)]
        columns = ["_id", "_display_name", "_data", "width", "height"]
        result = _judged(check, [ok(rows_output(columns, [original, *added]))], [ok(rows_output(columns, [original]))])
    assert not result.passed and flood in result.seen, result


# ----------------------------------------------------------------------------- the loader refuses a random value that picks the records


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ({**CONTACT_NOTE, "where": "data1 = '{code}'", "count": 1}, "verify.device[0].where"),
        ({**CONTACT_NOTE, "uri": "content://com.android.contacts/data/{code}"}, "verify.device[0].uri"),
        ({**MUTED, "query": "SELECT number FROM threads WHERE number = '{code}'", "includes": None, "count": 1}, "verify.device[0].query"),
        ({**MUTED, "query": None, "includes": None, "count": 1,
          "schemas": [{"tables": ["threads"], "provenOn": "a test", "query": "SELECT 1 FROM threads WHERE n = {code}"}]},
         "verify.device[0].schemas[0].query"),
        ({**JSON_ENTRY, "token": None, "path": "exceptions.site{code}.setting", "equals": 2}, "verify.device[0].path"),
        ({**PREFS_ENTRY, "key": None, "list": {"count": "n_{code}", "item": "item_"}}, "verify.device[0].list.count"),
    ],
    ids=["content-where", "content-uri", "sqlite-query", "sqlite-schema-query", "json-dotted-path", "prefs-list-key"],
)
def test_the_loader_refuses_a_random_value_that_chooses_the_records(tmp_path: Path, entry: dict, key: str) -> None:
    entry = {name: value for name, value in entry.items() if value is not None}
    path = write_suite(tmp_path, {**suite_with(device=[entry]), "params": {"code": {"type": "code", "pattern": "####"}}})
    with pytest.raises(SuiteError) as refused:
        load_suite(path, tmp_path)
    text = str(refused.value)
    assert path.name in text and f"{key}: it holds {{code}}, a value random per instance, but " in text, text


def test_the_loader_keeps_a_fixed_filter_and_a_drawn_key_in_a_list_path(tmp_path: Path) -> None:
    device = [{**CONTACT_NOTE, "where": "mimetype = 'vnd.android.cursor.item/note'", "match": {"data1": {"token": "{code}"}}},
              {**JSON_ENTRY, "token": None, "path": ["exceptions", "site{code}", "setting"], "equals": 2},
              {**MUTED, "includes": [["muted", "{code}"]]}]
    device = [{name: value for name, value in entry.items() if value is not None} for entry in device]
    device[1]["name"], device[2]["name"] = "json-key", "sqlite-cell"
    path = write_suite(tmp_path, {**suite_with(device=device), "params": {"code": {"type": "code", "pattern": "####"}}})
    assert load_suite(path, tmp_path).verify.device_checks
