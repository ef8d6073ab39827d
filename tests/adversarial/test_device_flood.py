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

from checkcases import judge, ok, prefs_xml, rows_output  # noqa: E402
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
