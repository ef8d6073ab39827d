"""The simulated phone's apps, declared as data: the registry of built-in apps and a plain app for unknown APKs."""

from __future__ import annotations

from ..ui import Text, Title
from .chrome import ChromeApp
from .clock import ClockApp
from .contacts import ContactsApp
from .launcher import LauncherApp
from .messages import MessagesApp
from .model import App, AppContext, AppRuntime, PrefValue, Screen, read_shared_prefs, write_shared_prefs
from .photos import PhotosApp
from .playground import PlaygroundApp
from .providers import PROVIDER_APPS
from .settings import SettingsApp
from .testbed import TestbedApp

BUILTIN_APPS: tuple[type[App], ...] = (LauncherApp, SettingsApp, PlaygroundApp, ClockApp, MessagesApp, ChromeApp,
                                       PhotosApp, ContactsApp, TestbedApp, *PROVIDER_APPS)

__all__ = ["App", "AppContext", "AppRuntime", "BUILTIN_APPS", "PrefValue", "Screen", "generic_app",
           "read_shared_prefs", "write_shared_prefs"]


def generic_app(package: str, label: str, *, version_name: str = "1.0", version_code: int = 1,
                debuggable: bool = False) -> App:
    """An app installed from an APK the sim has no declaration for: one screen showing its label."""
    attrs = {
        "package": package, "label": label, "activity": f"{package}.MainActivity", "version_name": version_name,
        "version_code": version_code, "debuggable": debuggable, "system": False, "min_sdk": 24,
        "start_route": "main", "screens": {"main": Screen("main", (Title(label), Text(f"{label} is running")))},
    }
    return type(f"Generic_{label}", (App,), attrs)()
