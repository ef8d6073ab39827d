"""Content authorities -> the simulated phone's providers (settings, contacts, SMS, media), each in its package."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import ContentError, ContentUri, Cursor, Provider, parse_uri
from .contacts import ContactsProvider
from .media import MediaProvider
from .settings import SettingsProvider
from .telephony import TelephonyProvider

if TYPE_CHECKING:
    from ..phone import Phone

PROVIDER_CLASSES: tuple[type[Provider], ...] = (SettingsProvider, ContactsProvider, TelephonyProvider, MediaProvider)

__all__ = ["ContentError", "ContentUri", "Cursor", "PROVIDER_CLASSES", "Provider", "parse_uri", "provider_for"]


def provider_for(phone: Phone, authority: str) -> Provider:
    """The provider serving an authority; ContentError("Could not find provider") when none (or its package is gone)."""
    provider = phone.providers.get(authority)
    if provider is None or provider.package not in phone.packages:
        raise ContentError("java.lang.IllegalStateException", f"Could not find provider: {authority}")
    return provider
