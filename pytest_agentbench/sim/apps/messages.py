"""Messages declared as data, with its own SQLite `bugle_db`: conversations imported from SMS, pins, archiving.

As the default SMS app, Messages copies every SMS thread of the telephony provider into
`databases/bugle_db` (on start and whenever SMS change). A conversation's archive state is its
`archive_status` column (0 inbox, 1 archived); a pin is a row of the separate `conversation_pins`
table (at most 3 pins, as the app allows). A bugle_db that is not a database any more is deleted
and rebuilt from SMS when the app next opens it (SQLiteOpenHelper's DefaultDatabaseErrorHandler). A conversation whose SMS thread is gone is removed
with its pin; `pm clear` drops the database, which is rebuilt from SMS with nothing pinned or archived.
"""

from __future__ import annotations

import sqlite3
import time

from ..phone_numbers import digits
from ..providers.base import ContentError
from ..providers.telephony import thread_addresses
from ..sqlitefile import open_db
from ..ui import Button, Each, Row, Switch, Text, Title
from .model import App, AppContext, Screen

PACKAGE = "com.google.android.apps.messaging"
DB = "databases/bugle_db"
MAX_PINS = 3
ARCHIVED, UNARCHIVED = 1, 0


def schema(connection: sqlite3.Connection) -> None:
    connection.executescript("""
        CREATE TABLE IF NOT EXISTS conversations (_id INTEGER PRIMARY KEY, sms_thread_id INT DEFAULT(0), name TEXT,
            latest_message_id INT, snippet_text TEXT, sort_timestamp INT DEFAULT(0), read INT DEFAULT(1),
            archive_status INT DEFAULT(0), participant_normalized_destination TEXT, participant_count INT DEFAULT(0),
            notification_enabled INT DEFAULT(1));
        CREATE TABLE IF NOT EXISTS participants (_id INTEGER PRIMARY KEY, normalized_destination TEXT,
            send_destination TEXT, display_destination TEXT, full_name TEXT, contact_id INT DEFAULT(-1));
        CREATE TABLE IF NOT EXISTS conversation_participants (_id INTEGER PRIMARY KEY, conversation_id INT,
            participant_id INT);
        CREATE TABLE IF NOT EXISTS messages (_id INTEGER PRIMARY KEY, conversation_id INT, sender_id INT,
            sent_timestamp INT, received_timestamp INT, message_protocol INT DEFAULT(0), message_status INT DEFAULT(0),
            seen INT DEFAULT(0), read INT DEFAULT(0), sms_message_uri TEXT);
        CREATE TABLE IF NOT EXISTS parts (_id INTEGER PRIMARY KEY, message_id INT, conversation_id INT, text TEXT,
            content_type TEXT DEFAULT('text/plain'));
        CREATE TABLE IF NOT EXISTS conversation_pins (_id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id INTEGER NOT NULL UNIQUE, pinned_timestamp INTEGER NOT NULL, sort_order INTEGER NOT NULL);
    """)


