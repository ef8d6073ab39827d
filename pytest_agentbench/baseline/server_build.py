"""Host facts, the server profile's files and the environment -> the server-build fingerprint (digest + non-secret parts)."""

from __future__ import annotations

import configparser
import functools
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from pytest_agentbench.baseline.fingerprints import UNKNOWN, digest_file, digest_files, digest_json, digest_text, iter_files

PACKAGE_ROOT = Path(__file__).resolve().parent.parent

LOCK_FILE_NAMES: tuple[str, ...] = (
    "uv.lock",
    "poetry.lock",
    "pdm.lock",
    "Pipfile.lock",
    "pylock.toml",
    "requirements.txt",
    "requirements.lock",
    "package-lock.json",
    "bun.lock",
)

# Organization-managed Claude Code settings apply above everything the run isolates, so each
# file present in these directories is digested into the build.
MANAGED_SETTINGS_DIRS: tuple[str, ...] = (
    "/etc/claude-code",
    "/Library/Application Support/ClaudeCode",
    "C:\\Program Files\\ClaudeCode",
    "C:\\ProgramData\\ClaudeCode",
)

_BASE_URL_VARIABLES = (
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "ANTHROPIC_VERTEX_BASE_URL",
    "ANTHROPIC_FOUNDRY_BASE_URL",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_BEDROCK",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    # agentbench-agent's OpenAI-compatible endpoint (scheme and host; the path only as a digest).
    "AGENTBENCH_OPENAI_BASE_URL",
)
_PROXY_VARIABLES = frozenset({"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"})
_SELECTOR_VARIABLES = (
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "GOOGLE_CLOUD_PROJECT",
    "GCLOUD_PROJECT",
    "CLOUDSDK_CORE_PROJECT",
    "ANTHROPIC_FOUNDRY_RESOURCE",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ROLE_ARN",
    "AWS_ACCESS_KEY_ID",
)
DIRECT_CREDENTIAL_VARIABLES: tuple[str, ...] = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "ANTHROPIC_FOUNDRY_API_KEY",
    "AGENTBENCH_OPENAI_API_KEY",
)
_PROVIDER_SWITCHES = (
    ("CLAUDE_CODE_USE_BEDROCK", "bedrock"),
    ("CLAUDE_CODE_USE_VERTEX", "vertex"),
    ("CLAUDE_CODE_USE_FOUNDRY", "foundry"),
)
# Non-secret values kept as they are: regions, tiers, model routing, provider auth switches.
_PLAIN_VALUE = re.compile(
    r"^(CLOUD_ML_REGION|AWS_REGION|AWS_DEFAULT_REGION|VERTEX_REGION_\w+"
    r"|\w*SERVICE_TIER\w*"
    r"|ANTHROPIC_MODEL|ANTHROPIC_SMALL_FAST_MODEL\w*|ANTHROPIC_DEFAULT_\w+_MODEL\w*|CLAUDE_CODE_SUBAGENT_MODEL"
    r"|CLAUDE_CODE_USE_\w+|CLAUDE_CODE_SKIP_\w+_AUTH"
    # agentbench-agent's request shaping (sampling, limits, prices): it changes what a run measures.
    r"|AGENTBENCH_OPENAI_(?:TIMEOUT_S|MAX_RETRIES|MAX_TOKENS|TEMPERATURE|PRICE_\w+)|AGENTBENCH_AGENT_SERVER_PROFILE)$"
)
_WORKSPACE = re.compile(r"^ANTHROPIC_\w*WORKSPACE\w*$")


@dataclass(frozen=True)
class ServerBuild:
    """The `serverBuild` fingerprint: its digest and the non-secret components it was computed from."""

    digest: str
    components: Mapping[str, str] = field(default_factory=dict)


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def package_source_digest(package_root: Path = PACKAGE_ROOT) -> str:
    """Digest of this package's own code and data (`*.py`, `*.json`), which executes and scores runs."""
    files = [path for path in iter_files(package_root) if path.suffix in (".py", ".json")]
    return digest_files(files, relative_to=package_root)


#: Distributions beside this package's own requirements that execute or score a run.
EXTRA_DISTRIBUTIONS = ("pytest-xdist",)


