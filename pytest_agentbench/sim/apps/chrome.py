"""A Chrome-like browser declared as data: settings, site permissions, bookmarks and the homepage in its private files.

Chrome keeps these choices in the profile's private JSON file
`/data/data/com.android.chrome/app_chrome/Default/Preferences`, which only root can read (Chrome
is not debuggable, so `run-as` is refused). A fresh profile has no file until the user changes a
setting. Which key holds "Always use secure connections" depends on Chrome's version: from
`BALANCED_MODE_SINCE` on `https_first_balanced_mode_enabled`, before it `https_only_mode_enabled`.
"""

from __future__ import annotations

import json
import time

from ..ui import Button, Field, Radio, Row, Switch, Text, Title
from .chrome_pages import PAGE_SCREENS, PageFeatures, page_derived
from .model import App, AppContext, Screen, SyncJob

PACKAGE = "com.android.chrome"
PREFERENCES = "app_chrome/Default/Preferences"
BALANCED_MODE_SINCE = 129  # the first Chrome major version that stores the balanced HTTPS-First key
NEW_KEY, OLD_KEY = "https_first_balanced_mode_enabled", "https_only_mode_enabled"
# Prepopulated engines: (name shown, keyword, prepopulate_id, search URL).
ENGINES = (
    ("Google", "google.com", 1, "{google:baseURL}search?q={searchTerms}&{google:RLZ}{google:originalQueryForSuggestion}"
                                "{google:assistedQueryStats}{google:searchFieldtrialParameter}ie={inputEncoding}"),
    ("Bing", "bing.com", 3, "https://www.bing.com/search?q={searchTerms}&PC=U316&FORM=CHROMN"),
    ("Yahoo!", "yahoo.com", 2, "https://search.yahoo.com/search{google:pathWildcard}?ei={inputEncoding}&fr=crmas&p={searchTerms}"),
    ("DuckDuckGo", "duckduckgo.com", 92, "https://duckduckgo.com/?q={searchTerms}&t=h_"),
    ("Ecosia", "ecosia.org", 101, "https://www.ecosia.org/search?q={searchTerms}&addon=opensearch"),
)
_ENGINE_BY_NAME = {engine[0]: engine for engine in ENGINES}


def secure_key(version_name: str) -> str:
    """The Preferences key this Chrome version keeps "Always use secure connections" in."""
    try:
        major = int(version_name.split(".", 1)[0])
    except ValueError:
        major = BALANCED_MODE_SINCE
    return NEW_KEY if major >= BALANCED_MODE_SINCE else OLD_KEY