class MessagesApp(App):
    package = PACKAGE
    label = "Messages"
    activity = "com.google.android.apps.messaging.ui.ConversationListActivity"
    version_name = "20240205_00_RC00"
    version_code = 200000
    start_route = "list"
    screens = {
        "list": Screen("list", (
            Title("Messages"),
            Text("No conversations yet", when="!has_inbox"),
            Each("inbox", Row("{conv_name}", on_tap="open_conversation", arg="{conv_id}", summary="{conv_summary}")),
            Row("Archived", on_tap="go", arg="archived", summary="{archived_count} conversations"),
            Button("Start chat", "go", arg="new"),
        )),
        "conversation": Screen("conversation", (
            Title("{conv_title}"),
            Each("thread", Text("{message_text}", desc="{message_desc}")),
            Text("{pin_error}", when="pin_error"),
            Button("Pin", "pin", when="!conv_pinned"),
            Button("Unpin", "unpin", when="conv_pinned"),
            Button("Archive", "archive", when="!conv_archived"),
            Button("Unarchive", "unarchive", when="conv_archived"),
            Button("Details", "go", arg="details", desc="Conversation details"),
        )),
        # A conversation's notifications are its own `notification_enabled` column (1 on, 0 muted).
        "details": Screen("details", (
            Title("Details"),
            Text("{conv_title}"),
            Switch("Notifications", checked="conv_notifications", on_tap="toggle_notifications"),
            Row("Block & report spam"),
        )),
        "archived": Screen("archived", (
            Title("Archived"),
            Text("No archived conversations", when="!has_archived"),
            Each("archived", Row("{conv_name}", on_tap="open_conversation", arg="{conv_id}", summary="{conv_summary}")),
        )),
        "new": Screen("new", (Title("New conversation"), Text("No contacts"))),
    }

    def initial_state(self) -> dict[str, object]:
        return {"conversation": 0, "pin_error": ""}

    def on_start(self, ctx: AppContext) -> None:
        sync_from_telephony(ctx.phone)

    def on_content_changed(self, phone, authority: str) -> None:  # noqa: ANN001 - the Phone
        if authority in ("sms", "com.android.contacts"):
            sync_from_telephony(phone)

    def derived(self, ctx: AppContext) -> dict[str, object]:
        with open_db(ctx.phone.fs, ctx.private_path(DB), schema, recreate_corrupt=True) as db:
            rows = db.execute("SELECT c._id, c.name, c.snippet_text, c.archive_status, p.sort_order IS NOT NULL "
                              "FROM conversations c LEFT JOIN conversation_pins p ON p.conversation_id = c._id "
                              "ORDER BY p.sort_order IS NULL, p.sort_order, c.sort_timestamp DESC").fetchall()
            current = int(ctx.state.get("conversation") or 0)
            thread = db.execute("SELECT pa.text, m.sender_id FROM messages m JOIN parts pa ON pa.message_id = m._id "
                                "WHERE m.conversation_id = ? ORDER BY m.received_timestamp, m._id", (current,)).fetchall()
        items = [{"conv_id": str(conv_id), "conv_name": name, "archived": status == ARCHIVED, "pinned": bool(pinned),
                  "conv_summary": ("Pinned - " if pinned else "") + (snippet or "")}
                 for conv_id, name, snippet, status, pinned in rows]
        chosen = next((item for item in items if item["conv_id"] == str(current)), None)
        inbox = [item for item in items if not item["archived"]]
        archived = [item for item in items if item["archived"]]
        return {
            "inbox": inbox, "has_inbox": bool(inbox), "archived": archived, "has_archived": bool(archived),
            "archived_count": len(archived),
            "conv_title": chosen["conv_name"] if chosen else "", "conv_pinned": bool(chosen and chosen["pinned"]),
            "conv_archived": bool(chosen and chosen["archived"]),
            "thread": [{"message_text": text, "message_desc": "You said" if sender == 0 else "They said"}
                       for text, sender in thread],
            "conv_notifications": _notifications_on(ctx, current),
        }

    def tap_open_conversation(self, ctx: AppContext, conv_id: str) -> None:
        ctx.state.update(conversation=int(conv_id), pin_error="")
        ctx.navigate("conversation")

    def tap_pin(self, ctx: AppContext, arg: str) -> None:
        with open_db(ctx.phone.fs, ctx.private_path(DB), schema, recreate_corrupt=True) as db:
            (count,) = db.execute("SELECT count(*) FROM conversation_pins").fetchone()
            if count >= MAX_PINS:
                ctx.state["pin_error"] = f"You can pin up to {MAX_PINS} conversations"
                return
            (order,) = db.execute("SELECT coalesce(max(sort_order), -1) + 1 FROM conversation_pins").fetchone()
            db.execute("INSERT OR IGNORE INTO conversation_pins (conversation_id, pinned_timestamp, sort_order) "
                       "VALUES (?, ?, ?)", (ctx.state["conversation"], int(time.time() * 1000), order))

    def tap_unpin(self, ctx: AppContext, arg: str) -> None:
        with open_db(ctx.phone.fs, ctx.private_path(DB), schema, recreate_corrupt=True) as db:
            db.execute("DELETE FROM conversation_pins WHERE conversation_id = ?", (ctx.state["conversation"],))
        ctx.state["pin_error"] = ""

    def tap_toggle_notifications(self, ctx: AppContext, arg: str) -> None:
        enabled = 0 if _notifications_on(ctx, int(ctx.state.get("conversation") or 0)) else 1
        with open_db(ctx.phone.fs, ctx.private_path(DB), schema, recreate_corrupt=True) as db:
            db.execute("UPDATE conversations SET notification_enabled = ? WHERE _id = ?", (enabled, ctx.state["conversation"]))

    def tap_archive(self, ctx: AppContext, arg: str) -> None:
        # Archiving from a conversation goes back to the list, as the app does.
        self._set_archive(ctx, ARCHIVED)
        ctx.runtime.stack.pop()

    def tap_unarchive(self, ctx: AppContext, arg: str) -> None:
        self._set_archive(ctx, UNARCHIVED)

    def _set_archive(self, ctx: AppContext, status: int) -> None:
        with open_db(ctx.phone.fs, ctx.private_path(DB), schema, recreate_corrupt=True) as db:
            db.execute("UPDATE conversations SET archive_status = ? WHERE _id = ?", (status, ctx.state["conversation"]))


def _notifications_on(ctx: AppContext, conv: int) -> bool:
    with open_db(ctx.phone.fs, ctx.private_path(DB), schema, recreate_corrupt=True) as db:
        row = db.execute("SELECT notification_enabled FROM conversations WHERE _id = ?", (conv,)).fetchone()
    return bool(row and row[0])


