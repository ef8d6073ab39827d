"""content://com.android.contacts -> ContactsProvider2's contacts2.db: raw contacts, data rows, aggregated contacts."""

from __future__ import annotations

import sqlite3
import time
import zlib
from collections.abc import Sequence

from ..phone_numbers import normalize_e164
from .base import (ContentError, ContentUri, Cursor, Provider, Value, check_columns, insert_row, invalid_uri,
                   matching_ids, select, update_rows)

AUTHORITY = "com.android.contacts"
PACKAGE = "com.android.providers.contacts"

NAME = "vnd.android.cursor.item/name"
PHONE = "vnd.android.cursor.item/phone_v2"
EMAIL = "vnd.android.cursor.item/email_v2"
ORGANIZATION = "vnd.android.cursor.item/organization"
NOTE = "vnd.android.cursor.item/note"
NICKNAME = "vnd.android.cursor.item/nickname"
# Which data row names a contact when several could (ContactsContract.DisplayNameSources).
_NAME_SOURCES = ((NAME, 40), (NICKNAME, 35), (ORGANIZATION, 30), (PHONE, 20), (EMAIL, 10))

DATA_COLUMNS = tuple(f"data{i}" for i in range(1, 16))
RAW_CONTACT_COLUMNS = ("_id", "contact_id", "account_name", "account_type", "sourceid", "version", "dirty", "deleted",
                       "starred", "display_name", "display_name_alt", "display_name_source", "sort_key")
CONTACT_COLUMNS = ("_id", "display_name", "display_name_alt", "lookup", "has_phone_number", "starred",
                   "name_raw_contact_id", "photo_id", "times_contacted", "contact_last_updated_timestamp")
DATA_VIEW_COLUMNS = ("_id", "raw_contact_id", "contact_id", "mimetype", "is_primary", "is_super_primary",
                     "data_version", *DATA_COLUMNS, "display_name", "account_name", "account_type")
_RAW_WRITABLE = ("account_name", "account_type", "sourceid", "starred", "dirty", "deleted", "version")
_DATA_WRITABLE = ("raw_contact_id", "mimetype", "is_primary", "is_super_primary", *DATA_COLUMNS)


def _schema(connection: sqlite3.Connection) -> None:
    data_columns = ", ".join(f"{name} TEXT" for name in DATA_COLUMNS)
    connection.executescript(f"""
        CREATE TABLE IF NOT EXISTS mimetypes (_id INTEGER PRIMARY KEY AUTOINCREMENT, mimetype TEXT NOT NULL UNIQUE);
        CREATE TABLE IF NOT EXISTS contacts (_id INTEGER PRIMARY KEY AUTOINCREMENT, name_raw_contact_id INTEGER,
            photo_id INTEGER, times_contacted INTEGER NOT NULL DEFAULT 0, starred INTEGER NOT NULL DEFAULT 0,
            has_phone_number INTEGER NOT NULL DEFAULT 0, lookup TEXT, contact_last_updated_timestamp INTEGER);
        CREATE TABLE IF NOT EXISTS raw_contacts (_id INTEGER PRIMARY KEY AUTOINCREMENT, contact_id INTEGER,
            account_name TEXT, account_type TEXT, sourceid TEXT, version INTEGER NOT NULL DEFAULT 1,
            dirty INTEGER NOT NULL DEFAULT 0, deleted INTEGER NOT NULL DEFAULT 0, starred INTEGER NOT NULL DEFAULT 0,
            display_name TEXT, display_name_alt TEXT, display_name_source INTEGER NOT NULL DEFAULT 0, sort_key TEXT);
        CREATE TABLE IF NOT EXISTS data (_id INTEGER PRIMARY KEY AUTOINCREMENT, mimetype_id INTEGER NOT NULL,
            raw_contact_id INTEGER NOT NULL, is_primary INTEGER NOT NULL DEFAULT 0,
            is_super_primary INTEGER NOT NULL DEFAULT 0, data_version INTEGER NOT NULL DEFAULT 0, {data_columns});
        CREATE VIEW IF NOT EXISTS view_data AS SELECT data._id AS _id, data.raw_contact_id AS raw_contact_id,
            raw_contacts.contact_id AS contact_id, mimetypes.mimetype AS mimetype, data.is_primary AS is_primary,
            data.is_super_primary AS is_super_primary, data.data_version AS data_version,
            {", ".join(f"data.{name} AS {name}" for name in DATA_COLUMNS)},
            raw_contacts.display_name AS display_name, raw_contacts.account_name AS account_name,
            raw_contacts.account_type AS account_type
            FROM data JOIN mimetypes ON data.mimetype_id = mimetypes._id
            JOIN raw_contacts ON data.raw_contact_id = raw_contacts._id;
        CREATE VIEW IF NOT EXISTS view_contacts AS SELECT contacts._id AS _id, raw_contacts.display_name AS display_name,
            raw_contacts.display_name_alt AS display_name_alt, contacts.lookup AS lookup,
            contacts.has_phone_number AS has_phone_number, contacts.starred AS starred,
            contacts.name_raw_contact_id AS name_raw_contact_id, contacts.photo_id AS photo_id,
            contacts.times_contacted AS times_contacted,
            contacts.contact_last_updated_timestamp AS contact_last_updated_timestamp
            FROM contacts LEFT JOIN raw_contacts ON contacts.name_raw_contact_id = raw_contacts._id;
    """)


