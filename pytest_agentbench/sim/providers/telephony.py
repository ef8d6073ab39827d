"""content://sms -> TelephonyProvider's mmssms.db: messages, their threads and the canonical addresses threads join on."""

from __future__ import annotations

import sqlite3
import time

from ..phone_numbers import digits
from ..users import ROOT, SHELL, SYSTEM
from .base import ContentError, ContentUri, Cursor, Provider, check_columns, insert_row, invalid_uri, matching_ids, select, update_rows

AUTHORITY = "sms"
PACKAGE = "com.android.providers.telephony"

# Telephony.TextBasedSmsColumns message types; the folder URIs select and stamp them.
TYPE_INBOX, TYPE_SENT, TYPE_DRAFT, TYPE_OUTBOX = 1, 2, 3, 4
FOLDERS = {"inbox": TYPE_INBOX, "sent": TYPE_SENT, "draft": TYPE_DRAFT, "outbox": TYPE_OUTBOX}
SMS_COLUMNS = ("_id", "thread_id", "address", "person", "date", "date_sent", "protocol", "read", "status", "type",
               "reply_path_present", "subject", "body", "service_center", "locked", "sub_id", "error_code", "creator",
               "seen")
_WRITABLE = tuple(name for name in SMS_COLUMNS if name != "_id")
CONVERSATION_COLUMNS = ("thread_id", "msg_count", "snippet")


def _schema(connection: sqlite3.Connection) -> None:
    connection.executescript("""
        CREATE TABLE IF NOT EXISTS canonical_addresses (_id INTEGER PRIMARY KEY AUTOINCREMENT, address TEXT);
        CREATE TABLE IF NOT EXISTS threads (_id INTEGER PRIMARY KEY AUTOINCREMENT, date INTEGER DEFAULT 0,
            message_count INTEGER DEFAULT 0, recipient_ids TEXT, snippet TEXT, snippet_cs INTEGER DEFAULT 0,
            read INTEGER DEFAULT 1, archived INTEGER DEFAULT 0, type INTEGER DEFAULT 0, error INTEGER DEFAULT 0,
            has_attachment INTEGER DEFAULT 0);
        CREATE TABLE IF NOT EXISTS sms (_id INTEGER PRIMARY KEY, thread_id INTEGER, address TEXT, person INTEGER,
            date INTEGER, date_sent INTEGER DEFAULT 0, protocol INTEGER, read INTEGER DEFAULT 0,
            status INTEGER DEFAULT -1, type INTEGER, reply_path_present INTEGER, subject TEXT, body TEXT,
            service_center TEXT, locked INTEGER DEFAULT 0, sub_id INTEGER DEFAULT -1, error_code INTEGER DEFAULT -1,
            creator TEXT, seen INTEGER DEFAULT 0);
        CREATE VIEW IF NOT EXISTS sms_conversations AS SELECT thread_id, count(*) AS msg_count,
            (SELECT body FROM sms AS latest WHERE latest.thread_id = sms.thread_id ORDER BY date DESC, _id DESC LIMIT 1)
            AS snippet FROM sms GROUP BY thread_id;
    """)


