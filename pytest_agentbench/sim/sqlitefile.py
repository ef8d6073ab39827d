"""A database file in the simulated fs -> an sqlite3 connection over its bytes -> the file rewritten when it changed.

The file stays a genuine SQLite database (`Connection.serialize()`), so `adb pull` hands Python's
sqlite3 a file it opens read-only. The sim writes the rollback-journal format and never a `-wal`
file, so the main file alone holds every row.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .fs import SimFileSystem

DB_MODE = 0o660


class DatabaseError(Exception):
    """The file is there but is not a database the app can open (truncated, garbage, locked)."""


@contextlib.contextmanager
def open_db(fs: SimFileSystem, path: str, schema: Callable[[sqlite3.Connection], None], *,
            create: bool = True, recreate_corrupt: bool = False) -> Iterator[sqlite3.Connection]:
    """Open the database at `path` (creating it with `schema` when missing); write it back if anything changed.

    Args:
        fs: The phone's file system (read and written as root: the owning app's process).
        path: The database file.
        schema: Creates the tables of a new database; also run on an existing one, so it must use
            `CREATE ... IF NOT EXISTS` (that is how an app upgrades its database on open).
        create: When False, a missing file raises FileNotFoundError instead of being created.
        recreate_corrupt: What an app's SQLiteOpenHelper does (DefaultDatabaseErrorHandler): a file
            that is not a database is deleted and a new, empty one created in its place.

    Raises:
        DatabaseError: The file exists but is not a readable SQLite database.
    """
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.row_factory = sqlite3.Row
    try:
        if fs.exists(path):
            data = fs.read(path)
            if data:
                try:
                    connection.deserialize(data)
                    connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
                except sqlite3.DatabaseError as error:
                    if not recreate_corrupt:
                        raise DatabaseError(f"{path}: {error}") from error
                    connection.close()
                    connection = sqlite3.connect(":memory:", isolation_level=None)
                    connection.row_factory = sqlite3.Row
                    fs.remove(path)
        elif not create:
            raise FileNotFoundError(2, "No such file or directory", path)
        created = not fs.exists(path)
        schema(connection)
        # total_changes counts row writes only, so a schema that already existed changes nothing.
        baseline = connection.total_changes
        yield connection
        if created or connection.total_changes != baseline:
            if connection.in_transaction:
                connection.execute("COMMIT")
            fs.write(path, connection.serialize(), mode=DB_MODE)
    finally:
        connection.close()