@functools.lru_cache(maxsize=1)
def dependency_versions() -> tuple[tuple[str, str], ...]:
    """(name, installed version) of every distribution this package requires (and xdist), sorted; `absent` when not installed.

    There is no lock file to digest: an `mcp` or `jsonschema` upgrade changes how a run executes
    or is scored while this package's source stays the same, so the resolved versions are part of
    the build.
    """
    from importlib.metadata import PackageNotFoundError, requires, version

    try:
        declared = requires("pytest-agentbench") or []
    except PackageNotFoundError:
        declared = []
    names = {re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0].lower() for requirement in declared if "extra ==" not in requirement}
    found = []
    for name in sorted(names | set(EXTRA_DISTRIBUTIONS)):
        try:
            found.append((name, version(name)))
        except PackageNotFoundError:
            found.append((name, "absent"))
    return tuple(found)


def project_file_digest(package_root: Path = PACKAGE_ROOT) -> str:
    """Digest of the package's `pyproject.toml` beside its source (a source checkout), or `none` for an installed wheel."""
    pyproject = package_root.parent / "pyproject.toml"
    return digest_file(pyproject) if pyproject.is_file() else "none"


def _describe_url(value: str) -> tuple[str, str | None]:
    """`scheme://host[:port] path=<digest>` and a digest of any user:password, never the values."""
    try:
        parts = urlsplit(value.strip() if "://" in value else "http://" + value.strip())
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return "unparseable " + digest_text(value), None
    where = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
    rest = parts.path + ("?" + parts.query if parts.query else "") + ("#" + parts.fragment if parts.fragment else "")
    described = where + (f" path={digest_text(rest)}" if rest.strip("/") else "")
    credentials = None
    if parts.username is not None or parts.password is not None:
        credentials = digest_text(f"{parts.username or ''}:{parts.password or ''}")
    return described, credentials


def _google_credentials_identity(path_text: str) -> dict[str, str]:
    try:
        document = json.loads(Path(path_text).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"googleCredentials": "unreadable"}
    if not isinstance(document, dict):
        return {"googleCredentials": "unreadable"}
    identity = {"googleCredentials.type": str(document.get("type", UNKNOWN))}
    for key in ("client_email", "project_id", "quota_project_id"):
        if document.get(key):
            identity[f"googleCredentials.{key}"] = digest_text(str(document[key]))
    return identity


