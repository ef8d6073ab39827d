"""Contacts (editor with +1 formatting, writing the provider) and the testbed (codes, QA flows, event log, wake lock)."""

from __future__ import annotations

import json
import re

import pytest

from pytest_agentbench.sim.apps.model import EVENT_LOG, read_shared_prefs, write_shared_prefs
from pytest_agentbench.sim.apps.testbed import PACKAGE as TESTBED, WAKE_LOCK_TAG
from pytest_agentbench.sim.phone import Phone
from pytest_agentbench.sim.phone_numbers import format_for_display, normalize_e164

from simui import BOUNDS, back, find, open_link, tap, texts, type_into

CONTACTS = "com.android.contacts"


@pytest.fixture
def phone() -> Phone:
    return Phone()


@pytest.mark.parametrize(("typed", "saved", "e164"), [
    ("5551234567", "+1 555-123-4567", "+15551234567"), ("(555) 123-4567", "+1 555-123-4567", "+15551234567"),
    ("1 555 123 4567", "+1 555-123-4567", "+15551234567"), ("+44 20 7946 0958", "+44 20 7946 0958", "+442079460958"),
    ("555-0101", "555-0101", None), ("", "", None),
])
def test_phone_number_formatting(typed: str, saved: str, e164: str | None) -> None:
    assert format_for_display(typed) == saved
    assert normalize_e164(typed) == e164


def test_create_contact_with_a_code_in_the_notes(phone: Phone) -> None:
    phone.launch(CONTACTS)
    assert "No contacts" in texts(phone)
    tap(phone, "Create contact")
    type_into(phone, "First name", "Courier")
    type_into(phone, "Phone", "5551234567")
    type_into(phone, "Company", "Parcel Lockers")
    type_into(phone, "Notes", "pickup code 123456")
    tap(phone, "Save")
    assert texts(phone)[:2] == ["Courier", "+1 555-123-4567"]
    rows = phone.content_query("content://com.android.contacts/data", ["mimetype", "data1", "data4"], sort="_id")
    assert [(row["mimetype"].rsplit("/", 1)[1], row["data1"]) for row in rows] == [
        ("name", "Courier"), ("phone_v2", "+1 555-123-4567"), ("organization", "Parcel Lockers"),
        ("note", "pickup code 123456")]
    assert rows[1]["data4"] == "+15551234567"
    shell_view = phone.shell("content query --uri content://com.android.contacts/contacts --projection display_name:has_phone_number")
    assert shell_view.stdout == b"Row: 0 display_name=Courier, has_phone_number=1\n"
    back(phone)
    assert texts(phone)[2:4] == ["Courier", "+1 555-123-4567"]


def test_edit_and_delete_a_contact(phone: Phone) -> None:
    phone.add_contact("Ada Lovelace", "5550100")
    phone.launch(CONTACTS)
    tap(phone, "Ada Lovelace")
    tap(phone, "Edit")
    type_into(phone, "Notes", "code 42")
    tap(phone, "Save")
    assert "code 42" in texts(phone)
    assert phone.content_query("content://com.android.contacts/raw_contacts", ["display_name"]) == [{"display_name": "Ada Lovelace"}]
    tap(phone, "Delete")
    assert "No contacts" in texts(phone)
    assert phone.content_query("content://com.android.contacts/contacts") == []


def test_an_empty_contact_is_not_saved(phone: Phone) -> None:
    phone.launch(CONTACTS)
    tap(phone, "Create contact")
    tap(phone, "Save")
    assert "Contact is empty: enter a name or a number" in texts(phone)
    assert phone.content_query("content://com.android.contacts/raw_contacts") == []


# Testbed.


def stored_codes(phone: Phone) -> dict:
    return read_shared_prefs(phone, TESTBED, "testbed")


def events(phone: Phone) -> list[dict]:
    data = phone.private_file(TESTBED, EVENT_LOG) or b""
    return [json.loads(line) for line in data.splitlines()]


def test_pickup_code_is_shown_stored_and_new_after_pm_clear(phone: Phone) -> None:
    open_link(phone, "agentbench://testbed/pickup")
    code = stored_codes(phone)["pickup_code"]
    assert re.fullmatch(r"\d{6}", code) and code in texts(phone)
    assert phone.shell(f"run-as {TESTBED} cat shared_prefs/testbed.xml").stdout.count(code.encode()) == 1
    assert phone.shell(f"cat /data/data/{TESTBED}/shared_prefs/testbed.xml").exit_code == 1
    codes = {code}
    for _ in range(3):
        phone.shell(f"pm clear {TESTBED}")
        open_link(phone, "agentbench://testbed/pickup")
        codes.add(stored_codes(phone)["pickup_code"])
    assert len(codes) == 4


def test_courier_code_is_only_in_logcat_and_storage(phone: Phone) -> None:
    phone.launch(TESTBED)
    code = stored_codes(phone)["courier_code"]
    assert code != stored_codes(phone)["pickup_code"]
    log = phone.shell("logcat -d -s Courier -v raw").stdout.decode()
    assert re.search(rf"^Parcel AB-\d{{4}} is ready: pickup code {code}$", log, re.M)
    tap(phone, "Pickup")
    assert code not in texts(phone)


