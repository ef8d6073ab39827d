"""content://settings/NAMESPACE -> the phone's settings tables (what `settings get|put` reads and writes)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .base import ContentError, ContentUri, Cursor, Provider, Value, Values, invalid_uri

if TYPE_CHECKING:
    from ..phone import Phone

NAMESPACES = ("global", "system", "secure")
_NAME_IS = re.compile(r"""\s*name\s*=\s*(['"])(.*?)\1\s*""")


class SettingsProvider(Provider):
    """SettingsProvider: rows of `name`/`value` per namespace; `--where "name='KEY'"` picks one setting."""

    authority = "settings"
    package = "com.android.providers.settings"
    provider_class = "com.android.providers.settings.SettingsProvider"
    read_permission = "android.permission.READ_SETTINGS"
    write_permission = "android.permission.WRITE_SECURE_SETTINGS"

    def _table(self, phone: Phone, uri: ContentUri) -> dict[str, str]:
        if len(uri.segments) not in (1, 2) or uri.segments[0] not in NAMESPACES:
            raise invalid_uri(uri)
        return phone.settings[uri.segments[0]]

    def _names(self, table: dict[str, str], uri: ContentUri, selection: str | None) -> list[str]:
        if len(uri.segments) == 2:
            return [uri.segments[1]] if uri.segments[1] in table else []
        if not selection:
            return sorted(table)
        match = _NAME_IS.fullmatch(selection)
        if match is None:
            raise ContentError("java.lang.IllegalArgumentException", f"Selection not allowed for {uri.text}: {selection}")
        return [match.group(2)] if match.group(2) in table else []

    def query(self, phone, caller, uri, projection=None, selection=None, sort=None) -> Cursor:
        self._check(phone, caller, uri, write=False)
        table = self._table(phone, uri)
        columns = tuple(projection) if projection else ("name", "value")
        for name in columns:
            if name not in ("name", "value"):
                raise ContentError("java.lang.IllegalArgumentException", f"Invalid column {name}")
        rows = tuple(tuple({"name": key, "value": table[key]}[c] for c in columns) for key in self._names(table, uri, selection))
        return Cursor(columns, rows)

    def insert(self, phone, caller, uri, values: Values) -> str | None:
        self._check(phone, caller, uri, write=True)
        table = self._table(phone, uri)
        if "name" not in values or "value" not in values:
            raise ContentError("java.lang.IllegalArgumentException", "Must specify a name and a value")
        table[str(values["name"])] = _text(values["value"])
        return f"content://settings/{uri.segments[0]}/{values['name']}"

    def update(self, phone, caller, uri, values: Values, selection=None) -> int:
        self._check(phone, caller, uri, write=True)
        table = self._table(phone, uri)
        names = [str(values["name"])] if "name" in values and not selection else self._names(table, uri, selection)
        for name in names:
            table[name] = _text(values.get("value"))
        return len(names)

    def delete(self, phone, caller, uri, selection=None) -> int:
        self._check(phone, caller, uri, write=True)
        table = self._table(phone, uri)
        names = self._names(table, uri, selection)
        for name in names:
            table.pop(name, None)
        return len(names)


def _text(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)
