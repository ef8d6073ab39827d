"""Tests for fingerprint.py: device fingerprint parsing from one batched adb output, and the server-build fingerprint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentbench.fingerprint import (
    DEVICE_FINGERPRINT_COMMANDS,
    DEVICE_FINGERPRINT_FIELDS,
    ServerBuild,
    changed_components,
    device_fingerprint_script,
    parse_app_build,
    parse_device_fingerprint,
    provider_identity,
    scoring_code_digest,
    server_build_fingerprint,
)

MARK = "@@agentbench-fp@@"

# What a Pixel on Android 14 prints for each command of the batch.
PIXEL_SECTIONS = {
    "sdk": "34",
    "model": "Pixel 8",
    "localeSystem": "en-GB",
    "localeProduct": "en-US",
    "wmSize": "Physical size: 1080x2400",
    "wmDensity": "Physical density: 420",
    "fontScale": "1.15",
    "windowAnimationScale": "0.0",
    "transitionAnimationScale": "0.0",
    "animatorDurationScale": "0.0",
    "uiModeNight": "Night mode: no",
    "accessibilityServices": "null",
    "navigationMode": "2",
    "inputMethod": "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME",
    "timeZone": "Europe/London",
    "time1224": "24",
    "buildId": "UQ1A.240205.004",
    "windowDisplays": (
        "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n"
        "  Display: mDisplayId=0 rootTasks=2\n"
        "    init=1080x2400 420dpi cur=1080x2400 app=1080x2337 rng=1080x1017-2337x2274\n"
        "    mCurrentRotation=ROTATION_0 mLastOrientation=-1\n"
    ),
    "accelerometerRotation": "1",
    "userRotation": "0",
}

PIXEL_FINGERPRINT = {
    "sdk": "34",
    "model": "Pixel 8",
    "locale": "en-GB",
    "screenSize": "1080x2400",
    "density": "420",
    "fontScale": "1.15",
    "windowAnimationScale": "0.0",
    "transitionAnimationScale": "0.0",
    "animatorDurationScale": "0.0",
    "theme": "light",
    "accessibilityServices": "none",
    "navigationMode": "gesture",
    "inputMethod": "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME",
    "timeZone": "Europe/London",
    "clock": "24",
    "buildId": "UQ1A.240205.004",
    "rotation": "0",
}


def _output(sections: dict[str, str], *, crlf: bool = False) -> str:
    text = "".join(f"{MARK}begin {name}\n{body}\n{MARK}end {name}\n" for name, body in sections.items())
    return text.replace("\n", "\r\n") if crlf else text


def test_script_runs_every_command_once_between_markers_in_one_shell_line():
    script = str(device_fingerprint_script())
    assert "\n" not in script
    for section, argv in DEVICE_FINGERPRINT_COMMANDS:
        assert script.count(f"{MARK}begin {section}'") == 1
        assert " ".join(argv) + " 2>/dev/null" in script


@pytest.mark.parametrize("crlf", [False, True])
def test_full_output_gives_every_field(crlf):
    fingerprint = parse_device_fingerprint(_output(PIXEL_SECTIONS, crlf=crlf))
    assert fingerprint == PIXEL_FINGERPRINT
    assert tuple(fingerprint) == DEVICE_FINGERPRINT_FIELDS


# Each row: the sections changed, the field, and what it reads as.
@pytest.mark.parametrize(
    ("sections", "field", "expected"),
    [
        ({"sdk": ""}, "sdk", "unknown"),
        ({"model": "Pixel 7 Pro"}, "model", "Pixel 7 Pro"),
        ({"localeSystem": ""}, "locale", "en-US"),
        ({"localeSystem": "", "localeProduct": ""}, "locale", "unknown"),
        ({"wmSize": "Physical size: 1080x2400\nOverride size: 720x1600"}, "screenSize", "720x1600"),
        ({"wmSize": "cmd: Can't find service: window"}, "screenSize", "unknown"),
        ({"wmDensity": "Physical density: 420\nOverride density: 360"}, "density", "360"),
        ({"wmDensity": ""}, "density", "unknown"),
        ({"fontScale": "null"}, "fontScale", "1.0"),
        ({"fontScale": "1"}, "fontScale", "1.0"),
        ({"fontScale": "big"}, "fontScale", "unknown"),
        ({"windowAnimationScale": "null"}, "windowAnimationScale", "1.0"),
        ({"transitionAnimationScale": "0.5"}, "transitionAnimationScale", "0.5"),
        ({"animatorDurationScale": ""}, "animatorDurationScale", "unknown"),
        ({"uiModeNight": "Night mode: yes"}, "theme", "dark"),
        ({"uiModeNight": "Night mode: auto"}, "theme", "auto"),
        ({"uiModeNight": "Night mode: custom"}, "theme", "custom"),
        ({"uiModeNight": "cmd: Can't find service: uimode"}, "theme", "unknown"),
        (
            {"accessibilityServices": "com.google.android.marvin.talkback/.TalkBackService:com.a/.B"},
            "accessibilityServices",
            "com.a/.B,com.google.android.marvin.talkback/.TalkBackService",
        ),
        ({"accessibilityServices": ""}, "accessibilityServices", "none"),
        ({"navigationMode": "0"}, "navigationMode", "3-button"),
        ({"navigationMode": "1"}, "navigationMode", "2-button"),
        ({"navigationMode": "null"}, "navigationMode", "unknown"),
        ({"navigationMode": "7"}, "navigationMode", "unknown"),
        ({"inputMethod": "null"}, "inputMethod", "unknown"),
        ({"timeZone": ""}, "timeZone", "unknown"),
        ({"time1224": "12"}, "clock", "12"),
        ({"time1224": "null"}, "clock", "auto"),
        ({"time1224": "13"}, "clock", "unknown"),
        ({"buildId": ""}, "buildId", "unknown"),
        ({"windowDisplays": "    mCurrentRotation=ROTATION_90 mLastOrientation=0"}, "rotation", "90"),
        ({"windowDisplays": "  mRotation=3 mAltOrientation=false"}, "rotation", "270"),
        ({"windowDisplays": "  SurfaceOrientation: 2"}, "rotation", "180"),
        ({"windowDisplays": "", "accelerometerRotation": "0", "userRotation": "1"}, "rotation", "90"),
        ({"windowDisplays": "", "accelerometerRotation": "1", "userRotation": "1"}, "rotation", "unknown"),
        ({"windowDisplays": "", "accelerometerRotation": "0", "userRotation": "null"}, "rotation", "unknown"),
    ],
)
def test_each_field_parses_or_reads_unknown(sections, field, expected):
    fingerprint = parse_device_fingerprint(_output({**PIXEL_SECTIONS, **sections}))
    assert fingerprint[field] == expected
    # Only the field under test moved.
    others = {key: value for key, value in fingerprint.items() if key != field}
    assert others == {key: value for key, value in PIXEL_FINGERPRINT.items() if key != field}


def test_a_cut_off_output_reads_the_missing_sections_as_unknown():
    full = _output(PIXEL_SECTIONS)
    cut = full[: full.index(f"{MARK}end timeZone")]
    fingerprint = parse_device_fingerprint(cut)
    assert fingerprint["sdk"] == "34"
    assert fingerprint["timeZone"] == "unknown"
    assert fingerprint["clock"] == fingerprint["buildId"] == fingerprint["rotation"] == "unknown"


def test_empty_output_is_all_unknown():
    assert set(parse_device_fingerprint("").values()) == {"unknown"}


DUMPSYS_PACKAGE = """\
Packages:
  Package [dev.example.playground] (4f1a2b3):
    userId=10123
    versionCode=12 minSdk=24 targetSdk=34
    versionName=1.2.0
    lastUpdateTime=2026-11-30 02:59:00
