"""content://media -> MediaProvider's external.db: one row per file on shared storage, images with their real size."""

from __future__ import annotations

import posixpath
import sqlite3
import time
import zlib
from typing import TYPE_CHECKING

from ..images import MIME_TYPES, image_size
from .base import ContentError, ContentUri, Cursor, Provider, check_columns, insert_row, invalid_uri, matching_ids, select, update_rows

if TYPE_CHECKING:
    from ..phone import Phone

AUTHORITY = "media"
PACKAGE = "com.android.providers.media.module"
STORAGE = "/storage/emulated/0"
MEDIA_TYPE_IMAGE = 1
IMAGE_COLUMNS = ("_id", "_data", "_size", "_display_name", "title", "mime_type", "width", "height", "orientation",
                 "relative_path", "bucket_id", "bucket_display_name", "date_added", "date_modified", "datetaken",
                 "owner_package_name", "is_pending", "is_trashed", "volume_name", "media_type")
_WRITABLE = ("_data", "_display_name", "title", "mime_type", "relative_path", "orientation", "datetaken",
             "owner_package_name", "is_pending", "is_trashed", "date_added", "date_modified", "width", "height", "_size")
_VOLUMES = ("external", "external_primary")


def _schema(connection: sqlite3.Connection) -> None:
    connection.executescript(f"""
        CREATE TABLE IF NOT EXISTS files (_id INTEGER PRIMARY KEY AUTOINCREMENT, _data TEXT UNIQUE COLLATE NOCASE,
            _size INTEGER, _display_name TEXT, title TEXT, mime_type TEXT, width INTEGER, height INTEGER,
            orientation INTEGER DEFAULT 0, relative_path TEXT, bucket_id INTEGER, bucket_display_name TEXT,
            date_added INTEGER, date_modified INTEGER, datetaken INTEGER, owner_package_name TEXT DEFAULT NULL,
            is_pending INTEGER DEFAULT 0, is_trashed INTEGER DEFAULT 0, volume_name TEXT DEFAULT 'external_primary',
            media_type INTEGER DEFAULT 0);
        CREATE VIEW IF NOT EXISTS images AS SELECT {", ".join(IMAGE_COLUMNS)} FROM files
            WHERE media_type = {MEDIA_TYPE_IMAGE};
    """)


class MediaProvider(Provider):
    """MediaStore: `external[_primary]/images/media[/ID]` and `external[_primary]/file[/ID]`.

    The scanner fills `width`, `height`, `_size` and `mime_type` from the file itself. Deleting a row
    deletes its file, as MediaProvider does. The shell and root may read and write (the shell holds
    the storage permissions); unlike Android 11+, a file written to /sdcard by a shell command is not
    indexed until it is scanned (`am broadcast -a android.intent.action.MEDIA_SCANNER_SCAN_FILE -d file://PATH`).
    """

    authority = AUTHORITY
    package = PACKAGE
    db_name = "external.db"
    granted = frozenset({"com.google.android.apps.photos"})
    provider_class = "com.android.providers.media.MediaProvider"
    read_permission = "android.permission.READ_MEDIA_IMAGES"
    write_permission = "android.permission.WRITE_MEDIA_IMAGES"

    def schema(self, connection: sqlite3.Connection) -> None:
        _schema(connection)

    def _route(self, uri: ContentUri) -> tuple[str, int | None]:
        segments = uri.segments
        if len(segments) >= 3 and segments[0] in _VOLUMES and segments[1:3] == ("images", "media") and len(segments) <= 4:
            return "images", uri.last_id if len(segments) == 4 else None
        if len(segments) >= 2 and segments[0] in _VOLUMES and segments[1] == "file" and len(segments) <= 3:
            return "files", uri.last_id if len(segments) == 3 else None
        raise invalid_uri(uri)

    def _source(self, kind: str, row_id: int | None) -> tuple[str, str, tuple[int, ...]]:
        table = "images" if kind == "images" else "files"
        return table, ("_id = ?" if row_id is not None else ""), ((row_id,) if row_id is not None else ())

    def _query(self, phone, connection, uri, projection, selection, sort) -> Cursor:
        table, where, params = self._source(*self._route(uri))
        return select(connection, table, IMAGE_COLUMNS, projection=projection, selection=selection, sort=sort,
                      where=where, params=params, default_sort="date_added DESC, _id DESC")

    def _insert(self, phone, connection, uri, values) -> str:
        kind, row_id = self._route(uri)
        if row_id is not None:
            raise ContentError("java.lang.UnsupportedOperationException", f"Unknown URL {uri.text}")
        check_columns(values, _WRITABLE)
        path = values.pop("_data", None)
        if path is None:
            name = values.get("_display_name")
            if not name:
                raise ContentError("java.lang.IllegalArgumentException", "Missing _display_name or _data")
            relative = str(values.get("relative_path") or "Pictures/")
            path = f"{STORAGE}/{relative.rstrip('/')}/{name}"
        media_id = scan_file(phone, connection, str(path), owner=values.pop("owner_package_name", None))
        if values:
            update_rows(connection, "files", values, [media_id])
        return f"content://media/external_primary/{'images/media' if kind == 'images' else 'file'}/{media_id}"

    def _update(self, phone, connection, uri, values, selection) -> int:
        table, where, params = self._source(*self._route(uri))
        check_columns(values, _WRITABLE)
        return update_rows(connection, "files", values, matching_ids(connection, table, where=where,
                                                                       selection=selection, params=params))

    def _delete(self, phone, connection, uri, selection) -> int:
        table, where, params = self._source(*self._route(uri))
        ids = matching_ids(connection, table, where=where, selection=selection, params=params)
        for media_id in ids:
            (path,) = connection.execute("SELECT _data FROM files WHERE _id = ?", (media_id,)).fetchone()
            if path and phone.fs.exists(path) and not phone.fs.is_dir(path):
                phone.fs.remove(path)
            connection.execute("DELETE FROM files WHERE _id = ?", (media_id,))
        return len(ids)


