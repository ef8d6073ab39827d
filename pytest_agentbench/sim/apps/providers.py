"""The system packages behind the content providers (their private storage holds the providers' databases)."""

from __future__ import annotations

from ..ui import Title
from .model import App, Screen


class _StorageApp(App):
    """A provider-only system package: no launcher activity, one screen nobody normally sees."""

    launchable = False
    start_route = "main"

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.screens = {"main": Screen("main", (Title(cls.label),))}


class SettingsStorageApp(_StorageApp):
    package = "com.android.providers.settings"
    label = "Settings Storage"
    activity = "com.android.providers.settings.SettingsProvider"


class ContactsStorageApp(_StorageApp):
    package = "com.android.providers.contacts"
    label = "Contacts Storage"
    activity = "com.android.providers.contacts.ContactsProvider2"


class TelephonyStorageApp(_StorageApp):
    package = "com.android.providers.telephony"
    label = "Phone and Messaging Storage"
    activity = "com.android.providers.telephony.TelephonyProvider"


class MediaStorageApp(_StorageApp):
    package = "com.android.providers.media.module"
    label = "Media Storage"
    activity = "com.android.providers.media.MediaProvider"
    version_name = "340090000"
    version_code = 340090000


PROVIDER_APPS: tuple[type[App], ...] = (SettingsStorageApp, ContactsStorageApp, TelephonyStorageApp, MediaStorageApp)