Hidden system packages:
  Package [dev.example.playground] (1a2b3c4):
    versionCode=1 minSdk=24 targetSdk=34
    versionName=1.0
    lastUpdateTime=2008-12-31 16:00:00
"""


@pytest.mark.parametrize(
    ("output", "apk", "expected"),
    [
        (DUMPSYS_PACKAGE, None, {"versionName": "1.2.0", "versionCode": 12, "lastUpdateTime": "2026-11-30 02:59:00"}),
        (DUMPSYS_PACKAGE, "0123456789abcdef", {"versionName": "1.2.0", "versionCode": 12, "apkSha256": "0123456789abcdef"}),
        ("Unable to find package: dev.example.none\n", None, {"versionName": "unknown", "versionCode": "unknown", "lastUpdateTime": "unknown"}),
        ("    versionCode=3 minSdk=24\n", None, {"versionName": "unknown", "versionCode": 3, "lastUpdateTime": "unknown"}),
    ],
)
def test_parse_app_build(output, apk, expected):
    assert parse_app_build(output, apk_sha256=apk) == expected


# ----------------------------------------------------------------------------- server build

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
    "NO_PROXY": "localhost,127.0.0.1",
    "PATH": "/usr/bin:/bin",
}

SECRET_VALUES = (
    "SECRETAPIKEYVALUE",
    "SECRETOAUTHVALUE",
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
    assert components["provider.credential"] == "ANTHROPIC_API_KEY,CLAUDE_CODE_OAUTH_TOKEN"
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


def test_scoring_code_digest_follows_the_scoring_modules(tmp_path):
    for name in ("audit.py", "transcript.py", "screen.py", "suite.py"):
        (tmp_path / name).write_text(f"# {name}\n")
    first = scoring_code_digest(tmp_path)
    (tmp_path / "report.py").write_text("# not scoring\n")
    assert scoring_code_digest(tmp_path) == first
    (tmp_path / "audit.py").write_text("# changed\n")
    assert scoring_code_digest(tmp_path) != first