def storage_path(path: str) -> str:
    """`/sdcard/Pictures/a.png` -> `/storage/emulated/0/Pictures/a.png`, the form `_data` holds."""
    for alias in ("/sdcard", "/mnt/sdcard", "/storage/self/primary"):
        if path == alias or path.startswith(alias + "/"):
            return STORAGE + path[len(alias):]
    return path


def scan_file(phone: Phone, connection: sqlite3.Connection, path: str, *, owner: str | None = None) -> int:
    """Index one file on shared storage (insert or refresh its row) and return its _id.

    A missing file gets a pending row (`is_pending=1`), as an app's insert before it writes the bytes.
    """
    path = storage_path(path)
    if not path.startswith(STORAGE + "/"):
        raise ContentError("java.lang.IllegalArgumentException", f"Requested path {path} doesn't appear under [{STORAGE}]")
    name = posixpath.basename(path)
    relative = posixpath.dirname(path)[len(STORAGE) + 1:]
    relative = relative + "/" if relative else ""
    bucket = posixpath.basename(relative.rstrip("/")) or None
    now = int(time.time())
    row: dict[str, object] = {"_display_name": name, "title": posixpath.splitext(name)[0], "relative_path": relative,
                              "bucket_display_name": bucket, "bucket_id": zlib.crc32(posixpath.dirname(path).lower().encode()),
                              "volume_name": "external_primary", "date_modified": now}
    mime = MIME_TYPES.get(posixpath.splitext(name)[1].lower())
    if phone.fs.exists(path) and not phone.fs.is_dir(path):
        data = phone.fs.read(path)
        size = image_size(data)
        row.update(_size=len(data), is_pending=0, mime_type=mime,
                   media_type=MEDIA_TYPE_IMAGE if size is not None else 0,
                   width=size[0] if size else None, height=size[1] if size else None)
    else:
        row.update(_size=0, is_pending=1, mime_type=mime, media_type=MEDIA_TYPE_IMAGE if mime else 0)
    existing = connection.execute("SELECT _id FROM files WHERE _data = ?", (path,)).fetchone()
    if existing is not None:
        update_rows(connection, "files", row, [int(existing[0])])
        return int(existing[0])
    row.update(_data=path, date_added=now, datetaken=now * 1000, owner_package_name=owner)
    return insert_row(connection, "files", row)