class TelephonyProvider(Provider):
    """SmsProvider: `sms`, `sms/inbox|sent|draft|outbox`, `sms/ID`, `sms/conversations[/THREAD]`.

    Who may write: root and system. Android lets only the default SMS app write SMS (the WRITE_SMS
    app-op is `ignore` for everyone else), so the shell's inserts, updates and deletes are accepted
    and silently dropped, exactly as `adb shell content insert --uri content://sms/...` behaves on a
    phone. Everyone the shell included may read.
    """

    authority = AUTHORITY
    package = PACKAGE
    db_name = "mmssms.db"
    granted = frozenset({"com.google.android.apps.messaging"})
    provider_class = "com.android.providers.telephony.SmsProvider"
    read_permission = "android.permission.READ_SMS"
    write_permission = "android.permission.WRITE_SMS"
    writers = frozenset({ROOT, SYSTEM})
    ignored_writers = frozenset({SHELL})

    def schema(self, connection: sqlite3.Connection) -> None:
        _schema(connection)

    def _route(self, uri: ContentUri) -> tuple[str, int | None, int | None]:
        """(kind, message or thread id, folder type) of an SMS URI."""
        segments = uri.segments
        if not segments:
            return "sms", None, None
        if segments[0] == "conversations" and len(segments) <= 2:
            return "conversations", uri.last_id if len(segments) == 2 else None, None
        if segments[0].isdigit() and len(segments) == 1:
            return "sms", int(segments[0]), None
        if segments[0] in FOLDERS and len(segments) <= 2:
            if len(segments) == 2 and not segments[1].isdigit():
                raise invalid_uri(uri)
            return "sms", uri.last_id if len(segments) == 2 else None, FOLDERS[segments[0]]
        raise invalid_uri(uri)

    def _where(self, row_id: int | None, folder: int | None) -> tuple[str, tuple[int, ...]]:
        clauses, params = [], []
        if row_id is not None:
            clauses.append("_id = ?")
            params.append(row_id)
        if folder is not None:
            clauses.append("type = ?")
            params.append(folder)
        return " AND ".join(clauses), tuple(params)

    def _query(self, phone, connection, uri, projection, selection, sort) -> Cursor:
        kind, row_id, folder = self._route(uri)
        if kind == "conversations":
            where, params = ("thread_id = ?", (row_id,)) if row_id is not None else ("", ())
            return select(connection, "sms_conversations", CONVERSATION_COLUMNS, projection=projection,
                          selection=selection, sort=sort, where=where, params=params, default_sort="thread_id DESC")
        where, params = self._where(row_id, folder)
        return select(connection, "sms", SMS_COLUMNS, projection=projection, selection=selection, sort=sort,
                      where=where, params=params, default_sort="date DESC")

    def _insert(self, phone, connection, uri, values) -> str:
        kind, row_id, folder = self._route(uri)
        if kind != "sms" or row_id is not None:
            raise ContentError("java.lang.UnsupportedOperationException", f"Invalid request: {uri.text}")
        check_columns(values, _WRITABLE)
        if folder is not None:
            values["type"] = folder
        values.setdefault("type", TYPE_INBOX)
        values.setdefault("date", int(time.time() * 1000))
        values.setdefault("read", 0)
        values.setdefault("seen", 0)
        if values.get("thread_id") is None:
            if not values.get("address"):
                raise ContentError("java.lang.IllegalArgumentException", "Unable to find or allocate a thread ID.")
            values["thread_id"] = thread_for(connection, str(values["address"]))
        message_id = insert_row(connection, "sms", values)
        refresh_threads(connection)
        return f"content://sms/{message_id}"

    def _update(self, phone, connection, uri, values, selection) -> int:
        kind, row_id, folder = self._route(uri)
        if kind != "sms":
            raise ContentError("java.lang.UnsupportedOperationException", f"URI {uri.text} not supported")
        check_columns(values, _WRITABLE)
        where, params = self._where(row_id, folder)
        changed = update_rows(connection, "sms", values, matching_ids(connection, "sms", where=where,
                                                                        selection=selection, params=params))
        refresh_threads(connection)
        return changed

    def _delete(self, phone, connection, uri, selection) -> int:
        kind, row_id, folder = self._route(uri)
        if kind == "conversations":
            where, params = ("thread_id = ?", (row_id,)) if row_id is not None else ("", ())
        else:
            where, params = self._where(row_id, folder)
        ids = matching_ids(connection, "sms", where=where, selection=selection, params=params)
        if ids:
            connection.execute(f"DELETE FROM sms WHERE _id IN ({', '.join('?' * len(ids))})", ids)
        refresh_threads(connection)
        return len(ids)


def thread_for(connection: sqlite3.Connection, address: str) -> int:
    """Threads.getOrCreateThreadId: one thread per recipient; numbers match on their last 7 digits, as
    PhoneNumberUtils.compare does loosely (so `+15550100` and `5550100` are one recipient)."""
    wanted = digits(address) or address
    recipient = None
    for address_id, known in connection.execute("SELECT _id, address FROM canonical_addresses").fetchall():
        if (digits(known) or known)[-7:] == wanted[-7:]:
            recipient = address_id
            break
    if recipient is None:
        recipient = insert_row(connection, "canonical_addresses", {"address": address})
    row = connection.execute("SELECT _id FROM threads WHERE recipient_ids = ?", (str(recipient),)).fetchone()
    if row is not None:
        return int(row[0])
    return insert_row(connection, "threads", {"recipient_ids": str(recipient), "date": int(time.time() * 1000)})


def refresh_threads(connection: sqlite3.Connection) -> None:
    """Keep each thread's date, count, snippet and read flag in step with its messages; drop empty threads."""
    connection.execute("DELETE FROM threads WHERE _id NOT IN (SELECT DISTINCT thread_id FROM sms WHERE thread_id IS NOT NULL)")
    connection.execute("""UPDATE threads SET
        message_count = (SELECT count(*) FROM sms WHERE sms.thread_id = threads._id),
        date = (SELECT max(date) FROM sms WHERE sms.thread_id = threads._id),
        snippet = (SELECT body FROM sms WHERE sms.thread_id = threads._id ORDER BY date DESC, _id DESC LIMIT 1),
        read = (SELECT min(read) FROM sms WHERE sms.thread_id = threads._id)""")


def thread_addresses(connection: sqlite3.Connection) -> dict[int, str]:
    """thread id -> the recipient's address (what Messages imports a conversation from)."""
    rows = connection.execute("SELECT threads._id, canonical_addresses.address FROM threads "
                              "JOIN canonical_addresses ON threads.recipient_ids = CAST(canonical_addresses._id AS TEXT)")
    return {int(thread_id): address for thread_id, address in rows.fetchall()}
