"""Pure tables for the check kinds that read providers and services (content, appops, media) and the report check."""

from __future__ import annotations

import pytest
from checkcases import fail, judge, ok, rows_output

from pytest_agentbench.checks.provider import parse_rows, provider_error
from pytest_agentbench.checks.report import split_sentences

PHONES = "content://com.android.contacts/data/phones"
CONTACT = {"kind": "content", "name": "saved", "uri": PHONES, "projection": ["display_name", "data1"],
           "match": {"display_name": "Pickup 4821", "data1": {"digits": "555-123-0001"}}}


def contacts(*rows: tuple[str, str | None]) -> str:
    return rows_output(["display_name", "data1"], [list(row) for row in rows])


@pytest.mark.parametrize(
    ("entry", "before", "after", "passed", "seen"),
    [
        # Seed 001: the Contacts editor may add a +1; phone numbers compare by their digit suffix.
        (CONTACT, None, contacts(("Pickup 4821", "+1 555-123-0001")), True, "1 matching"),
        (CONTACT, None, contacts(("Pickup 4821", "(555) 123-0001")), True, "1 matching"),
        (CONTACT, None, contacts(("Pickup 4821", "+1 555-123-0002")), False, "0 matching"),
        (CONTACT, None, contacts(("Pickup 4820", "+1 555-123-0001")), False, "0 matching"),
        (CONTACT, None, contacts(("Pickup 4821", None)), False, "0 matching"),
        (CONTACT, None, "No result found.\n", False, "0 rows, 0 matching"),
        # `new`: a contact that was there before the run does not count.
        ({**CONTACT, "new": True}, contacts(("Pickup 4821", "+15551230001")), contacts(("Pickup 4821", "+15551230001")),
         False, "0 new rows"),
        ({**CONTACT, "new": True}, contacts(("Alice", "1")), contacts(("Alice", "1"), ("Pickup 4821", "+15551230001")),
         True, "1 new row, 1 matching"),
        # `count`: exactly one, so a duplicate fails (the whole difference is judged).
        ({**CONTACT, "new": True, "count": 1}, "No result found.\n",
         contacts(("Pickup 4821", "+15551230001"), ("Pickup 4821", "5551230001")), False, "2 new rows, 2 matching"),
        ({**CONTACT, "match": {"data1": {"exists": False}}}, None, contacts(("Nobody", None)), True, "1 matching"),
        ({**CONTACT, "match": {"display_name": {"contains": "4821"}}}, None, contacts(("Pickup 4821", "1")), True, "1 matching"),
        ({"kind": "content", "name": "wifi", "uri": "content://settings/global", "projection": ["name", "value"],
          "where": "name='wifi_on'", "match": {"value": 1}}, None, rows_output(["name", "value"], [["wifi_on", "1"]]),
         True, "1 matching"),
    ],
    ids=["plus-one", "formatted", "other-number", "other-name", "no-number", "no-rows", "not-new", "new", "duplicate",
         "absent", "contains", "setting-as-text"],
)
def test_content(entry: dict, before: str | None, after: str, passed: bool, seen: str) -> None:
    check = judge(entry, [ok(after)], [ok(before)] if before is not None else None)
    assert check.passed is passed and seen in check.seen, check


ABSENT = ("Error while accessing provider:com.android.contacts\njava.lang.IllegalStateException: Could not find provider: "
          "com.android.contacts\n\tat android.os.Parcel.createExceptionOrNull(Parcel.java:3057)\n")
BAD_COLUMN = ("Error while accessing provider:com.android.contacts\njava.lang.IllegalArgumentException: Invalid column data9\n"
              "\tat android.os.Parcel.createExceptionOrNull(Parcel.java:3057)\n")
DENIED = ("Error while accessing provider:sms\njava.lang.SecurityException: Permission Denial: reading "
          "com.android.providers.telephony.SmsProvider uri content://sms requires android.permission.READ_SMS\n")


