"""The operator's Claude Code sign-in -> what a confined run may hold of it: the access token, read-only, never the refresh token.

A user signed in to Claude Code with a subscription (no API key) has `~/.claude/.credentials.json`
(`$CLAUDE_CONFIG_DIR/.credentials.json` when set). Confined, the agent's HOME is its empty
workdir, so it would find no sign-in and every run would end in an authentication error. The
sandbox binds a copy of that file, read-only, at the agent's own `~/.claude/.credentials.json`;
the copy keeps the access token and its expiry, and drops the refresh token: a refresh inside the
sandbox can neither rewrite the user's file nor rotate the user's refresh token out from under
them. The copy lives in the harness's private temp directory (never the run directory) and is
removed with the sandbox; no record holds a token (only the account kind and the expiry).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: Variables with which Claude Code authenticates on its own (the sign-in file is not used then).
API_AUTH_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
                      "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX")
CREDENTIALS_NAME = ".credentials.json"
#: Kept from the sign-in's `claudeAiOauth` block; everything else (the refresh token first) is dropped.
KEPT_FIELDS = ("accessToken", "expiresAt", "scopes", "subscriptionType", "rateLimitTier")
#: A sign-in that ends sooner than this cannot carry a run: it is refused before any run.
MIN_VALID_S = 120


@dataclass(frozen=True)
class SignIn:
    """The operator's Claude Code sign-in as a confined run may use it.

    Attributes:
        source: The user's own credentials file (only ever read).
        kept: The `claudeAiOauth` fields the sandbox's copy holds (no refresh token).
        expires_at: When the access token ends (seconds since the epoch), or None if unsaid.
    """

    source: Path
    kept: Mapping[str, object]
    expires_at: float | None

    def describe(self) -> dict:
        """What result.json records: the kind of account and the expiry, never a token."""
        return {"source": "~/.claude/" + CREDENTIALS_NAME, "subscription": self.kept.get("subscriptionType"),
                "expiresAt": self.expires_at, "refreshToken": "withheld", "mount": "read-only"}

    def problem(self, now: float | None = None) -> str | None:
        """Why this sign-in cannot carry a run (expired or about to), with the fix; None when it can."""
        if self.expires_at is None:
            return None
        left = self.expires_at - (time.time() if now is None else now)
        if left >= MIN_VALID_S:
            return None
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.expires_at))
        return (f"the Claude Code sign-in in {self.source} {'expired' if left < 0 else 'expires'} at {when}; a confined run gets "
                "no refresh token (a refresh inside the sandbox would rotate yours), so refresh it first: run `claude` once, "
                "or set CLAUDE_CODE_OAUTH_TOKEN from `claude setup-token`, or ANTHROPIC_API_KEY")

    def write_copy(self, directory: Path) -> Path:
        """The sandbox's copy (mode 0400) in the harness's private `directory`; returns its path."""
        path = Path(directory) / "claude-credentials.json"
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump({"claudeAiOauth": dict(self.kept)}, out)
        return path


def credentials_file(environ: Mapping[str, str]) -> Path | None:
    """Where Claude Code keeps the user's sign-in (`$CLAUDE_CONFIG_DIR` or `~/.claude`), or None without a HOME."""
    config = environ.get("CLAUDE_CONFIG_DIR")
    if config:
        return Path(config).expanduser() / CREDENTIALS_NAME
    home = environ.get("HOME")
    return Path(home) / ".claude" / CREDENTIALS_NAME if home else None


def find_sign_in(environ: Mapping[str, str]) -> SignIn | None:
    """The user's subscription sign-in when Claude Code would use it (no API variable set), else None."""
    if any(environ.get(name) for name in API_AUTH_VARIABLES):
        return None
    path = credentials_file(environ)
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    oauth = data.get("claudeAiOauth") if isinstance(data, dict) else None
    if not isinstance(oauth, dict) or not isinstance(oauth.get("accessToken"), str) or not oauth["accessToken"]:
        return None
    expires = oauth.get("expiresAt")
    expires_at = expires / 1000 if isinstance(expires, (int, float)) and not isinstance(expires, bool) else None
    return SignIn(path, {name: oauth[name] for name in KEPT_FIELDS if name in oauth}, expires_at)
