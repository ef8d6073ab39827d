"""Chrome's per-site and per-profile features as data: a site's camera permission, bookmarks in folders, the homepage.

Where the real Chrome keeps them, all private to the app (read as root):

* A site's permission is an exception in `Preferences`:
  `profile.content_settings.exceptions.media_stream_camera["https://HOST:443,*"].setting`
  (1 allow, 2 block; no exception is "Ask"). It is set from the page's site information
  (the icon left of the address) -> Permissions.
* A site added under Settings -> Site settings -> JavaScript -> "Add site exception" (while
  JavaScript is allowed) is blocked: `profile.content_settings.exceptions.javascript["[*.]HOST,*"]`
  `.setting` 2. The switch at the top is the default for every site,
  `profile.default_content_setting_values.javascript` (2: blocked everywhere).
* Bookmarks are the profile's `Bookmarks` JSON file: `roots.bookmark_bar`, `roots.other` and
  `roots.synced` (shown as "Mobile bookmarks", where a new bookmark goes), each a folder with
  `children`. A bookmark is `{type: url, name, url}`, a folder `{type: folder, name, children}`.
  A fresh profile has no file until the first bookmark.
* The homepage is in Chrome's SharedPreferences (`com.android.chrome_preferences.xml`):
  `homepage_custom_uri` (the address typed) and `Chrome.Homepage.UseNTP` (true: "Chrome's
  homepage", the new tab page; false: the custom address).
"""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

from ..ui import Button, Each, Field, Radio, Row, Switch, Text, Title
from .model import AppContext, Screen

BOOKMARKS = "app_chrome/Default/Bookmarks"
CHROME_PREFS = "com.android.chrome_preferences"
HOMEPAGE_URI, HOMEPAGE_NTP = "homepage_custom_uri", "Chrome.Homepage.UseNTP"
CAMERA = "media_stream_camera"
PERMISSION_SETTINGS = {"Allow": 1, "Block": 2}
MOBILE_FOLDER_ID = "3"

PAGE_SCREENS = {
    "site_info": Screen("site_info", (
        Title("{site_host}"),
        Text("Your connection to this site is not secure", when="!site_https"),
        Text("Permissions"),
        Row("Camera", on_tap="go", arg="site_info/camera", summary="{site_camera}"),
        Row("Cookies and site data"),
    )),
    "site_info/camera": Screen("site_info/camera", (
        Title("Camera"),
        Text("{site_host}"),
        Radio("Allow", checked="camera_is_Allow", on_tap="set_camera"),
        Radio("Ask (default)", checked="camera_is_Ask", on_tap="set_camera", arg="Ask"),
        Radio("Block", checked="camera_is_Block", on_tap="set_camera"),
    )),
    "settings/site_settings": Screen("settings/site_settings", (
        Title("Site settings"),
        Row("Camera", summary="Ask first"),
        Row("JavaScript", on_tap="go", arg="settings/site_settings/javascript", summary="{javascript_summary}"),
        Row("Pop-ups and redirects", summary="Blocked"),
    )),
    "settings/site_settings/javascript": Screen("settings/site_settings/javascript", (
        Title("JavaScript"),
        Switch("Allow sites to use JavaScript", checked="javascript_on", on_tap="toggle_javascript"),
        Text("Blocked"),
        Each("javascript_blocked", Row("{blocked_site}", summary="Blocked")),
        Button("Add site exception", "go", arg="settings/site_settings/javascript/add"),
    )),
    "settings/site_settings/javascript/add": Screen("settings/site_settings/javascript/add", (
        Title("Add site exception"),
        Field("Site", id="exception_site"),
        Button("Add", "add_javascript_exception"),
    )),
    "bookmark_edit": Screen("bookmark_edit", (
        Title("Edit bookmark"),
        Text("{bookmark_name}"),
        Text("{bookmark_url}"),
        Row("Folder", on_tap="go", arg="bookmark_folders", summary="{bookmark_folder}"),
    )),
    "bookmark_folders": Screen("bookmark_folders", (
        Title("Choose a folder"),
        Each("folder_choices", Row("{folder_name}", on_tap="move_bookmark", arg="{folder_id}")),
        Button("New folder", "go", arg="bookmark_new_folder"),
    )),
    "bookmark_new_folder": Screen("bookmark_new_folder", (
        Title("New folder"),
        Field("Folder name", id="folder_name"),
        Button("Save", "create_folder"),
    )),
    "bookmarks": Screen("bookmarks", (
        Title("Mobile bookmarks"),
        Text("No bookmarks", when="!has_bookmarks"),
        Each("bookmark_rows", Row("{row_name}", summary="{row_detail}")),
    )),
    "settings/homepage": Screen("settings/homepage", (
        Title("Homepage"),
        Radio("Chrome's homepage", checked="homepage_is_ntp", on_tap="use_ntp_homepage"),
        Radio("Enter custom web address", checked="!homepage_is_ntp", on_tap="use_custom_homepage"),
        Field("Enter custom web address", id="homepage_url"),
        Button("Save", "save_homepage"),
        Text("{homepage_saved}", when="homepage_saved"),
    )),
}