def _aws_identity(environ: Mapping[str, str]) -> dict[str, str]:
    """Digest of the AWS config the profile resolves through, and of the role it assumes."""
    home = environ.get("HOME") or os.path.expanduser("~")
    config_path = Path(environ.get("AWS_CONFIG_FILE") or Path(home) / ".aws" / "config")
    if not config_path.is_file():
        return {"awsConfig": "none"}
    identity = {"awsConfig": digest_file(config_path)}
    profile = environ.get("AWS_PROFILE") or environ.get("AWS_DEFAULT_PROFILE") or "default"
    parser = configparser.RawConfigParser()
    try:
        parser.read(config_path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return identity
    section = "default" if profile == "default" else f"profile {profile}"
    if parser.has_section(section) and parser.has_option(section, "role_arn"):
        identity["awsConfig.role_arn"] = digest_text(parser.get(section, "role_arn"))
    return identity


#: The executable of this project's OpenAI-compatible agent: its provider is its endpoint, not Anthropic.
OPENAI_AGENT = "agentbench-agent"
OPENAI_BASE_URL_VARIABLE = "AGENTBENCH_OPENAI_BASE_URL"


def provider_identity(environ: Mapping[str, str], agent_command: str | Sequence[str] = ()) -> dict[str, str]:
    """Which provider and endpoints a run talks to, without any secret value.

    Args:
        environ: The environment the agent will inherit.
        agent_command: The `--claude` command: `agentbench-agent` talks to the OpenAI-compatible
            server of AGENTBENCH_OPENAI_BASE_URL, so its provider is `openai-compatible` and its
            `endpoint` that server's scheme, host and port.

    Returns:
        Flat `name -> text` components: the provider, scheme and host of every base URL and proxy
        (paths and credentials only as digests), digests of account and project selectors, the
        NAMES of the direct credentials that are set, the AWS config digest for Bedrock, the
        proxy bypass list, and plain regions, service tiers and model-routing variables.
    """
    components: dict[str, str] = {"provider": "anthropic"}
    argv = shlex.split(agent_command) if isinstance(agent_command, str) else list(agent_command)
    if argv and Path(argv[0]).name == OPENAI_AGENT:
        components["provider"] = "openai-compatible"
        described, _ = _describe_url(environ.get(OPENAI_BASE_URL_VARIABLE) or "")
        components["endpoint"] = described.split(" path=", 1)[0] if environ.get(OPENAI_BASE_URL_VARIABLE) else "unset"
    for variable, provider in ([] if components["provider"] != "anthropic" else _PROVIDER_SWITCHES):
        if _truthy(environ.get(variable)):
            components["provider"] = provider
            break
    for name in sorted(environ):
        value = environ[name]
        if not value:
            continue
        if name in _BASE_URL_VARIABLES or name.upper() in _PROXY_VARIABLES:
            described, credentials = _describe_url(value)
            components[f"url.{name}"] = described
            if credentials:
                components[f"url.{name}.credentials"] = credentials
        elif name in _SELECTOR_VARIABLES or _WORKSPACE.match(name):
            components[f"selector.{name}"] = digest_text(value)
        elif name == "ANTHROPIC_CUSTOM_HEADERS":
            components["customHeaders"] = digest_text(value)
        elif name.upper() == "NO_PROXY":
            hosts = sorted({host.strip().lower() for host in value.split(",") if host.strip()})
            components[f"noProxy.{name}"] = ",".join(hosts)
        elif _PLAIN_VALUE.match(name):
            components[f"env.{name}"] = value
    if environ.get("GOOGLE_APPLICATION_CREDENTIALS"):
        components.update(_google_credentials_identity(environ["GOOGLE_APPLICATION_CREDENTIALS"]))
    credentials_set = [name for name in DIRECT_CREDENTIAL_VARIABLES if environ.get(name)]
    components["credential"] = ",".join(credentials_set) if credentials_set else "none"
    if components["provider"] == "bedrock":
        components.update(_aws_identity(environ))
    return components


def _adb_version_text(output: str) -> str:
    """The release lines of `adb version`; the `Running on` line is dropped (it changes with the kernel)."""
    kept = [
        line.strip()
        for line in output.splitlines()
        if line.strip().startswith(("Android Debug Bridge version", "Version "))
    ]
    return " / ".join(kept) if kept else (output.strip() or UNKNOWN)


def _agent_command_component(agent_command: str | Sequence[str], environ: Mapping[str, str]) -> str:
    """The agent command by content: its executable resolved on PATH and hashed, plus its arguments."""
    argv = shlex.split(agent_command) if isinstance(agent_command, str) else list(agent_command)
    if not argv:
        return UNKNOWN
    resolved = shutil.which(argv[0], path=environ.get("PATH"))
    if resolved is None:
        return f"{UNKNOWN} (not found: {Path(argv[0]).name})"
    described = f"{Path(resolved).name} {digest_file(Path(resolved))}"
    if len(argv) > 1:
        # Arguments may carry tokens; only their digest is kept.
        described += f" args={digest_text(json.dumps(argv[1:]))}"
    return described


def managed_settings_digests(directories: Sequence[str] = MANAGED_SETTINGS_DIRS) -> dict[str, str]:
    """A digest of every organization-managed Claude Code file present on this host, keyed by path."""
    digests = {}
    for directory in directories:
        root = Path(directory)
        if root.is_dir():
            for path in iter_files(root):
                digests[f"managed.{path.as_posix()}"] = digest_file(path)
    return digests


def _libc() -> str:
    name, version = platform.libc_ver()
    return f"{name} {version}".strip() or UNKNOWN


def server_build_fingerprint(
    *,
    profile_build_files: Sequence[Path],
    agent_command: str | Sequence[str],
    environ: Mapping[str, str],
    adb_endpoint: str,
    adb_versions: Mapping[str, str],
    project_root: Path | None = None,
    package_root: Path = PACKAGE_ROOT,
    managed_settings_dirs: Sequence[str] = MANAGED_SETTINGS_DIRS,
    sandbox: str | None = None,
    adb_server_version: str | None = None,
) -> ServerBuild:
    """`serverBuild`: a SHA-256 prefix over everything that executes and scores a run.

    Args:
        profile_build_files: The MCP server profile's build files (files or directories).
        agent_command: The `--claude` command; its executable is hashed by content.
        environ: The environment the agent inherits (read for the provider identity only).
        adb_endpoint: The adb server endpoint, e.g. `tcp:localhost:5037`.
        adb_versions: `adb version` output per adb client the server might run, keyed by path.
        project_root: Where lock files are looked for (`LOCK_FILE_NAMES`), if any.
        package_root: This package's source directory.
        managed_settings_dirs: Directories of organization-managed Claude Code settings.
        sandbox: The agent's confinement (`on (bubblewrap 0.8.0)` or `off`), when known: a
            confined and an unconfined run measure different things, so they are not comparable.
        adb_server_version: The running adb server's own protocol version (`host:version`),
            which can differ from every client's; None when it was not asked.

    Returns:
        The digest and its components. Components hold only names, versions, hosts and
        digests, so the report can say which one changed without showing a secret.
    """
    lock_files = [project_root / name for name in LOCK_FILE_NAMES if (project_root / name).is_file()] if project_root else []
    components: dict[str, str] = {
        "profileBuild": digest_files(profile_build_files, relative_to=project_root),
        "packageSource": package_source_digest(package_root),
        "packageProject": project_file_digest(package_root),
        "lockFiles": digest_files(lock_files, relative_to=project_root) if lock_files else "none",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": sys.platform,
        "machine": platform.machine() or UNKNOWN,
        "libc": _libc(),
        "agentCommand": _agent_command_component(agent_command, environ),
        "adbEndpoint": adb_endpoint,
    }
    if adb_server_version is not None:
        components["adbServer"] = adb_server_version
    components.update({f"python.{name}": installed for name, installed in dependency_versions()})
    if sandbox is not None:
        components["sandbox"] = sandbox
    for client, output in sorted(adb_versions.items()):
        components[f"adb.{client}"] = _adb_version_text(output)
    components.update({f"provider.{key}" if key != "provider" else key: value for key, value in provider_identity(environ, agent_command).items()})
    components.update(managed_settings_digests(managed_settings_dirs))
    return ServerBuild(digest=digest_json(components), components=components)


#: Where Android's command-line tools look for an SDK when neither ANDROID_HOME nor ANDROID_SDK_ROOT is set.
DEFAULT_SDK_DIRS = ("Android/Sdk", "Library/Android/sdk")


def adb_client_versions(environ: Mapping[str, str]) -> dict[str, str]:
    """`adb version` of every adb client the MCP server might run: PATH's, the SDK's, and the SDK a default-location search finds.

    Keyed by where it was found (`path`, `ANDROID_HOME`, `ANDROID_SDK_ROOT`, `sdk:~/Android/Sdk`);
    `absent` for a named SDK without adb, `unknown` for an adb that would not say its version.
    """
    candidates: dict[str, str | None] = {"path": shutil.which("adb", path=environ.get("PATH"))}
    for variable in ("ANDROID_HOME", "ANDROID_SDK_ROOT"):
        if environ.get(variable):
            candidates[variable] = str(Path(environ[variable]) / "platform-tools" / "adb")
    home = environ.get("HOME")
    if home and not any(environ.get(variable) for variable in ("ANDROID_HOME", "ANDROID_SDK_ROOT")):
        for relative in DEFAULT_SDK_DIRS:
            found = Path(home) / relative / "platform-tools" / "adb"
            if found.exists():
                candidates[f"sdk:~/{relative}"] = str(found)
    versions = {}
    for label, path in candidates.items():
        if not path or not os.access(path, os.X_OK):
            versions[label] = UNKNOWN if label == "path" else "absent"
            continue
        try:
            done = subprocess.run([path, "version"], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
            versions[label] = done.stdout if done.returncode == 0 and done.stdout.strip() else UNKNOWN
        except (OSError, subprocess.TimeoutExpired):
            versions[label] = UNKNOWN
    return versions


def agent_cli_version(stream_version: str | None, claude: str, cache: dict) -> str:
    """The CLI version the stream's init event names; `<claude> --version` only when it names none.

    Args:
        stream_version: `claude_code_version` from the init event, if any.
        claude: The `--claude` command.
        cache: A session-wide dict, so `--version` runs once per command.

    Returns:
        The version, or "unknown".
    """
    if stream_version:
        return stream_version
    if ("version", claude) not in cache:
        try:
            done = subprocess.run([claude, "--version"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
            match = re.match(r"\s*(\S+)", done.stdout) if done.returncode == 0 else None
            cache[("version", claude)] = match.group(1) if match else UNKNOWN
        except (OSError, subprocess.TimeoutExpired):
            cache[("version", claude)] = UNKNOWN
    return cache[("version", claude)]