class ContactsProvider(Provider):
    """ContactsProvider2: `raw_contacts`, `data` (and `data/phones`, `data/emails`), `contacts`, each with `/ID`.

    Inserting a raw contact creates its aggregate contact; each data row recomputes the display name
    (structured name, else organization, phone, email) and `has_phone_number`; a phone row gets its
    E.164 form in data4. Local contacts (no account) are deleted at once, their contact with them.
    """

    authority = AUTHORITY
    package = PACKAGE
    db_name = "contacts2.db"
    granted = frozenset({"com.android.contacts", "com.google.android.apps.messaging"})
    provider_class = "com.android.providers.contacts.ContactsProvider2"
    read_permission = "android.permission.READ_CONTACTS"
    write_permission = "android.permission.WRITE_CONTACTS"

    def schema(self, connection: sqlite3.Connection) -> None:
        _schema(connection)

    def _route(self, uri: ContentUri) -> tuple[str, int | None, str]:
        """(table kind, id from the URI, mimetype filter) for a contacts URI."""
        segments = uri.segments
        filters = {"phones": PHONE, "emails": EMAIL}
        if segments[:1] == ("raw_contacts",) and len(segments) <= 2:
            return "raw", uri.last_id if len(segments) == 2 else None, ""
        if segments[:1] == ("contacts",) and len(segments) <= 2:
            return "contacts", uri.last_id if len(segments) == 2 else None, ""
        if segments[:1] == ("data",):
            if len(segments) == 1:
                return "data", None, ""
            if len(segments) == 2 and segments[1].isdigit():
                return "data", int(segments[1]), ""
            if segments[1] in filters and len(segments) <= 3:
                return "data", uri.last_id if len(segments) == 3 else None, filters[segments[1]]
        raise invalid_uri(uri)

    def _query(self, phone, connection, uri, projection, selection, sort) -> Cursor:
        kind, row_id, mimetype = self._route(uri)
        where, params = _id_clause(row_id)
        if kind == "raw":
            return select(connection, "raw_contacts", RAW_CONTACT_COLUMNS, projection=projection, selection=selection,
                          sort=sort, where=where, params=params, default_sort="_id")
        if kind == "contacts":
            return select(connection, "view_contacts", CONTACT_COLUMNS, projection=projection, selection=selection,
                          sort=sort, where=where, params=params, default_sort="display_name COLLATE NOCASE")
        if mimetype:
            where = " AND ".join(filter(None, (where, "mimetype = ?")))
            params = (*params, mimetype)
        return select(connection, "view_data", DATA_VIEW_COLUMNS, projection=projection, selection=selection,
                      sort=sort, where=where, params=params, default_sort="_id")

    def _insert(self, phone, connection, uri, values) -> str:
        kind, row_id, mimetype = self._route(uri)
        if row_id is not None or kind == "contacts":
            raise ContentError("java.lang.UnsupportedOperationException", f"Unknown uri: {uri.text}")
        if kind == "raw":
            check_columns(values, _RAW_WRITABLE)
            raw_id = insert_raw_contact(connection, values)
            return f"content://{AUTHORITY}/raw_contacts/{raw_id}"
        if mimetype:
            values.setdefault("mimetype", mimetype)
        check_columns(values, _DATA_WRITABLE)
        data_id = insert_data(connection, values)
        return f"content://{AUTHORITY}/data/{data_id}"

    def _update(self, phone, connection, uri, values, selection) -> int:
        kind, row_id, _ = self._route(uri)
        where, params = _id_clause(row_id)
        if kind == "raw":
            check_columns(values, _RAW_WRITABLE)
            return update_rows(connection, "raw_contacts", values,
                               matching_ids(connection, "raw_contacts", where=where, selection=selection, params=params))
        if kind == "data":
            check_columns(values, tuple(name for name in _DATA_WRITABLE if name not in ("raw_contact_id", "mimetype")))
            ids = matching_ids(connection, "view_data", where=where, selection=selection, params=params)
            changed = update_rows(connection, "data", values, ids)
            for raw_id in _raw_ids_of_data(connection, ids):
                refresh_raw_contact(connection, raw_id)
            return changed
        raise ContentError("java.lang.UnsupportedOperationException", f"Unknown uri: {uri.text}")

    def _delete(self, phone, connection, uri, selection) -> int:
        kind, row_id, _ = self._route(uri)
        where, params = _id_clause(row_id)
        if kind == "raw":
            ids = matching_ids(connection, "raw_contacts", where=where, selection=selection, params=params)
            for raw_id in ids:
                delete_raw_contact(connection, raw_id)
            return len(ids)
        if kind == "contacts":
            ids = matching_ids(connection, "view_contacts", where=where, selection=selection, params=params)
            for contact_id in ids:
                for (raw_id,) in connection.execute("SELECT _id FROM raw_contacts WHERE contact_id = ?", (contact_id,)).fetchall():
                    delete_raw_contact(connection, raw_id)
            return len(ids)
        ids = matching_ids(connection, "view_data", where=where, selection=selection, params=params)
        raw_ids = _raw_ids_of_data(connection, ids)
        if ids:
            connection.execute(f"DELETE FROM data WHERE _id IN ({', '.join('?' * len(ids))})", ids)
        for raw_id in raw_ids:
            refresh_raw_contact(connection, raw_id)
        return len(ids)


