"""Contacts declared as data: a list from the contacts provider, details, and an editor that writes the provider.

The editor saves a typed US number with its country code, as the Contacts app formats it:
`5551234567` is stored as `+1 555-123-4567` (data1; the provider adds the E.164 data4). Company
and Notes are the organization and note rows, so a code can be kept in a contact.
"""

from __future__ import annotations

from ..phone_numbers import format_for_display
from ..providers.contacts import EMAIL, NAME, NOTE, ORGANIZATION, PHONE
from ..ui import Button, Each, Field, Row, Text, Title
from .model import App, AppContext, Screen, SyncJob

PACKAGE = "com.android.contacts"
BASE = "content://com.android.contacts"
FIELDS = (("first_name", "First name"), ("last_name", "Last name"), ("phone", "Phone"), ("email", "Email"),
          ("company", "Company"), ("notes", "Notes"))
_ROW_OF_FIELD = {"phone": PHONE, "email": EMAIL, "company": ORGANIZATION, "notes": NOTE}


class ContactsApp(App):
    package = PACKAGE
    label = "Contacts"
    # Contacts' account sync job: its wake lock is held only once the job runs (wakelock-restrict's seed).
    sync_job = SyncJob(7, "com.android.contacts/.ContactsSyncJobService", "Contacts:AccountSync")
    activity = "com.android.contacts.activities.PeopleActivity"
    version_name = "1.7.40"
    version_code = 10740
    start_route = "list"
    screens = {
        "list": Screen("list", (
            Title("Contacts"),
            Button("Create contact", "new_contact"),
            Text("No contacts", when="!has_contacts"),
            Each("contacts", Row("{contact_name}", on_tap="open_contact", arg="{contact_id}", summary="{contact_phone}")),
        )),
        "details": Screen("details", (
            Title("{c_name}"),
            Row("{c_phone}", summary="Mobile", when="c_phone"),
            Row("{c_email}", summary="Email", when="c_email"),
            Row("{c_company}", summary="Company", when="c_company"),
            Row("{c_notes}", summary="Notes", when="c_notes"),
            Button("Edit", "edit_contact"),
            Button("Delete", "delete_contact"),
        )),
        "editor": Screen("editor", (
            Title("{editor_title}"),
            *(Field(hint, id=field_id) for field_id, hint in FIELDS),
            Text("{editor_error}", when="editor_error"),
            Button("Save", "save_contact"),
        )),
    }

    def initial_state(self) -> dict[str, object]:
        return {"raw_contact": 0, "editor_error": ""}

    def derived(self, ctx: AppContext) -> dict[str, object]:
        phone = ctx.phone
        contacts = phone.content_query(f"{BASE}/raw_contacts", ["_id", "display_name"], where="deleted = 0",
                                       sort="display_name COLLATE NOCASE", user=PACKAGE)
        phones = {row["raw_contact_id"]: row["data1"] for row in
                  phone.content_query(f"{BASE}/data/phones", ["raw_contact_id", "data1"], user=PACKAGE)}
        details = self._details(ctx, int(ctx.state.get("raw_contact") or 0))
        return {
            "has_contacts": bool(contacts),
            "contacts": [{"contact_id": str(row["_id"]), "contact_name": row["display_name"] or "(No name)",
                          "contact_phone": phones.get(row["_id"]) or ""} for row in contacts],
            "c_name": details.get("name", ""), "c_phone": details.get(PHONE, ""), "c_email": details.get(EMAIL, ""),
            "c_company": details.get(ORGANIZATION, ""), "c_notes": details.get(NOTE, ""),
            "editor_title": "Edit contact" if ctx.state.get("editing") else "Create contact",
        }

    def _details(self, ctx: AppContext, raw_id: int) -> dict[str, str]:
        if not raw_id:
            return {}
        rows = ctx.phone.content_query(f"{BASE}/data", ["mimetype", "data1", "data2", "data3", "display_name"],
                                       where=f"raw_contact_id = {raw_id}", user=PACKAGE)
        details: dict[str, str] = {}
        for row in rows:
            details.setdefault(str(row["mimetype"]), str(row["data1"] or ""))
            details["name"] = str(row["display_name"] or "")
            if row["mimetype"] == NAME:
                details["given"], details["family"] = str(row["data2"] or ""), str(row["data3"] or "")
        return details

    def tap_open_contact(self, ctx: AppContext, raw_id: str) -> None:
        ctx.state["raw_contact"] = int(raw_id)
        ctx.navigate("details")

    def tap_new_contact(self, ctx: AppContext, arg: str) -> None:
        ctx.state.update(editing=False, editor_error="", raw_contact=0)
        for field_id, _hint in FIELDS:
            ctx.runtime.fields[field_id] = ""
        ctx.navigate("editor")

    def tap_edit_contact(self, ctx: AppContext, arg: str) -> None:
        details = self._details(ctx, int(ctx.state["raw_contact"]))
        given, family = details.get("given", ""), details.get("family", "")
        if not given and not family:  # a name saved whole (data1 only) goes into the first field
            given = details.get(NAME, "")
        values = {"first_name": given, "last_name": family,
                  "phone": details.get(PHONE, ""), "email": details.get(EMAIL, ""),
                  "company": details.get(ORGANIZATION, ""), "notes": details.get(NOTE, "")}
        ctx.runtime.fields.update(values)
        ctx.state.update(editing=True, editor_error="")
        ctx.navigate("editor")

    def tap_delete_contact(self, ctx: AppContext, arg: str) -> None:
        ctx.phone.content_delete(f"{BASE}/raw_contacts/{ctx.state['raw_contact']}", user=PACKAGE)
        ctx.state["raw_contact"] = 0
        ctx.replace("list")

    def tap_save_contact(self, ctx: AppContext, arg: str) -> None:
        typed = {field_id: ctx.runtime.fields.get(field_id, "").strip() for field_id, _hint in FIELDS}
        if not any(typed.values()):
            ctx.state["editor_error"] = "Contact is empty: enter a name or a number"
            return
        phone = ctx.phone
        if ctx.state.get("editing"):
            raw_id = int(ctx.state["raw_contact"])
            phone.content_delete(f"{BASE}/data", where=f"raw_contact_id = {raw_id}", user=PACKAGE)
        else:
            uri = phone.content_insert(f"{BASE}/raw_contacts", {"account_name": None, "account_type": None}, user=PACKAGE)
            raw_id = int(str(uri).rsplit("/", 1)[1])
        given, family = typed["first_name"], typed["last_name"]
        if given or family:
            phone.content_insert(f"{BASE}/data", {"raw_contact_id": raw_id, "mimetype": NAME, "data2": given or None,
                                                  "data3": family or None}, user=PACKAGE)
        for field_id, mimetype in _ROW_OF_FIELD.items():
            value = typed[field_id]
            if not value:
                continue
            values: dict[str, object] = {"raw_contact_id": raw_id, "mimetype": mimetype,
                                         "data1": format_for_display(value) if field_id == "phone" else value}
            if field_id in ("phone", "email"):
                values["data2"] = 2 if field_id == "phone" else 1
            phone.content_insert(f"{BASE}/data", values, user=PACKAGE)
        ctx.state.update(raw_contact=raw_id, editing=False, editor_error="")
        ctx.runtime.stack.pop()
        if ctx.runtime.route != "details":
            ctx.navigate("details")
