"""Tests for redact.py: secret values are masked by name, URL credentials inside values."""

from __future__ import annotations

import pytest

from pytest_agentbench.redact import is_secret_name, mask_secrets, mask_url_credentials


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("ANTHROPIC_API_KEY", True),
        ("ANTHROPIC_AUTH_TOKEN", True),
        ("CLAUDE_CODE_OAUTH_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("AWS_SESSION_TOKEN", True),
        ("DB_PASSWORD", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("ANTHROPIC_CUSTOM_HEADERS", True),
        ("github_token", True),
        ("PATH", False),
        ("ANTHROPIC_MODEL", False),
        ("HTTPS_PROXY", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://user:pass@proxy:3128", "http://user:***@proxy:3128"),
        ("https://token123@gateway.example/v1", "https://***@gateway.example/v1"),
        ("socks5://a:b@h:1,http://c:d@e:2", "socks5://a:***@h:1,http://c:***@e:2"),
        ("https://gateway.example/v1", "https://gateway.example/v1"),
        ("me@example.com", "me@example.com"),
    ],
)
def test_url_credentials(text: str, expected: str) -> None:
    assert mask_url_credentials(text) == expected


def test_mask_secrets_copies_and_masks() -> None:
    env = {"ANTHROPIC_API_KEY": "sk-ant-1", "EMPTY_TOKEN": "", "HTTPS_PROXY": "http://u:p@h:1", "HOME": "/root"}
    assert mask_secrets(env) == {"ANTHROPIC_API_KEY": "***", "EMPTY_TOKEN": "", "HTTPS_PROXY": "http://u:***@h:1", "HOME": "/root"}
    assert env["ANTHROPIC_API_KEY"] == "sk-ant-1"
