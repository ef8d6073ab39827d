"""Content URIs + a caller -> a provider's rows from its SQLite database, with Android's permission rules and errors."""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

from ..sqlitefile import DatabaseError, open_db
from ..users import ROOT, SHELL, SYSTEM, uid_of

if TYPE_CHECKING:
    from ..phone import Phone

Value = str | int | float | bool | None
Values = Mapping[str, Value]


class ContentError(Exception):
    """What the provider threw: printed by `content` as `Error while accessing provider:AUTHORITY` + the Java exception."""

    def __init__(self, java_class: str, message: str) -> None:
        super().__init__(message)
        self.java_class = java_class
        self.message = message

    @property
    def java_line(self) -> str:
        return f"{self.java_class}: {self.message}"


@dataclass(frozen=True)
class ContentUri:
    """`content://authority/seg/seg?query` split into its parts."""

    text: str
    authority: str
    segments: tuple[str, ...]

    @property
    def last_id(self) -> int | None:
        """The trailing numeric id (`.../media/12`), or None."""
        return int(self.segments[-1]) if self.segments and self.segments[-1].isdigit() else None


def parse_uri(text: str) -> ContentUri:
    """Parse a content URI; raises ContentError as the resolver would for anything else."""
    if not text.startswith("content://"):
        raise ContentError("java.lang.IllegalArgumentException", f"Unknown URI {text}")
    rest = text[len("content://"):].split("?", 1)[0].split("#", 1)[0]
    authority, _, path = rest.partition("/")
    return ContentUri(text, authority, tuple(unquote(part) for part in path.split("/") if part))


def invalid_uri(uri: ContentUri) -> ContentError:
    return ContentError("java.lang.IllegalArgumentException", f"Unknown URL {uri.text}")


@dataclass(frozen=True)
class Cursor:
    """A query's result: column names and rows, in order."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Value, ...], ...]

    def dicts(self) -> list[dict[str, Value]]:
        return [dict(zip(self.columns, row)) for row in self.rows]


class Provider:
    """One content provider: an authority, the package whose private storage holds its database, and its URIs.

    Subclasses implement `_query`, `_insert`, `_update`, `_delete` on an open connection and set the
    permission rule: who may read (`readers`) and write (`writers`); `ignored_writers` are callers whose
    writes the provider silently drops (the SMS provider and a non-default SMS app, or the shell).
    """

    authority: str = ""
    package: str = ""
    db_name: str = ""
    read_permission: str = ""
    write_permission: str = ""
    readers: frozenset[str] = frozenset({ROOT, SYSTEM, SHELL})
    writers: frozenset[str] = frozenset({ROOT, SYSTEM, SHELL})
    ignored_writers: frozenset[str] = frozenset()
    # Apps that hold the provider's permissions (the stock apps built on it), by package name.
    granted: frozenset[str] = frozenset()
    provider_class: str = ""

    def db_path(self, phone: Phone) -> str:
        return f"{phone.fs.private_dir(self.package)}/databases/{self.db_name}"

    def schema(self, connection: sqlite3.Connection) -> None:
        raise NotImplementedError

    @contextlib.contextmanager
    def connect(self, phone: Phone) -> Iterator[sqlite3.Connection]:
        """The provider's database, created on first use; an unreadable file is a provider crash."""
        try:
            with open_db(phone.fs, self.db_path(phone), self.schema) as connection:
                yield connection
        except DatabaseError as error:
            raise ContentError("android.database.sqlite.SQLiteDatabaseCorruptException",
                               f"file is not a database (code 26 SQLITE_NOTADB): {error}") from error
        except sqlite3.Error as error:
            raise ContentError("android.database.sqlite.SQLiteException", f"{error} (code 1 SQLITE_ERROR)") from error

    # What `content` and the apps call.

    def query(self, phone: Phone, caller: str, uri: ContentUri, projection: Sequence[str] | None = None,
              selection: str | None = None, sort: str | None = None) -> Cursor:
        self._check(phone, caller, uri, write=False)
        with self.connect(phone) as connection:
            return self._query(phone, connection, uri, projection, selection, sort)

    def insert(self, phone: Phone, caller: str, uri: ContentUri, values: Values) -> str | None:
        if self._check(phone, caller, uri, write=True):
            return None
        with self.connect(phone) as connection:
            inserted = self._insert(phone, connection, uri, dict(values))
        phone.notify_change(self.authority)
        return inserted

    def update(self, phone: Phone, caller: str, uri: ContentUri, values: Values, selection: str | None = None) -> int:
        if self._check(phone, caller, uri, write=True):
            return 0
        with self.connect(phone) as connection:
            changed = self._update(phone, connection, uri, dict(values), selection)
        phone.notify_change(self.authority)
        return changed

    def delete(self, phone: Phone, caller: str, uri: ContentUri, selection: str | None = None) -> int:
        if self._check(phone, caller, uri, write=True):
            return 0
        with self.connect(phone) as connection:
            deleted = self._delete(phone, connection, uri, selection)
        phone.notify_change(self.authority)
        return deleted

    def _check(self, phone: Phone, caller: str, uri: ContentUri, *, write: bool) -> bool:
        """Raise SecurityException for a caller without the permission; True when its write is to be dropped."""
        if write and caller in self.ignored_writers:
            return True
        allowed = self.writers if write else self.readers
        if caller not in allowed and caller not in self.granted:
            permission = self.write_permission if write else self.read_permission
            verb = "writing" if write else "reading"
            raise ContentError("java.lang.SecurityException",
                               f"Permission Denial: {verb} {self.provider_class} uri {uri.text} from pid=0, "
                               f"uid={uid_of(phone, caller)} requires {permission}, or grantUriPermission()")
        return False

    def _query(self, phone: Phone, connection: sqlite3.Connection, uri: ContentUri, projection: Sequence[str] | None,
               selection: str | None, sort: str | None) -> Cursor:
        raise invalid_uri(uri)

    def _insert(self, phone: Phone, connection: sqlite3.Connection, uri: ContentUri, values: dict[str, Value]) -> str | None:
        raise invalid_uri(uri)

    def _update(self, phone: Phone, connection: sqlite3.Connection, uri: ContentUri, values: dict[str, Value],
                selection: str | None) -> int:
        raise invalid_uri(uri)

    def _delete(self, phone: Phone, connection: sqlite3.Connection, uri: ContentUri, selection: str | None) -> int:
        raise invalid_uri(uri)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def select(connection: sqlite3.Connection, source: str, columns: Sequence[str], *, projection: Sequence[str] | None,
           selection: str | None, sort: str | None, where: str = "", params: Sequence[Value] = (),
           default_sort: str = "") -> Cursor:
    """SELECT from a table or view the way SQLiteQueryBuilder does with a strict projection map.

    A projection column the URI does not have is `IllegalArgumentException: Invalid column X`; the
    caller's selection and sort order are SQL fragments, as on Android.
    """
    chosen = list(projection) if projection else list(columns)
    for name in chosen:
        if name not in columns or not _IDENTIFIER.fullmatch(name):
            raise ContentError("java.lang.IllegalArgumentException", f"Invalid column {name}")
    clauses = [f"({clause})" for clause in (where, selection) if clause]
    sql = f"SELECT {', '.join(chosen)} FROM {source}"
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    if sort or default_sort:
        sql += f" ORDER BY {sort or default_sort}"
    try:
        rows = connection.execute(sql, tuple(params)).fetchall()
    except sqlite3.Error as error:
        raise ContentError("android.database.sqlite.SQLiteException",
                           f"{error} (code 1 SQLITE_ERROR): , while compiling: {sql}") from error
    return Cursor(tuple(chosen), tuple(tuple(row) for row in rows))