def origin_key(url: str) -> str:
    """The content-settings pattern Chrome writes for a site's exception: `https://host:443,*`."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{parts.hostname}:{port},*"


def empty_bookmarks() -> dict[str, object]:
    def folder(folder_id: str, name: str) -> dict[str, object]:
        return {"children": [], "date_added": str(_chrome_time()), "id": folder_id, "name": name, "type": "folder"}
    return {"checksum": "", "roots": {"bookmark_bar": folder("1", "Bookmarks bar"), "other": folder("2", "Other bookmarks"),
                                      "synced": folder(MOBILE_FOLDER_ID, "Mobile bookmarks")}, "version": 1}


class PageFeatures:
    """Tap handlers for site information, bookmarks and the homepage (mixed into ChromeApp)."""

    def tap_set_camera(self, ctx: AppContext, choice: str) -> None:
        from .chrome import read_preferences, write_preferences
        prefs = read_preferences(ctx) or {}
        profile = prefs.setdefault("profile", {"name": "Person 1", "exit_type": "Normal"})
        exceptions = profile.setdefault("content_settings", {}).setdefault("exceptions", {})
        camera = exceptions.setdefault(CAMERA, {})
        key = origin_key(str(ctx.state.get("url")))
        if choice in PERMISSION_SETTINGS:
            camera[key] = {"last_modified": str(_chrome_time()), "setting": PERMISSION_SETTINGS[choice]}
        else:
            camera.pop(key, None)
        write_preferences(ctx, prefs)

    def tap_toggle_javascript(self, ctx: AppContext, arg: str) -> None:
        from .chrome import read_preferences, write_preferences
        prefs = read_preferences(ctx) or {}
        defaults = prefs.setdefault("profile", {"name": "Person 1", "exit_type": "Normal"}).setdefault(
            "default_content_setting_values", {})
        if defaults.get("javascript") == 2:
            defaults.pop("javascript")
        else:
            defaults["javascript"] = 2
        write_preferences(ctx, prefs)

    def tap_add_javascript_exception(self, ctx: AppContext, arg: str) -> None:
        from .chrome import read_preferences, write_preferences
        typed = ctx.runtime.fields.get("exception_site", "").strip()
        host = urlsplit(typed if "://" in typed else f"https://{typed}").hostname
        if not host:
            return
        prefs = read_preferences(ctx) or {}
        profile = prefs.setdefault("profile", {"name": "Person 1", "exit_type": "Normal"})
        exceptions = profile.setdefault("content_settings", {}).setdefault("exceptions", {})
        exceptions.setdefault("javascript", {})[f"[*.]{host},*"] = {"last_modified": str(_chrome_time()), "setting": 2}
        write_preferences(ctx, prefs)
        ctx.runtime.fields["exception_site"] = ""
        ctx.runtime.stack.pop()

    def tap_bookmark_page(self, ctx: AppContext, arg: str) -> None:
        url = str(ctx.state.get("url"))
        document = read_bookmarks(ctx) or empty_bookmarks()
        mobile = document["roots"]["synced"]
        node_id = str(_next_id(document))
        mobile["children"].append({"date_added": str(_chrome_time()), "id": node_id, "name": urlsplit(url).hostname or url,
                                   "type": "url", "url": url})
        write_bookmarks(ctx, document)
        ctx.state["bookmark"] = node_id
        ctx.runtime.stack.pop()  # the menu closes; "Edit" on the snackbar opens the editor
        ctx.navigate("bookmark_edit")

    def tap_move_bookmark(self, ctx: AppContext, folder_id: str) -> None:
        document = read_bookmarks(ctx)
        if document is None:
            return
        _move(document, str(ctx.state.get("bookmark")), folder_id)
        write_bookmarks(ctx, document)
        ctx.runtime.stack.pop()

    def tap_create_folder(self, ctx: AppContext, arg: str) -> None:
        name = ctx.runtime.fields.get("folder_name", "").strip()
        document = read_bookmarks(ctx)
        if not name or document is None:
            return
        folder_id = str(_next_id(document))
        document["roots"]["synced"]["children"].append({"children": [], "date_added": str(_chrome_time()), "id": folder_id,
                                                        "name": name, "type": "folder"})
        _move(document, str(ctx.state.get("bookmark")), folder_id)
        write_bookmarks(ctx, document)
        ctx.runtime.fields["folder_name"] = ""
        del ctx.runtime.stack[-2:]  # back to the editor, the bookmark now in the new folder

    def tap_use_ntp_homepage(self, ctx: AppContext, arg: str) -> None:
        ctx.put_pref(CHROME_PREFS, HOMEPAGE_NTP, True)

    def tap_use_custom_homepage(self, ctx: AppContext, arg: str) -> None:
        if ctx.prefs(CHROME_PREFS).get(HOMEPAGE_URI):
            ctx.put_pref(CHROME_PREFS, HOMEPAGE_NTP, False)

    def tap_save_homepage(self, ctx: AppContext, arg: str) -> None:
        from .chrome import fixup_url
        typed = ctx.runtime.fields.get("homepage_url", "").strip()
        if not typed:
            return
        ctx.put_pref(CHROME_PREFS, HOMEPAGE_URI, fixup_url(typed))
        ctx.put_pref(CHROME_PREFS, HOMEPAGE_NTP, False)
        ctx.state["homepage_saved"] = "Saved"


def page_derived(ctx: AppContext, url: str) -> dict[str, object]:
    """Screen values for the features above."""
    from .chrome import read_preferences
    prefs = read_preferences(ctx) or {}
    profile = _dict(prefs.get("profile"))
    exceptions = _dict(_dict(profile.get("content_settings")).get("exceptions"))
    setting = _dict(_dict(exceptions.get(CAMERA)).get(origin_key(url))).get("setting") if url else None
    camera = {1: "Allow", 2: "Block"}.get(setting, "Ask")  # type: ignore[arg-type]
    document = read_bookmarks(ctx)
    folders, bookmark = [], {}
    rows = []
    if document is not None:
        mobile = document["roots"]["synced"]
        folders = [{"folder_name": mobile["name"], "folder_id": MOBILE_FOLDER_ID}]
        folders += [{"folder_name": child["name"], "folder_id": child["id"]} for child in mobile["children"]
                    if child.get("type") == "folder"]
        for child in mobile["children"]:
            detail = child.get("url") or f"{len(child.get('children', []))} bookmarks"
            rows.append({"row_name": child.get("name", ""), "row_detail": detail})
        found = _find(document, str(ctx.state.get("bookmark")))
        if found:
            bookmark = {"bookmark_name": found[1].get("name", ""), "bookmark_url": found[1].get("url", ""),
                        "bookmark_folder": found[0].get("name", "")}
    javascript_on = _dict(profile.get("default_content_setting_values")).get("javascript") != 2
    blocked = [pattern.split(",", 1)[0].removeprefix("[*.]")
               for pattern, entry in _dict(exceptions.get("javascript")).items() if _dict(entry).get("setting") == 2]
    chrome_prefs = ctx.prefs(CHROME_PREFS)
    use_ntp = chrome_prefs.get(HOMEPAGE_NTP, True) is not False
    return {
        "on_page": bool(url), "site_host": urlsplit(url).hostname or "" if url else "", "site_https": url.startswith("https://"),
        "site_camera": camera, **{f"camera_is_{name}": camera == name for name in ("Allow", "Ask", "Block")},
        "folder_choices": folders, "bookmark_rows": rows, "has_bookmarks": bool(rows),
        "bookmark_name": "", "bookmark_url": "", "bookmark_folder": "", **bookmark,
        "javascript_on": javascript_on, "javascript_summary": "Allowed" if javascript_on else "Blocked",
        "javascript_blocked": [{"blocked_site": site} for site in blocked],
        "homepage_is_ntp": use_ntp,
        "homepage_summary": "Chrome's homepage" if use_ntp else str(chrome_prefs.get(HOMEPAGE_URI, "")),
        "homepage_saved": str(ctx.state.get("homepage_saved") or ""),
    }


def _dict(value: object) -> dict:
    """A JSON object, or {} for anything else (a file written by hand must not break a screen)."""
    return value if isinstance(value, dict) else {}


def read_bookmarks(ctx: AppContext) -> dict | None:
    data = ctx.read_file(BOOKMARKS)
    if data is None:
        return None
    try:
        document = json.loads(data)
    except ValueError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("roots"), dict):
        return None
    # A file written by hand (as root) may lack what Chrome writes: the roots are filled in as Chrome
    # would on load, and nodes that are not objects are dropped, so no screen fails on it.
    fresh = empty_bookmarks()["roots"]
    for key, root in fresh.items():
        given = document["roots"].get(key)
        document["roots"][key] = {**root, **given} if isinstance(given, dict) else root
    for root in document["roots"].values():
        if isinstance(root, dict):
            _clean(root)
    return document


def _clean(folder: dict) -> None:
    children = folder.get("children")
    folder["children"] = [child for child in children if isinstance(child, dict)] if isinstance(children, list) else []
    for child in folder["children"]:
        child.setdefault("name", "")
        child.setdefault("id", "")
        if child.get("type") == "folder" or "children" in child:
            _clean(child)


def write_bookmarks(ctx: AppContext, document: dict) -> None:
    ctx.write_file(BOOKMARKS, json.dumps(document, indent=3, sort_keys=True).encode())


def _nodes(node: dict):
    yield node
    for child in node.get("children", ()):
        yield from _nodes(child)


def _next_id(document: dict) -> int:
    ids = [int(node["id"]) for root in document["roots"].values() for node in _nodes(root) if str(node.get("id", "")).isdigit()]
    return max(ids, default=3) + 1


def _find(document: dict, node_id: str) -> tuple[dict, dict] | None:
    """(parent folder, node) of a node id, or None."""
    for root in document["roots"].values():
        for parent in _nodes(root):
            for child in parent.get("children", ()):
                if child.get("id") == node_id:
                    return parent, child
    return None


def _move(document: dict, node_id: str, folder_id: str) -> None:
    found = _find(document, node_id)
    target = next((node for root in document["roots"].values() for node in _nodes(root)
                   if node.get("id") == folder_id and node.get("type") == "folder"), None)
    if found is None or target is None or found[0] is target:
        return
    found[0]["children"].remove(found[1])
    target["children"].append(found[1])


def _chrome_time() -> int:
    return int((time.time() + 11_644_473_600) * 1_000_000)