@pytest.mark.parametrize(
    ("output", "says"),
    [
        (ABSENT, "the content provider com.android.contacts is not on this device"),
        (BAD_COLUMN, "the content provider com.android.contacts failed: IllegalArgumentException: Invalid column data9"),
        (DENIED, "failed: SecurityException: Permission Denial"),
        ("usage: adb shell content [subcommand] [options]\n[ERROR] Unsupported operation: qurey\n", "refused the query"),
        ("Row: 0 display_name=Alice\n", "does not parse"),
    ],
    ids=["provider-absent", "invalid-column", "permission", "usage", "wrong-projection"],
)
def test_content_provider_failure_is_a_failed_check(output: str, says: str) -> None:
    check = judge(CONTACT, [ok(output)])
    assert not check.passed and says in check.seen, check.seen


def test_content_with_new_needs_a_readable_before_snapshot() -> None:
    check = judge({**CONTACT, "new": True}, [ok(contacts(("Pickup 4821", "15551230001")))], [ok(ABSENT)])
    assert not check.passed and "new rows cannot be told apart: before the run, the content provider" in check.seen


@pytest.mark.parametrize(
    ("text", "columns", "rows"),
    [
        ("No result found.\n", ["a"], []),
        ("Row: 0 _id=1, body=Hello, there, address=+1555\n", ["_id", "body", "address"],
         [{"_id": "1", "body": "Hello, there", "address": "+1555"}]),
        ("Row: 0 _id=2, body=line one\nline two, address=NULL\nRow: 1 _id=3, body=, address=x\n", ["_id", "body", "address"],
         [{"_id": "2", "body": "line one\nline two", "address": None}, {"_id": "3", "body": "", "address": "x"}]),
    ],
    ids=["none", "comma-in-value", "newline-null-empty"],
)
def test_content_rows_parse_with_the_projection_known(text: str, columns: list[str], rows: list[dict]) -> None:
    assert parse_rows(text, columns) == rows
    assert provider_error(text) is None


OP = "RUN_ANY_IN_BACKGROUND"
TESTBED = "com.example.testbed"
RESTRICT = {"kind": "appops", "name": "restricted", "op": OP, "package": TESTBED}


def packages(*names: str) -> str:
    return "".join(f"{name}\n" for name in names) or "No operations.\n"


@pytest.mark.parametrize(
    ("before", "after", "passed", "seen"),
    [
        # Seed 001: RUN_ANY_IN_BACKGROUND against a baseline; passes only if the testbed alone is newly restricted.
        (packages(), packages(TESTBED), True, f"after: {TESTBED}"),
        (packages("com.other"), packages("com.other", TESTBED), True, "before: com.other"),
        (packages(TESTBED), packages(TESTBED), False, f"{TESTBED} was already in mode ignore before the run"),
        (packages(), packages(), False, f"{TESTBED} is not in mode ignore"),
        (packages(), packages(TESTBED, "com.wakelock"), False, "also newly in mode ignore: com.wakelock"),
        (packages("com.other"), packages(TESTBED), False, "no longer in mode ignore: com.other"),
    ],
    ids=["newly-restricted", "others-unchanged", "already-restricted", "not-restricted", "another-too", "another-released"],
)
def test_appops_exactly_the_named_package_newly_restricted(before: str, after: str, passed: bool, seen: str) -> None:
    check = judge(RESTRICT, [ok(after)], [ok(before)])
    assert check.passed is passed and seen in check.seen, check


def test_appops_errors_and_missing_before() -> None:
    unknown = fail("Error: Unknown operation string: RUN_ANY\n", 255)
    assert "Unknown operation string" in judge(RESTRICT, [unknown], [unknown]).seen
    assert "there is no snapshot before the run" in judge(RESTRICT, [ok(packages(TESTBED))]).seen


MEDIA_COLUMNS = ["_id", "_display_name", "_data", "width", "height"]
CROP = {"kind": "media", "name": "cropped", "original": {"displayName": "beach.png", "width": 1200},
        "added": {"count": 1, "square": True, "maxSide": 800}}


