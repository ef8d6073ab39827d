"""Messages (bugle_db imported from seeded SMS, pins in their own table, archiving) and Photos (crop, save copy, overwrite)."""

from __future__ import annotations

import sqlite3
import struct

import pytest

from pytest_agentbench.sim.apps.photos import crop_box
from pytest_agentbench.sim.phone import Phone

from simui import back, tap, texts

MESSAGES = "com.google.android.apps.messaging"
BUGLE_DB = f"/data/data/{MESSAGES}/databases/bugle_db"
PHOTOS = "com.google.android.apps.photos"
IMAGES = "content://media/external/images/media"


@pytest.fixture
def phone() -> Phone:
    return Phone()


def bugle(phone: Phone, tmp_path, sql: str) -> list[tuple]:
    """Query bugle_db the way a check does: copy the file off the phone (as root), open it read-only."""
    local = tmp_path / "bugle_db"
    local.write_bytes(phone.shell(f"su 0 cat {BUGLE_DB}").stdout)
    with sqlite3.connect(f"file:{local}?mode=ro", uri=True) as db:
        return db.execute(sql).fetchall()


PINNED_AND_ARCHIVED = ("SELECT c.name, c.archive_status, p.conversation_id IS NOT NULL FROM conversations c "
                       "LEFT JOIN conversation_pins p ON p.conversation_id = c._id ORDER BY c.name")


def seed_threads(phone: Phone) -> None:
    phone.add_contact("Grace Hopper", "5550101")
    phone.receive_sms("+15550101", "Lunch at noon?", date_ms=1_700_000_000_000)
    phone.receive_sms("+15550202", "Your parcel is on its way", date_ms=1_700_000_100_000)
    phone.add_sms("+15550101", "Sure!", box="sent", date_ms=1_700_000_200_000)


def test_seeded_sms_threads_become_conversations_in_bugle_db(phone: Phone, tmp_path) -> None:
    seed_threads(phone)
    assert bugle(phone, tmp_path, "SELECT name, sms_thread_id, snippet_text, archive_status FROM conversations ORDER BY _id") == [
        ("Grace Hopper", 1, "Sure!", 0), ("+15550202", 2, "Your parcel is on its way", 0)]
    assert bugle(phone, tmp_path, "SELECT count(*) FROM conversation_pins") == [(0,)]
    assert bugle(phone, tmp_path, "SELECT text FROM parts ORDER BY _id") == [
        ("Lunch at noon?",), ("Your parcel is on its way",), ("Sure!",)]
    assert phone.shell(f"cat {BUGLE_DB}").exit_code == 1


def test_pin_one_thread_and_archive_another_through_the_ui(phone: Phone, tmp_path) -> None:
    seed_threads(phone)
    phone.launch(MESSAGES)
    assert texts(phone)[:5] == ["Messages", "Grace Hopper", "Sure!", "+15550202", "Your parcel is on its way"]
    tap(phone, "+15550202")
    tap(phone, "Pin")
    back(phone)
    assert texts(phone)[1:3] == ["+15550202", "Pinned - Your parcel is on its way"]  # pins come first
    tap(phone, "+15550202")
    tap(phone, "Unpin")
    back(phone)
    tap(phone, "Grace Hopper")
    assert {"Lunch at noon?", "Sure!"} <= set(texts(phone))
    tap(phone, "Pin")
    assert "Unpin" in texts(phone)
    back(phone)
    tap(phone, "+15550202")
    tap(phone, "Archive")
    assert texts(phone)[0] == "Messages" and "+15550202" not in texts(phone)
    assert bugle(phone, tmp_path, PINNED_AND_ARCHIVED) == [("+15550202", 1, 0), ("Grace Hopper", 0, 1)]
    tap(phone, "Archived")
    tap(phone, "+15550202")
    tap(phone, "Unarchive")
    assert bugle(phone, tmp_path, PINNED_AND_ARCHIVED) == [("+15550202", 0, 0), ("Grace Hopper", 0, 1)]