class ChromeApp(PageFeatures, App):
    package = PACKAGE
    label = "Chrome"
    # Chrome's download resumption job: its wake lock is held only once the job runs (wakelock-restrict's seed).
    sync_job = SyncJob(83, "com.android.chrome/org.chromium.chrome.browser.download.DownloadResumptionJobService",
                       "Chrome:DownloadResumption")
    activity = "com.google.android.apps.chrome.Main"
    version_name = "131.0.6778.200"
    version_code = 677820033
    min_sdk = 29
    target_sdk = 34
    start_route = "main"
    screens = {
        "main": Screen("main", (
            Field("Search or type web address", id="url_bar"),
            Button("Go", "go_url"),
            Button("More options", "go", arg="menu", desc="Customize and control Google Chrome"),
            Button("View site information", "go", arg="site_info", when="on_page", desc="View site information"),
            Title("{page_title}"),
            Text("{page_text}"),
        )),
        "menu": Screen("menu", (
            Row("New tab", on_tap="new_tab"),
            Row("Add bookmark", on_tap="bookmark_page", when="on_page", desc="Bookmark this page"),
            Row("History"), Row("Bookmarks", on_tap="go", arg="bookmarks"), Row("Settings", on_tap="go", arg="settings"),
        )),
        "settings": Screen("settings", (
            Title("Settings"),
            Row("Search engine", on_tap="go", arg="settings/search_engine", summary="{engine}"),
            Row("Homepage", on_tap="go", arg="settings/homepage", summary="{homepage_summary}"),
            Row("Privacy and security", on_tap="go", arg="settings/privacy", summary="Clear data, secure connections"),
            Row("Site settings", on_tap="go", arg="settings/site_settings", summary="Permissions, JavaScript, pop-ups"),
            Row("Passwords", summary="Google Password Manager"),
            Row("About Chrome", on_tap="go", arg="settings/about", summary="Chrome {version}"),
        )),
        "settings/search_engine": Screen("settings/search_engine", (
            Title("Search engine"),
            *(Radio(name, checked=f"engine_is_{engine_id}", on_tap="choose_engine", arg=name)
              for name, _keyword, engine_id, _url in ENGINES),
        )),
        "settings/privacy": Screen("settings/privacy", (
            Title("Privacy and security"),
            Row("Clear browsing data", summary="Clear history, cookies, site data, cache"),
            Row("Safe Browsing", summary="Standard protection"),
            Switch("Always use secure connections", checked="secure_on", on_tap="toggle_secure"),
            Text("Upgrade navigations to HTTPS and warn you before loading sites that don't support it"),
        )),
        "settings/about": Screen("settings/about", (
            Title("About Chrome"), Row("Application version", summary="Chrome {version}"),
            Row("Operating system", summary="Android {release}"),
        )),
        **PAGE_SCREENS,
    }

    def initial_state(self) -> dict[str, object]:
        return {"url": ""}

    def derived(self, ctx: AppContext) -> dict[str, object]:
        prefs = read_preferences(ctx) or {}
        engine = _engine_name(prefs)
        url = str(ctx.state.get("url") or "")
        key = secure_key(ctx.phone.packages[PACKAGE].version_name)
        return {
            **page_derived(ctx, url),
            "engine": engine,
            **{f"engine_is_{engine_id}": engine == name for name, _k, engine_id, _u in ENGINES},
            "secure_on": prefs.get(key) is True,
            "version": ctx.phone.packages[PACKAGE].version_name,
            "release": ctx.phone.props["ro.build.version.release"],
            "page_title": "This site can't be reached" if url else "New tab",
            "page_text": f"{url} took too long to respond. ERR_INTERNET_DISCONNECTED" if url else "Search with " + engine,
        }

    def resolve_uri(self, uri: str) -> str | None:
        # Chrome is the browser: it opens any web link.
        return f"page:{uri}" if uri.startswith(("http://", "https://")) else None

    def redirect(self, ctx: AppContext, route: str) -> str:
        if route.startswith("page:"):
            ctx.state["url"] = route[len("page:"):]
            return "main"
        return route

    def tap_go_url(self, ctx: AppContext, arg: str) -> None:
        typed = ctx.runtime.fields.get("url_bar", "").strip()
        if typed:
            ctx.state["url"] = fixup_url(typed)

    def tap_new_tab(self, ctx: AppContext, arg: str) -> None:
        ctx.state["url"] = ""
        ctx.runtime.fields["url_bar"] = ""
        ctx.replace("main")

    def tap_choose_engine(self, ctx: AppContext, name: str) -> None:
        _name, keyword, engine_id, url = _ENGINE_BY_NAME[name]
        prefs = read_preferences(ctx) or {}
        prefs["default_search_provider"] = {"guid": f"485bf7d3-0215-45af-87dc-{engine_id:012d}"}
        prefs["default_search_provider_data"] = {"template_url_data": {
            "short_name": name, "keyword": keyword, "prepopulate_id": engine_id, "url": url,
            "safe_for_autoreplace": True, "created_by_policy": 0, "is_active": 1,
            "last_modified": str(_chrome_time()), "date_created": str(_chrome_time()),
        }}
        write_preferences(ctx, prefs)

    def tap_toggle_secure(self, ctx: AppContext, arg: str) -> None:
        prefs = read_preferences(ctx) or {}
        key = secure_key(ctx.phone.packages[PACKAGE].version_name)
        prefs[key] = prefs.get(key) is not True
        write_preferences(ctx, prefs)


def read_preferences(ctx: AppContext) -> dict[str, object] | None:
    """The profile's Preferences JSON, or None for a fresh profile (no file yet) or an unreadable one."""
    data = ctx.read_file(PREFERENCES)
    if data is None:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def write_preferences(ctx: AppContext, prefs: dict[str, object]) -> None:
    """Write the profile as Chrome does: one compact JSON object, with the keys a real profile starts with."""
    prefs.setdefault("browser", {"has_seen_welcome_page": True})
    prefs.setdefault("profile", {"name": "Person 1", "exit_type": "Normal", "content_settings": {}})
    ctx.write_file(PREFERENCES, json.dumps(prefs, separators=(",", ":"), sort_keys=True).encode())


def fixup_url(typed: str) -> str:
    """What Chrome loads for typed text: a scheme added (https), a bare host given its root path."""
    url = typed if "://" in typed else f"https://{typed}"
    return url if url.count("/") > 2 else url + "/"


def _engine_name(prefs: dict[str, object]) -> str:
    data = prefs.get("default_search_provider_data")
    if isinstance(data, dict) and isinstance(data.get("template_url_data"), dict):
        name = data["template_url_data"].get("short_name")
        if name in _ENGINE_BY_NAME:
            return str(name)
    return "Google"


def _chrome_time() -> int:
    # Chrome stores times as microseconds since 1601-01-01.
    return int((time.time() + 11_644_473_600) * 1_000_000)