def _id_clause(row_id: int | None) -> tuple[str, tuple[Value, ...]]:
    return ("_id = ?", (row_id,)) if row_id is not None else ("", ())


def insert_raw_contact(connection: sqlite3.Connection, values: dict[str, Value]) -> int:
    """A new raw contact and the aggregate contact it joins."""
    raw_id = insert_row(connection, "raw_contacts", values)
    lookup = f"0r{raw_id}-{zlib.crc32(str(raw_id).encode()) & 0xFFFF:04X}"
    contact_id = insert_row(connection, "contacts", {"name_raw_contact_id": raw_id, "lookup": lookup,
                                                     "contact_last_updated_timestamp": int(time.time() * 1000)})
    connection.execute("UPDATE raw_contacts SET contact_id = ? WHERE _id = ?", (contact_id, raw_id))
    return raw_id


def insert_data(connection: sqlite3.Connection, values: dict[str, Value]) -> int:
    """A data row of a raw contact; the mimetype is looked up (or registered) in `mimetypes`."""
    raw_id = values.pop("raw_contact_id", None)
    mimetype = values.pop("mimetype", None)
    if raw_id is None:
        raise ContentError("java.lang.IllegalArgumentException", "raw_contact_id is required")
    if not mimetype:
        raise ContentError("java.lang.IllegalArgumentException", "mimetype is required")
    if connection.execute("SELECT 1 FROM raw_contacts WHERE _id = ?", (raw_id,)).fetchone() is None:
        raise ContentError("java.lang.IllegalArgumentException", f"Raw contact {raw_id} does not exist")
    if mimetype == PHONE and values.get("data1") and not values.get("data4"):
        values["data4"] = normalize_e164(str(values["data1"]))
    if mimetype == NAME and not values.get("data1"):
        values["data1"] = " ".join(str(values[key]) for key in ("data2", "data3") if values.get(key)) or None
    connection.execute("INSERT OR IGNORE INTO mimetypes (mimetype) VALUES (?)", (mimetype,))
    (mimetype_id,) = connection.execute("SELECT _id FROM mimetypes WHERE mimetype = ?", (mimetype,)).fetchone()
    data_id = insert_row(connection, "data", {"raw_contact_id": raw_id, "mimetype_id": mimetype_id, **values})
    refresh_raw_contact(connection, int(raw_id))
    return data_id


