"""Phone numbers as typed -> their digits, E.164 form and the `+1 555-123-4567` form the Contacts editor saves."""

from __future__ import annotations

import re


def digits(text: str) -> str:
    """Only the digits of a phone number."""
    return re.sub(r"\D", "", text)


def normalize_e164(text: str) -> str | None:
    """`+15551234567` for a US number (10 digits, or 11 starting with 1), `+<digits>` for an international one.

    None when there are too few digits to be a number, as PhoneNumberUtils.formatNumberToE164 gives null.
    """
    number = digits(text)
    if text.strip().startswith("+") and len(number) >= 8:
        return "+" + number
    if len(number) == 10:
        return "+1" + number
    if len(number) == 11 and number.startswith("1"):
        return "+" + number
    return None


def format_for_display(text: str) -> str:
    """What the Contacts editor saves for a typed number: `5551234567` -> `+1 555-123-4567`; others as typed."""
    e164 = normalize_e164(text)
    if e164 is None or not e164.startswith("+1") or len(e164) != 12:
        return text.strip()
    national = e164[2:]
    return f"+1 {national[:3]}-{national[3:6]}-{national[6:]}"
