"""run/sign_in.py: the operator's Claude Code sign-in -> the read-only copy a confined run gets (no refresh token), and when it is refused."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from pytest_agentbench.run.sign_in import find_sign_in

ACCESS, REFRESH = "sk-ant-oat01-PLANTED-ACCESS", "sk-ant-ort01-PLANTED-REFRESH"


def _signed_in(home: Path, *, expires_in_s: float = 3600, **extra: object) -> Path:
    path = home / ".claude" / ".credentials.json"
    path.parent.mkdir(parents=True)
    oauth = {"accessToken": ACCESS, "refreshToken": REFRESH, "expiresAt": int((1_000_000 + expires_in_s) * 1000),
             "scopes": ["user:inference"], "subscriptionType": "max", **extra}
    path.write_text(json.dumps({"claudeAiOauth": oauth, "other": {"secret": "x"}}), encoding="utf-8")
    return path


def test_the_copy_keeps_the_access_token_read_only_and_drops_the_refresh_token(tmp_path: Path) -> None:
    source = _signed_in(tmp_path / "home")
    before = source.read_bytes()
    sign_in = find_sign_in({"HOME": str(tmp_path / "home")})
    assert sign_in is not None and sign_in.source == source
    private = tmp_path / "private"
    private.mkdir()
    copy = sign_in.write_copy(private)
    data = json.loads(copy.read_text(encoding="utf-8"))
    assert data == {"claudeAiOauth": {"accessToken": ACCESS, "expiresAt": 1_003_600_000, "scopes": ["user:inference"],
                                      "subscriptionType": "max"}}
    assert stat.S_IMODE(copy.stat().st_mode) == 0o400
    assert source.read_bytes() == before
    # What a record keeps of it holds no token.
    assert ACCESS not in json.dumps(sign_in.describe()) and REFRESH not in json.dumps(sign_in.describe())
    assert ACCESS not in repr(sign_in.describe())


@pytest.mark.parametrize("variable", ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK"])
def test_an_api_variable_wins_over_the_sign_in_file(tmp_path: Path, variable: str) -> None:
    _signed_in(tmp_path)
    assert find_sign_in({"HOME": str(tmp_path), variable: "1"}) is None


def test_claude_config_dir_is_where_the_sign_in_lives(tmp_path: Path) -> None:
    _signed_in(tmp_path / "elsewhere")
    assert find_sign_in({"HOME": str(tmp_path / "nobody"), "CLAUDE_CONFIG_DIR": str(tmp_path / "elsewhere" / ".claude")}) is not None


@pytest.mark.parametrize("content", ["", "{not json", '{"claudeAiOauth": {}}', '{"claudeAiOauth": {"accessToken": ""}}', "[]"])
def test_no_usable_sign_in_is_none(tmp_path: Path, content: str) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / ".credentials.json").write_text(content, encoding="utf-8")
    assert find_sign_in({"HOME": str(tmp_path)}) is None


def test_a_sign_in_about_to_end_is_refused_with_the_fix(tmp_path: Path) -> None:
    sign_in = find_sign_in({"HOME": str(tmp_path)} if _signed_in(tmp_path, expires_in_s=60) else {})
    assert sign_in is not None
    assert sign_in.problem(now=1_000_000) is not None and "run `claude` once" in sign_in.problem(now=1_000_000)
    assert "expired" in sign_in.problem(now=1_000_000 + 61)
    assert sign_in.problem(now=1_000_000 - 3600) is None
    assert ACCESS not in sign_in.problem(now=1_000_000)


def test_no_credential_is_written_where_the_copy_is_not_asked_for(tmp_path: Path) -> None:
    _signed_in(tmp_path)
    find_sign_in({"HOME": str(tmp_path)})
    assert sorted(os.listdir(tmp_path / ".claude")) == [".credentials.json"]