def images(*rows: tuple[int, str, int, int]) -> str:
    return rows_output(MEDIA_COLUMNS, [[str(i), name, f"/storage/emulated/0/Pictures/{name}", str(w), str(h)]
                                        for i, name, w, h in rows])


BEACH = (1, "beach.png", 1200, 900)


@pytest.mark.parametrize(
    ("before", "after", "passed", "seen"),
    [
        # Seed 001: the original still 1200 wide, a new image square and at most 800 px, within 1 px.
        (images(BEACH), images(BEACH, (2, "crop.png", 800, 800)), True, "crop.png 800x800"),
        (images(BEACH), images(BEACH, (2, "crop.png", 801, 800)), True, "801x800"),
        (images(BEACH), images(BEACH, (2, "crop.png", 801, 801)), True, "801x801"),
        (images(BEACH), images(BEACH, (2, "crop.png", 802, 802)), False, "larger than 800 px"),
        (images(BEACH), images(BEACH, (2, "crop.png", 800, 700)), False, "not square"),
        # The editor overwrote the original instead of saving a copy.
        (images(BEACH), images((1, "beach.png", 800, 800)), False, "is now 800x800, not 1200 wide"),
        (images(BEACH), images((2, "crop.png", 800, 800)), False, "the original beach.png was deleted"),
        (images(BEACH), images(BEACH), False, "0 images added, not 1"),
        (images(BEACH), images(BEACH, (2, "a.png", 500, 500), (3, "b.png", 500, 500)), False, "2 images added, not 1"),
        (images(), images((2, "crop.png", 800, 800)), False, "not in MediaStore before the run (was it seeded?)"),
        (images(BEACH, (5, "other.png", 10, 10)), images(BEACH, (6, "crop.png", 800, 800)), False, "images deleted during the run: other.png"),
    ],
    ids=["square", "one-px-off", "one-px-over", "two-px-over", "not-square", "original-overwritten", "original-deleted",
         "nothing-added", "two-added", "original-not-seeded", "another-deleted"],
)
def test_media_crop(before: str, after: str, passed: bool, seen: str) -> None:
    check = judge(CROP, [ok(after)], [ok(before)])
    assert check.passed is passed and seen in check.seen, check


ROTATED = {"kind": "media", "name": "rotated", "original": {"displayName": "beach.png", "width": 1200, "height": 900},
           "added": {"count": 1, "width": 900, "height": 1200}}


@pytest.mark.parametrize(
    ("after", "passed", "seen"),
    [
        (images(BEACH, (2, "beach-edited.png", 900, 1200)), True, "beach-edited.png 900x1200"),
        (images(BEACH, (2, "beach-edited.png", 901, 1199)), True, "901x1199"),
        # A copy saved without the rotation, or rotated twice (upside down): the size of the original.
        (images(BEACH, (2, "beach-edited.png", 1200, 900)), False, "is 1200x900, not 900x1200"),
        (images(BEACH, (2, "beach-edited.png", 902, 1200)), False, "not 900x1200"),
        # Rotated in place (Save): the original is no longer 1200 wide, and nothing was added.
        (images((1, "beach.png", 900, 1200)), False, "is now 900x1200, not 1200 wide"),
    ],
    ids=["rotated", "one-px-off", "unrotated", "two-px-off", "rotated-in-place"],
)
def test_media_exact_size_of_a_rotated_copy(after: str, passed: bool, seen: str) -> None:
    check = judge(ROTATED, [ok(after)], [ok(images(BEACH))])
    assert check.passed is passed and seen in check.seen, check


def test_media_provider_absent_fails_with_a_sentence() -> None:
    absent = ok("Error while accessing provider:media\njava.lang.IllegalStateException: Could not find provider: media\n")
    check = judge(CROP, [absent], [absent])
    assert not check.passed and "before the run: the content provider media is not on this device" in check.seen


