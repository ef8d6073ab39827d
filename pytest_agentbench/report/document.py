"""Evidence text -> the same with secrets masked (the session document is `records.SessionResult`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentbench.records.result import RunResult
from pytest_agentbench.redact import MASK, is_secret_name, mask_url_credentials

# Secret values shorter than this are not searched for in free text: a 1-3 character "secret"
# would mask ordinary words.
_MIN_SECRET_CHARS = 6


# --------------------------------------------------------------------------- secrets


def scrub(value: Any, environ: Mapping[str, str] | None = None) -> Any:
    """A copy of a JSON-like value with URL credentials and the values of secret variables masked.

    The agent's reply and tool results are copied into the report as evidence; an agent that
    echoes a token or a proxy URL must not leak it into result.json or the terminal.

    Args:
        value: Strings, numbers, lists and dicts.
        environ: The run's environment; values of secret-named variables (redact.is_secret_name)
            and URL credentials found in it are masked wherever they appear.

    Returns:
        The scrubbed copy.
    """
    secrets = sorted(
        {text for name, text in (environ or {}).items() if is_secret_name(name) and len(text) >= _MIN_SECRET_CHARS},
        key=len,
        reverse=True,
    )
    return _scrub(value, secrets)


def _scrub(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        text = mask_url_credentials(value)
        for secret in secrets:
            text = text.replace(secret, MASK)
        return text
    if isinstance(value, Mapping):
        return {key: _scrub(item, secrets) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(item, secrets) for item in value]
    return value


def verdict_status(result: Mapping[str, Any]) -> str:
    """A result.json mapping's verdict status (incomplete without one), read through `RunResult.from_json`.

    An adapter for report/html, which still renders documents; every other report reads `RunResult.status`.
    """
    return RunResult.from_json(result).status