def sync_from_telephony(phone) -> None:  # noqa: ANN001 - the Phone
    """Import SMS threads and messages into bugle_db; drop conversations whose thread is gone."""
    if PACKAGE not in phone.packages:
        return
    provider = phone.providers["sms"]
    with provider.connect(phone) as sms:
        addresses = thread_addresses(sms)
        messages = sms.execute("SELECT _id, thread_id, address, body, date, type, read FROM sms ORDER BY _id").fetchall()
    names = _contact_names(phone)
    path = f"{phone.fs.private_dir(PACKAGE)}/{DB}"
    with open_db(phone.fs, path, schema, recreate_corrupt=True) as db:
        known = {thread: conv for conv, thread in db.execute("SELECT _id, sms_thread_id FROM conversations").fetchall()}
        for thread, conv in known.items():
            if thread not in addresses:
                _drop_conversation(db, conv)
        for thread, address in addresses.items():
            if thread in known:
                # A contact saved (or renamed) for the number names the conversation from now on.
                db.execute("UPDATE conversations SET name = ? WHERE _id = ? AND name IS NOT ?",
                           (names.get(digits(address)[-7:], address), known[thread],
                            names.get(digits(address)[-7:], address)))
                continue
            name = names.get(digits(address)[-7:], address)
            participant = db.execute("INSERT INTO participants (normalized_destination, send_destination, "
                                     "display_destination, full_name) VALUES (?, ?, ?, ?)",
                                     (address, address, address, name)).lastrowid
            conv = db.execute("INSERT INTO conversations (sms_thread_id, name, participant_normalized_destination, "
                              "participant_count) VALUES (?, ?, ?, 1)", (thread, name, address)).lastrowid
            db.execute("INSERT INTO conversation_participants (conversation_id, participant_id) VALUES (?, ?)",
                       (conv, participant))
            known[thread] = conv
        present = {f"content://sms/{row[0]}" for row in messages}
        for message_id, uri in db.execute("SELECT _id, sms_message_uri FROM messages").fetchall():
            if uri not in present:  # the SMS was deleted: so is Messages' copy
                db.execute("DELETE FROM parts WHERE message_id = ?", (message_id,))
                db.execute("DELETE FROM messages WHERE _id = ?", (message_id,))
        imported = {uri for (uri,) in db.execute("SELECT sms_message_uri FROM messages").fetchall()}
        for sms_id, thread, _address, body, date, kind, read in messages:
            uri = f"content://sms/{sms_id}"
            if uri in imported or thread not in known:
                continue
            conv = known[thread]
            sender = 0 if kind == 2 else 1
            message = db.execute("INSERT INTO messages (conversation_id, sender_id, sent_timestamp, received_timestamp, "
                                 "read, seen, sms_message_uri) VALUES (?, ?, ?, ?, ?, ?, ?)",
                                 (conv, sender, date, date, read, read, uri)).lastrowid
            db.execute("INSERT INTO parts (message_id, conversation_id, text) VALUES (?, ?, ?)", (message, conv, body))
        db.execute("""UPDATE conversations SET
            latest_message_id = (SELECT _id FROM messages m WHERE m.conversation_id = conversations._id
                                 ORDER BY received_timestamp DESC, _id DESC LIMIT 1),
            sort_timestamp = coalesce((SELECT max(received_timestamp) FROM messages m
                                       WHERE m.conversation_id = conversations._id), 0),
            read = coalesce((SELECT min(read) FROM messages m WHERE m.conversation_id = conversations._id), 1)""")
        db.execute("""UPDATE conversations SET snippet_text = (SELECT text FROM parts WHERE parts.message_id =
            conversations.latest_message_id)""")


def _drop_conversation(db: sqlite3.Connection, conv: int) -> None:
    db.execute("DELETE FROM parts WHERE conversation_id = ?", (conv,))
    db.execute("DELETE FROM messages WHERE conversation_id = ?", (conv,))
    db.execute("DELETE FROM conversation_participants WHERE conversation_id = ?", (conv,))
    db.execute("DELETE FROM conversation_pins WHERE conversation_id = ?", (conv,))
    db.execute("DELETE FROM conversations WHERE _id = ?", (conv,))


def _contact_names(phone) -> dict[str, str]:  # noqa: ANN001 - the Phone
    """Last 7 phone digits -> contact name, so a thread from a saved number shows the contact's name."""
    try:
        rows = phone.content_query("content://com.android.contacts/data/phones", ["data1", "display_name"],
                                   user=PACKAGE)
    except ContentError:  # no contacts provider: numbers stay numbers
        return {}
    return {digits(str(row["data1"]))[-7:]: str(row["display_name"]) for row in rows if row["data1"] and row["display_name"]}