def test_at_most_three_pins(phone: Phone) -> None:
    for number in range(4):
        phone.receive_sms(f"+1555010{number}", f"hello {number}")
    phone.launch(MESSAGES)
    for number in range(3):
        tap(phone, f"+1555010{number}")
        tap(phone, "Pin")
        back(phone)
    tap(phone, "+15550103")
    tap(phone, "Pin")
    assert "You can pin up to 3 conversations" in texts(phone) and "Pin" in texts(phone)


def test_deleted_threads_leave_bugle_db_and_pm_clear_reimports(phone: Phone, tmp_path) -> None:
    seed_threads(phone)
    phone.launch(MESSAGES)
    tap(phone, "Grace Hopper")
    tap(phone, "Pin")
    phone.shell("su 0 content delete --uri content://sms/conversations/2")
    assert bugle(phone, tmp_path, PINNED_AND_ARCHIVED) == [("Grace Hopper", 0, 1)]
    phone.shell(f"pm clear {MESSAGES}")
    phone.launch(MESSAGES)
    assert bugle(phone, tmp_path, PINNED_AND_ARCHIVED) == [("Grace Hopper", 0, 0)]


# Photos.


@pytest.mark.parametrize(("size", "aspect", "box"), [
    ((1200, 800), (1, 1), (200, 0, 800, 800)), ((800, 1200), (1, 1), (0, 200, 800, 800)),
    ((1200, 800), (4, 3), (66, 0, 1067, 800)), ((1200, 800), (16, 9), (0, 62, 1200, 675)),
    ((1200, 800), None, (0, 0, 1200, 800)), ((1200, 800), (3, 4), (300, 0, 600, 800)),
])
def test_crop_box(size: tuple[int, int], aspect: tuple[int, int] | None, box: tuple[int, int, int, int]) -> None:
    assert crop_box(*size, aspect) == box


def edit_seeded_photo(phone: Phone, aspect: str) -> int:
    original = phone.add_photo(1200, 800, name="PXL_20240205.png", relative_path="DCIM/Camera")
    phone.launch(PHOTOS)
    tap(phone, "PXL_20240205.png")
    assert "1200 x 800" in texts(phone)
    tap(phone, "Edit")
    tap(phone, aspect)
    return original


def test_crop_to_square_and_save_a_copy(phone: Phone) -> None:
    original = edit_seeded_photo(phone, "Square")
    assert "Result: 800 x 800" in texts(phone)
    tap(phone, "Save copy")
    assert "Saved as a copy" in texts(phone) and "800 x 800" in texts(phone)
    rows = phone.content_query(IMAGES, ["_id", "_data", "width", "height", "owner_package_name"], sort="_id")
    assert rows == [
        {"_id": original, "_data": "/storage/emulated/0/DCIM/Camera/PXL_20240205.png", "width": 1200, "height": 800,
         "owner_package_name": None},
        {"_id": original + 1, "_data": "/storage/emulated/0/DCIM/Camera/PXL_20240205-edited.png", "width": 800,
         "height": 800, "owner_package_name": PHOTOS}]
    data = phone.shell("cat /sdcard/DCIM/Camera/PXL_20240205-edited.png").stdout
    assert struct.unpack(">II", data[16:24]) == (800, 800)


def test_saving_over_the_original_loses_its_width(phone: Phone) -> None:
    original = edit_seeded_photo(phone, "Square")
    tap(phone, "Save")
    assert phone.content_query(IMAGES, ["_id", "width", "height"]) == [{"_id": original, "width": 800, "height": 800}]


def test_other_aspects_are_not_square(phone: Phone) -> None:
    edit_seeded_photo(phone, "16:9")
    tap(phone, "Save copy")
    rows = phone.content_query(IMAGES, ["width", "height"], sort="_id")
    assert rows[-1] == {"width": 1200, "height": 675}


def test_a_contact_saved_later_names_the_conversation(phone: Phone, tmp_path) -> None:
    phone.receive_sms("+15550303", "Hi, it's Linus")
    phone.launch(MESSAGES)
    assert "+15550303" in texts(phone)
    raw = phone.add_contact("Linus Torvalds", "555-0303")
    assert "Linus Torvalds" in texts(phone)
    phone.content_delete(f"content://com.android.contacts/raw_contacts/{raw}")
    assert bugle(phone, tmp_path, "SELECT name FROM conversations") == [("+15550303",)]