def matching_ids(connection: sqlite3.Connection, table: str, *, where: str = "", selection: str | None = None,
                 params: Sequence[Value] = ()) -> list[int]:
    """The _ids an update or delete touches (the URI's own condition AND the caller's selection)."""
    cursor = select(connection, table, ("_id",), projection=None, selection=selection, sort=None, where=where,
                    params=params)
    return [int(row[0]) for row in cursor.rows]


def check_columns(values: Mapping[str, Value], allowed: Sequence[str]) -> None:
    """Values naming a column the table lacks fail as SQLite's insert would, before anything is written."""
    for name in values:
        if name not in allowed:
            raise ContentError("android.database.sqlite.SQLiteException",
                               f"table has no column named {name} (code 1 SQLITE_ERROR)")


def insert_row(connection: sqlite3.Connection, table: str, values: Mapping[str, Value]) -> int:
    """INSERT the values (column names already checked) and return the new rowid."""
    if not values:
        cursor = connection.execute(f"INSERT INTO {table} DEFAULT VALUES")
    else:
        names = list(values)
        cursor = connection.execute(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                                    tuple(_sql_value(values[name]) for name in names))
    return int(cursor.lastrowid or 0)


def update_rows(connection: sqlite3.Connection, table: str, values: Mapping[str, Value], ids: Sequence[int]) -> int:
    """UPDATE the given rows with the values; returns how many rows changed."""
    if not ids or not values:
        return 0
    names = list(values)
    assignments = ", ".join(f"{name} = ?" for name in names)
    marks = ", ".join("?" * len(ids))
    connection.execute(f"UPDATE {table} SET {assignments} WHERE _id IN ({marks})",
                       (*(_sql_value(values[name]) for name in names), *ids))
    return len(ids)


def _sql_value(value: Value) -> Value:
    return int(value) if isinstance(value, bool) else value