def test_forms_flow_bugs_and_their_events(phone: Phone) -> None:
    open_link(phone, "agentbench://testbed/forms")
    type_into(phone, "Name", "Ada")
    type_into(phone, "Email", "ada@example")
    type_into(phone, "Password", "secret123")
    tap(phone, "Create")
    assert "Enter a valid email address" in texts(phone)
    type_into(phone, "ada@example", ".com")
    tap(phone, "Create")  # ignored: the planted bug
    assert texts(phone)[0] == "Create account"
    tap(phone, "Create")
    assert texts(phone)[:2] == ["Welcome", "Welcome, ada@example.co!"]
    used = [event for event in events(phone) if event["event"] != "screen_opened"]
    assert [event["event"] for event in used] == ["invalid_submit", "ignored_tap", "submit_success"]
    assert used[0]["reason"] == "email" and used[1]["button"] == "Create"
    assert (used[2]["email"], used[2]["welcome"], used[2]["welcome_email"]) == ("ada@example.com", "Welcome, ada@example.co!",
                                                                                "ada@example.co")
    assert events(phone)[-1] == {**events(phone)[-1], "event": "screen_opened", "screen": "forms/welcome"}


def test_the_forms_button_is_the_label_a_suite_wrote_and_the_ignored_tap_logs_it(phone: Phone) -> None:
    # qa-forms-bug-report draws the label per instance (preflight writes it): the report must name it.
    write_shared_prefs(phone, TESTBED, "testbed", {"form_button": "Sign up"})
    open_link(phone, "agentbench://testbed/forms")
    assert "Sign up" in texts(phone) and "Create" not in texts(phone)
    type_into(phone, "Email", "ada@example.com")
    type_into(phone, "Password", "secret123")
    tap(phone, "Sign up")
    tap(phone, "Sign up")  # ignored: the planted bug
    type_into(phone, "Name", "Ada")
    tap(phone, "Sign up")
    used = [event for event in events(phone) if event["event"] != "screen_opened"]
    assert [(event["event"], event.get("button")) for event in used] == [
        ("invalid_submit", None), ("ignored_tap", "Sign up"), ("submit_success", None)]


def test_shop_flow_stale_total_and_flat_discount(phone: Phone) -> None:
    open_link(phone, "agentbench://testbed/shop")
    for _ in range(4):
        tap(phone, "Add Notebook")
    assert "Total: $48.00" in texts(phone)
    tap(phone, "Remove Notebook")
    assert "Notebook quantity: 3" in texts(phone) and "Total: $48.00" in texts(phone)  # stale
    type_into(phone, "Discount code", "save10")
    tap(phone, "Apply")
    assert "SAVE10: 10% off your order" in texts(phone)
    assert "Total: $26.00" in texts(phone)  # $36.00 - 10.00 flat, not $32.40
    tap(phone, "Checkout")
    assert "Charged: $26.00" in texts(phone)
    kinds = [(e["event"], e.get("total_shown"), e.get("total_expected")) for e in events(phone) if e["event"] != "screen_opened"]
    assert kinds[-3:] == [("item_removed", "$48.00", "$36.00"), ("discount_applied", "$26.00", "$32.40"),
                          ("checkout", "$26.00", None)]


def test_wake_lock_is_held_until_the_testbed_is_restricted(phone: Phone) -> None:
    uid = phone.packages[TESTBED].uid
    power = phone.shell("dumpsys power").stdout.decode()
    (pid,) = re.findall(rf"'{WAKE_LOCK_TAG}' ACQ=\S+ \(uid={uid} pid=(\d+)\)", power)
    # ps names the process the wake lock's pid belongs to, as on a phone.
    assert re.search(rf"^u0_a{uid - 10000} +{pid} .* {TESTBED}$", phone.shell("ps -A").stdout.decode(), re.M)
    phone.shell(f"cmd appops set {TESTBED} RUN_ANY_IN_BACKGROUND ignore")
    assert WAKE_LOCK_TAG not in phone.shell("dumpsys power").stdout.decode()


def _swipe_row(phone: Phone, label: str, dx: int, dy: int = 0) -> None:
    left, top, right, bottom = map(int, BOUNDS.fullmatch(find(phone, label)["bounds"]).groups())
    y = (top + bottom) // 2
    phone.shell(f"input swipe {right - 60} {y} {right - 60 + dx} {y + dy} 300")


def test_tasks_swipe_deletes_the_row_below_and_leaves_the_count_stale_the_button_is_right(phone: Phone) -> None:
    open_link(phone, "agentbench://testbed/tasks")
    assert texts(phone)[0] == "Tasks (4)"
    _swipe_row(phone, "Call the bank", dx=-700, dy=40)  # mostly sideways: a swipe to dismiss
    shown = texts(phone)
    assert "Call the bank" in shown and "Book flights" not in shown and shown[0] == "Tasks (4)"  # both planted bugs
    _swipe_row(phone, "Water plants", dx=-100)  # too short to dismiss
    _swipe_row(phone, "Water plants", dx=-40, dy=-600)  # mostly vertical: a scroll, not a dismiss
    assert "Water plants" in texts(phone)
    tap(phone, "Buy milk")
    tap(phone, "Delete task")
    shown = texts(phone)
    assert shown[0] == "Tasks (2)" and "Buy milk" not in shown
    used = [(e["event"], e.get("task"), e.get("deleted"), e.get("via")) for e in events(phone) if e["event"] != "screen_opened"]
    assert used == [("task_swiped", "Call the bank", "Book flights", None), ("task_opened", "Buy milk", None, None),
                    ("task_deleted", "Buy milk", None, "button")]
