"""Tests for baseline/server_build.py: the server-build fingerprint and its non-secret provider identity."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import pytest

from pytest_agentbench.baseline import server_build
from pytest_agentbench.baseline.server_build import ServerBuild, provider_identity, server_build_fingerprint

def changed_components(old: dict[str, str], new: dict[str, str]) -> tuple[str, ...]:
    """Names of the components that differ between two builds (sorted)."""
    return tuple(sorted(key for key in set(old) | set(new) if old.get(key) != new.get(key)))


SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-SECRETAPIKEYVALUE",
    "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-SECRETOAUTHVALUE",
    "ANTHROPIC_BASE_URL": "https://baseuser:basepass123@gateway.example.com:8443/v1/anthropic?key=qsecret",
    "HTTPS_PROXY": "http://proxyuser:proxypass456@proxy.corp.example:3128",
    "https_proxy": "http://proxyuser:proxypass456@proxy.corp.example:3128",
    "AWS_ACCESS_KEY_ID": "AKIAEXAMPLEKEYID0001",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/SECRETAWSACCESSKEY",
    "AWS_SESSION_TOKEN": "FwoGZXIvYXdzESECRETSESSION",
    "ANTHROPIC_CUSTOM_HEADERS": "X-Api-Token: headersecretvalue",
    "ANTHROPIC_MODEL": "claude-sonnet-5-5",
    "AGENTBENCH_OPENAI_API_KEY": "sk-agentbench-SECRETLOCALKEY",
    "NO_PROXY": "localhost,127.0.0.1",
    "PATH": "/usr/bin:/bin",
}

SECRET_VALUES = (
    "SECRETAPIKEYVALUE",
    "SECRETOAUTHVALUE",
    "SECRETLOCALKEY",
    "basepass123",
    "baseuser",
    "proxypass456",
    "proxyuser",
    "qsecret",
    "AKIAEXAMPLEKEYID0001",
    "SECRETAWSACCESSKEY",
    "SECRETSESSION",
    "headersecretvalue",
    "/v1/anthropic",
)


def _build(environ, tmp_path: Path, **overrides) -> ServerBuild:
    profile = tmp_path / "profile"
    if not profile.exists():
        profile.mkdir()
        (profile / "server.js").write_text("console.log('server')\n")
    values = dict(
        profile_build_files=[profile],
        agent_command="sh",
        environ=environ,
        adb_endpoint="tcp:localhost:5037",
        adb_versions={"/usr/bin/adb": "Android Debug Bridge version 1.0.41\nVersion 29.0.6-debian\nRunning on Linux 6.1"},
        project_root=tmp_path,
        managed_settings_dirs=(),
    )
    values.update(overrides)
    return server_build_fingerprint(**values)


def test_no_secret_value_is_in_the_components(tmp_path):
    build = _build(SECRETS, tmp_path)
    dumped = json.dumps(build.components)
    for secret in SECRET_VALUES:
        assert secret not in dumped
    components = build.components
    assert components["provider"] == "anthropic"
    assert components["provider.credential"] == "ANTHROPIC_API_KEY,CLAUDE_CODE_OAUTH_TOKEN,AGENTBENCH_OPENAI_API_KEY"
    assert components["provider.url.ANTHROPIC_BASE_URL"].startswith("https://gateway.example.com:8443 path=sha256:")
    assert components["provider.url.HTTPS_PROXY"] == "http://proxy.corp.example:3128"
    assert components["provider.url.HTTPS_PROXY.credentials"].startswith("sha256:")
    assert components["provider.selector.AWS_ACCESS_KEY_ID"].startswith("sha256:")
    assert components["provider.env.ANTHROPIC_MODEL"] == "claude-sonnet-5-5"
    assert components["provider.noProxy.NO_PROXY"] == "127.0.0.1,localhost"
    assert components["adb./usr/bin/adb"] == "Android Debug Bridge version 1.0.41 / Version 29.0.6-debian"
    assert "AWS_SECRET_ACCESS_KEY" not in dumped


@pytest.mark.parametrize(
    ("change", "component"),
    [
        ({"CLAUDE_CODE_USE_BEDROCK": "1"}, "provider"),
        ({"CLAUDE_CODE_USE_VERTEX": "true"}, "provider"),
        ({"CLAUDE_CODE_USE_FOUNDRY": "1"}, "provider"),
        ({"ANTHROPIC_BASE_URL": "https://baseuser:basepass123@other.example.com:8443/v1/anthropic?key=qsecret"}, "provider.url.ANTHROPIC_BASE_URL"),
        ({"ANTHROPIC_BASE_URL": "http://baseuser:basepass123@gateway.example.com:8443/v1/anthropic?key=qsecret"}, "provider.url.ANTHROPIC_BASE_URL"),
        ({"ANTHROPIC_BASE_URL": "https://baseuser:basepass123@gateway.example.com:8443/v2?key=qsecret"}, "provider.url.ANTHROPIC_BASE_URL"),
        ({"HTTPS_PROXY": "http://proxyuser:proxypass456@proxy2.corp.example:3128"}, "provider.url.HTTPS_PROXY"),
        ({"HTTPS_PROXY": "http://proxyuser:otherpass@proxy.corp.example:3128"}, "provider.url.HTTPS_PROXY.credentials"),
        ({"AWS_ACCESS_KEY_ID": "AKIAEXAMPLEKEYID0002"}, "provider.selector.AWS_ACCESS_KEY_ID"),
        ({"ANTHROPIC_CUSTOM_HEADERS": "X-Api-Token: other"}, "provider.customHeaders"),
        ({"ANTHROPIC_API_KEY": ""}, "provider.credential"),
        ({"AWS_REGION": "eu-west-1"}, "provider.env.AWS_REGION"),
        ({"CLOUD_ML_REGION": "us-east5"}, "provider.env.CLOUD_ML_REGION"),
        ({"VERTEX_REGION_CLAUDE_SONNET_5": "europe-west4"}, "provider.env.VERTEX_REGION_CLAUDE_SONNET_5"),
        ({"ANTHROPIC_DEFAULT_SONNET_MODEL": "claude-sonnet-5-6"}, "provider.env.ANTHROPIC_DEFAULT_SONNET_MODEL"),
        ({"CLAUDE_CODE_SUBAGENT_MODEL": "claude-haiku-5"}, "provider.env.CLAUDE_CODE_SUBAGENT_MODEL"),
        ({"ANTHROPIC_VERTEX_PROJECT_ID": "my-project"}, "provider.selector.ANTHROPIC_VERTEX_PROJECT_ID"),
        ({"AWS_PROFILE": "bench"}, "provider.selector.AWS_PROFILE"),
        ({"ANTHROPIC_WORKSPACE_ID": "wrkspc_01"}, "provider.selector.ANTHROPIC_WORKSPACE_ID"),
        ({"NO_PROXY": "localhost"}, "provider.noProxy.NO_PROXY"),
        ({"AGENTBENCH_OPENAI_BASE_URL": "http://gpu-box:8077/v1"}, "provider.url.AGENTBENCH_OPENAI_BASE_URL"),
        ({"AGENTBENCH_OPENAI_API_KEY": ""}, "provider.credential"),
        ({"AGENTBENCH_OPENAI_TEMPERATURE": "0.7"}, "provider.env.AGENTBENCH_OPENAI_TEMPERATURE"),
        ({"AGENTBENCH_OPENAI_PRICE_INPUT_PER_MTOK": "0.2"}, "provider.env.AGENTBENCH_OPENAI_PRICE_INPUT_PER_MTOK"),
    ],
)
def test_provider_or_host_changes_change_the_build(tmp_path, change, component):
    before = _build(SECRETS, tmp_path)
    after = _build({**SECRETS, **change}, tmp_path)
    assert after.digest != before.digest
    assert component in changed_components(before.components, after.components)


@pytest.mark.parametrize(
    "change",
    [
        {"ANTHROPIC_API_KEY": "sk-ant-api03-ROTATEDKEY"},
        {"CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-ROTATEDTOKEN"},
        {"AWS_SECRET_ACCESS_KEY": "rotated/secret"},
        {"AWS_SESSION_TOKEN": "rotated-session"},
        {"ANTHROPIC_AUTH_TOKEN": ""},
        {"UNRELATED_VARIABLE": "x"},
        # The key's value never counts, only whether it is set.
        {"AGENTBENCH_OPENAI_API_KEY": "sk-rotated"},
    ],
)
def test_a_secret_value_change_keeps_the_build(tmp_path, change):
    assert _build({**SECRETS, **change}, tmp_path).digest == _build(SECRETS, tmp_path).digest


def test_build_inputs_change_the_digest(tmp_path):
    before = _build(SECRETS, tmp_path)
    (tmp_path / "profile" / "server.js").write_text("console.log('changed')\n")
    after_profile = _build(SECRETS, tmp_path)
    assert changed_components(before.components, after_profile.components) == ("profileBuild",)
    (tmp_path / "uv.lock").write_text("lock\n")
    after_lock = _build(SECRETS, tmp_path)
    assert changed_components(after_profile.components, after_lock.components) == ("lockFiles",)
    other_adb = _build(SECRETS, tmp_path, adb_versions={"/usr/bin/adb": "Android Debug Bridge version 1.0.41\nVersion 35.0.2"})
    assert changed_components(after_lock.components, other_adb.components) == ("adb./usr/bin/adb",)
    assert _build(SECRETS, tmp_path, adb_endpoint="tcp:localhost:5099").components["adbEndpoint"] == "tcp:localhost:5099"


def test_an_upgraded_dependency_or_a_changed_pyproject_changes_the_build(tmp_path, monkeypatch: pytest.MonkeyPatch):
    # No lock file: an `mcp` upgrade must still change the build.
    before = _build(SECRETS, tmp_path)
    assert before.components["python.mcp"] == version("mcp") and before.components["python.jsonschema"] == version("jsonschema")
    upgraded = tuple((name, "99.0" if name == "mcp" else installed) for name, installed in server_build.dependency_versions())
    monkeypatch.setattr(server_build, "dependency_versions", lambda: upgraded)
    after = _build(SECRETS, tmp_path)
    assert changed_components(before.components, after.components) == ("python.mcp",) and after.digest != before.digest
    package = tmp_path / "checkout" / "pytest_agentbench"
    package.mkdir(parents=True)
    (package.parent / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    first = _build(SECRETS, tmp_path, package_root=package)
    (package.parent / "pyproject.toml").write_text("[project]\nname = 'x'\ndependencies = ['mcp<9']\n")
    assert changed_components(first.components, _build(SECRETS, tmp_path, package_root=package).components) == ("packageProject",)


def test_adb_running_on_line_is_ignored(tmp_path):
    first = _build(SECRETS, tmp_path, adb_versions={"adb": "Android Debug Bridge version 1.0.41\nRunning on Linux 6.1"})
    second = _build(SECRETS, tmp_path, adb_versions={"adb": "Android Debug Bridge version 1.0.41\nRunning on Linux 6.9"})
    assert first.digest == second.digest


def test_agent_command_is_hashed_by_content(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "fake-claude"
    wrapper.write_text("#!/bin/sh\nexec claude \"$@\"\n")
    wrapper.chmod(0o755)
    environ = {**SECRETS, "PATH": str(bin_dir)}
    first = _build(environ, tmp_path, agent_command="fake-claude")
    assert first.components["agentCommand"].startswith("fake-claude sha256:")
    wrapper.write_text("#!/bin/sh\nexec claude --debug \"$@\"\n")
    second = _build(environ, tmp_path, agent_command="fake-claude")
    assert changed_components(first.components, second.components) == ("agentCommand",)
    missing = _build(environ, tmp_path, agent_command="no-such-agent --flag")
    assert missing.components["agentCommand"] == "unknown (not found: no-such-agent)"


def test_agent_command_arguments_are_only_digested(tmp_path):
    build = _build(SECRETS, tmp_path, agent_command=["sh", "--token=SECRETARGUMENT"])
    assert "SECRETARGUMENT" not in json.dumps(build.components)
    assert " args=sha256:" in build.components["agentCommand"]


def test_google_credentials_identity_never_reads_the_key(tmp_path):
    credentials = tmp_path / "sa.json"
    credentials.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "bench-project",
                "client_email": "bench@bench-project.iam.gserviceaccount.com",
                "private_key": "-----BEGIN PRIVATE KEY-----SECRETPRIVATEKEY",
                "private_key_id": "SECRETKEYID",
            }
        )
    )
    identity = provider_identity({"CLAUDE_CODE_USE_VERTEX": "1", "GOOGLE_APPLICATION_CREDENTIALS": str(credentials)})
    dumped = json.dumps(identity)
    assert identity["provider"] == "vertex"
    assert identity["googleCredentials.type"] == "service_account"
    assert identity["googleCredentials.client_email"].startswith("sha256:")
    for secret in ("SECRETPRIVATEKEY", "SECRETKEYID", "bench@", "bench-project"):
        assert secret not in dumped
    assert provider_identity({"GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "absent.json")})["googleCredentials"] == "unreadable"


def test_bedrock_digests_the_aws_config_and_its_role(tmp_path):
    config = tmp_path / "config"
    config.write_text("[profile bench]\nrole_arn = arn:aws:iam::123456789012:role/Bench\nregion = us-east-1\n")
    environ = {"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_PROFILE": "bench", "AWS_CONFIG_FILE": str(config), "AWS_BEARER_TOKEN_BEDROCK": "SECRETBEARER"}
    identity = provider_identity(environ)
    assert identity["credential"] == "AWS_BEARER_TOKEN_BEDROCK"
    assert identity["awsConfig"].startswith("sha256:")
    assert identity["awsConfig.role_arn"].startswith("sha256:")
    assert "123456789012" not in json.dumps(identity) and "SECRETBEARER" not in json.dumps(identity)
    config.write_text("[profile bench]\nrole_arn = arn:aws:iam::123456789012:role/Other\n")
    assert provider_identity(environ)["awsConfig.role_arn"] != identity["awsConfig.role_arn"]


def test_managed_settings_files_are_digested(tmp_path):
    managed = tmp_path / "etc-claude-code"
    managed.mkdir()
    (managed / "managed-settings.json").write_text('{"permissions": {}}')
    build = _build(SECRETS, tmp_path, managed_settings_dirs=(str(managed), str(tmp_path / "absent")))
    key = f"managed.{(managed / 'managed-settings.json').as_posix()}"
    assert build.components[key].startswith("sha256:")
    (managed / "managed-settings.json").write_text('{"permissions": {"deny": ["Bash"]}}')
    after = _build(SECRETS, tmp_path, managed_settings_dirs=(str(managed),))
    assert changed_components(build.components, after.components) == (key,)


def test_build_does_not_depend_on_where_the_project_lives(tmp_path):
    first_root, second_root = tmp_path / "a", tmp_path / "b"
    for root in (first_root, second_root):
        root.mkdir()
    assert _build(SECRETS, first_root).digest == _build(SECRETS, second_root).digest




@pytest.mark.parametrize(
    ("command", "environ", "expected"),
    [
        ("agentbench-agent", {"AGENTBENCH_OPENAI_BASE_URL": "http://user:pw@GPU-Box:8077/v1"},
         {"provider": "openai-compatible", "endpoint": "http://gpu-box:8077"}),
        (["/venv/bin/agentbench-agent", "--x"], {"AGENTBENCH_OPENAI_BASE_URL": "https://models.example/v1"},
         {"provider": "openai-compatible", "endpoint": "https://models.example"}),
        ("agentbench-agent", {}, {"provider": "openai-compatible", "endpoint": "unset"}),
        # Claude in a session whose environment also names the OpenAI endpoint: still Anthropic.
        ("claude", {"AGENTBENCH_OPENAI_BASE_URL": "http://gpu-box:8077/v1"}, {"provider": "anthropic"}),
    ],
    ids=["agent-with-port", "agent-by-path", "agent-no-url", "claude"],
)
def test_agentbench_agents_provider_is_its_openai_compatible_endpoint(command, environ: dict, expected: dict) -> None:
    identity = provider_identity(environ, command)
    assert {key: identity.get(key) for key in expected} == expected
    assert "pw" not in json.dumps(identity)


def _fake_adb(path: Path, version_line: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho 'Android Debug Bridge version 1.0.41'\necho '{version_line}'\n")
    path.chmod(0o755)
    return path


def test_adb_client_versions_finds_path_s_the_named_sdks_and_a_default_sdk(tmp_path: Path) -> None:
    _fake_adb(tmp_path / "bin" / "adb", "Version 34.0.5")
    _fake_adb(tmp_path / "sdk" / "platform-tools" / "adb", "Version 35.0.2")
    _fake_adb(tmp_path / "home" / "Android" / "Sdk" / "platform-tools" / "adb", "Version 36.0.0")
    named = server_build.adb_client_versions({"PATH": str(tmp_path / "bin"), "ANDROID_HOME": str(tmp_path / "sdk"),
                                              "ANDROID_SDK_ROOT": str(tmp_path / "nosdk"), "HOME": str(tmp_path / "home")})
    assert {label: text.splitlines()[-1] if "\n" in text else text for label, text in named.items()} == {
        "path": "Version 34.0.5", "ANDROID_HOME": "Version 35.0.2", "ANDROID_SDK_ROOT": "absent"}
    # No SDK variable: the command-line tools' default location is searched, as the server's detection would.
    found = server_build.adb_client_versions({"PATH": str(tmp_path / "nowhere"), "HOME": str(tmp_path / "home")})
    assert found["path"] == "unknown" and found["sdk:~/Android/Sdk"].splitlines()[-1] == "Version 36.0.0"


def test_the_adb_server_s_own_version_is_a_component(tmp_path: Path) -> None:
    old = _build(SECRETS, tmp_path, adb_server_version="protocol 41")
    new = _build(SECRETS, tmp_path, adb_server_version="protocol 40")
    assert changed_components(old.components, new.components) == ("adbServer",)
