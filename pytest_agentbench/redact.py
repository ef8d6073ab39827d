"""Environment mappings and text -> copies safe to print, with secret values masked."""

from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "***"

# Name fragments that mark a variable as a secret. Matching by name (not by value) means a new
# provider's credential is masked without anyone teaching this module its format.
SECRET_NAME_FRAGMENTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "HEADERS")

# scheme://user:password@host -> the password part; also scheme://token@host.
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s]+)@")


def is_secret_name(name: str) -> bool:
    """Tell whether a variable's value must never be printed.

    Args:
        name: An environment variable name.

    Returns:
        True when the upper-cased name contains any of ``SECRET_NAME_FRAGMENTS``.
    """
    upper = name.upper()
    return any(fragment in upper for fragment in SECRET_NAME_FRAGMENTS)


def mask_url_credentials(text: str) -> str:
    """Replace the password (or a lone token) in every ``scheme://user:pass@host`` in a text.

    Args:
        text: Any text, for example a proxy URL.

    Returns:
        The text with ``user:pass@`` turned into ``user:***@`` and ``token@`` into ``***@``.
    """

    def _mask(match: re.Match[str]) -> str:
        user, colon, _password = match.group("userinfo").partition(":")
        userinfo = f"{user}:{MASK}" if colon else MASK
        return f"{match.group('scheme')}{userinfo}@"

    return _URL_CREDENTIALS.sub(_mask, text)


def mask_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """Copy an environment with every secret value masked, for printouts and artifacts.

    Args:
        env: Variable name -> value.

    Returns:
        A new dict: secret-named variables map to ``***`` (empty values stay empty, so a
        reader can still tell "set but empty"), every other value has URL credentials masked.
    """
    masked: dict[str, str] = {}
    for name, value in env.items():
        if is_secret_name(name) and value:
            masked[name] = MASK
        else:
            masked[name] = mask_url_credentials(value)
    return masked