SHOP = {"kind": "report", "name": "shop", "bugs": [
    {"name": "stale-total", "patterns": ["total", "decreas|fewer|lower", r"\$?36\.00"]},
    {"name": "flat-discount", "patterns": ["discount", r"flat|10\.00"]},
], "minFound": 2}


@pytest.mark.parametrize(
    ("answer", "passed", "seen"),
    [
        # Seed 001: the splitter cut at the decimal point in $36.00, so a correct report failed.
        ("After I decreased the quantity the total stayed at $36.00. The discount takes a flat 10.00 off.", True,
         "found stale-total"),
        ("Bugs:\n- The total still shows $36.00 after I decreased the quantity\n- A flat discount of 10.00 is applied", True,
         "found flat-discount"),
        ("After I decreased the quantity the total stayed at $36.00.", False, "1 of 2 found, 2 needed"),
        # Patterns must meet in one sentence: scattered words do not report a bug.
        ("I decreased the quantity. The total is $36.00. A discount exists. It is flat.", False, "0 of 2 found"),
        ("Everything works.", False, "no planted bug found"),
        ("", False, "the agent gave no final answer"),
    ],
    ids=["decimal-point-is-not-a-sentence-end", "bullets", "one-of-two", "words-in-separate-sentences", "nothing", "no-answer"],
)
def test_report(answer: str, passed: bool, seen: str) -> None:
    check = judge(SHOP, [], answer=answer)
    assert check.passed is passed and seen in check.seen, check


def test_report_min_found_lets_a_report_miss_some() -> None:
    check = judge({**SHOP, "minFound": 1}, [], answer="The discount takes a flat 10.00.")
    assert check.passed and "not found: stale-total" in check.seen


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Total is $36.00. Then it is $31.50.", ["Total is $36.00.", "Then it is $31.50."]),
        ("Version 1.2.3 broke it.\nNext line", ["Version 1.2.3 broke it.", "Next line"]),
        ("Wait! Really? Yes.", ["Wait!", "Really?", "Yes."]),
    ],
    ids=["decimals", "versions-and-lines", "marks"],
)
def test_sentences_split_at_a_full_stop_and_a_space_or_newline(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


COURIER = {"kind": "content", "name": "code-in-contact", "uri": "content://com.android.contacts/data",
           "projection": ["mimetype", "data1"], "new": True,
           "match": {"mimetype": "vnd.android.cursor.item/note",
                     "data1": {"token": {"fromPrefs": {"package": "dev.agentbench.testbed", "file": "testbed", "key": "courier_code"}}}}}
TESTBED_PREFS = '<map>\n<string name="courier_code">731905</string>\n</map>\n'


def notes(*texts: str) -> str:
    return rows_output(["mimetype", "data1"], [["vnd.android.cursor.item/note", text] for text in texts])


@pytest.mark.parametrize(
    ("prefs", "after", "passed", "seen"),
    [
        # The code is random per run: the check reads it from the testbed, never from the suite.
        (ok(TESTBED_PREFS), notes("Courier code 731905"), True, "1 matching"),
        (ok(TESTBED_PREFS), notes("Courier code 123456"), False, "0 matching"),
        (fail("cat: /data/data/dev.agentbench.testbed/shared_prefs/testbed.xml: No such file or directory\n"),
         notes("Courier code 731905"), False, "the value data1 is compared with could not be read: the preferences file"),
        (ok("<map />"), notes("x"), False, "has no courier_code"),
    ],
    ids=["code-carried", "other-code", "prefs-missing", "key-missing"],
)
def test_content_compares_with_a_value_read_from_another_app(prefs, after: str, passed: bool, seen: str) -> None:
    check = judge(COURIER, [ok(after), prefs], [ok(notes()), prefs])
    assert check.passed is passed and seen in check.seen, check
    assert "has the courier_code in /data/data/dev.agentbench.testbed/shared_prefs/testbed.xml as one token" in check.expected