def refresh_raw_contact(connection: sqlite3.Connection, raw_id: int) -> None:
    """Recompute a raw contact's display name and its contact's `has_phone_number`, as aggregation does."""
    rows = connection.execute("SELECT mimetype, data1, data2, data3 FROM view_data WHERE raw_contact_id = ? ORDER BY _id",
                              (raw_id,)).fetchall()
    best: tuple[int, str, str] = (0, "", "")
    for mimetype, data1, given, family in rows:
        source = dict(_NAME_SOURCES).get(mimetype, 0)
        if source > best[0] and data1:
            alt = f"{family}, {given}" if mimetype == NAME and family and given else data1
            best = (source, data1, alt)
    source, name, alt = best
    connection.execute("UPDATE raw_contacts SET display_name = ?, display_name_alt = ?, display_name_source = ?, "
                       "sort_key = ? WHERE _id = ?", (name or None, alt or None, source, name or None, raw_id))
    has_phone = int(any(mimetype == PHONE for mimetype, *_ in rows))
    connection.execute("UPDATE contacts SET has_phone_number = ?, contact_last_updated_timestamp = ? "
                       "WHERE _id = (SELECT contact_id FROM raw_contacts WHERE _id = ?)",
                       (has_phone, int(time.time() * 1000), raw_id))


def delete_raw_contact(connection: sqlite3.Connection, raw_id: int) -> None:
    """Delete a local raw contact at once (no sync adapter to wait for), and its contact once it is empty."""
    row = connection.execute("SELECT contact_id FROM raw_contacts WHERE _id = ?", (raw_id,)).fetchone()
    connection.execute("DELETE FROM data WHERE raw_contact_id = ?", (raw_id,))
    connection.execute("DELETE FROM raw_contacts WHERE _id = ?", (raw_id,))
    if row is not None and connection.execute("SELECT 1 FROM raw_contacts WHERE contact_id = ?", (row[0],)).fetchone() is None:
        connection.execute("DELETE FROM contacts WHERE _id = ?", (row[0],))


def _raw_ids_of_data(connection: sqlite3.Connection, data_ids: Sequence[int]) -> list[int]:
    if not data_ids:
        return []
    marks = ", ".join("?" * len(data_ids))
    return [int(r[0]) for r in connection.execute(f"SELECT DISTINCT raw_contact_id FROM data WHERE _id IN ({marks})",
                                                   tuple(data_ids)).fetchall()]
