"""What a run ran on -> fingerprints: hashing, `unknown`, the suite digest, the app build and the device (one batched round trip).

Every fingerprint a result records except the server build (`server_build.py`) is made here, so a
baseline comparison and a snippet rule read one definition of "unknown" and one of each digest.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_agentbench.device.shellscript import Script, sh
from pytest_agentbench.device.rootshell import NO_SU, parse_su_form, su_form_probe

UNKNOWN = "unknown"

# Suite keys that are the baseline itself and so never feed the suite digest.
_BASELINE_SUITE_KEYS = frozenset({"baseline", "baselineToolSequence"})

# --------------------------------------------------------------------------- hashing and unknown values


def sha256_prefix(data: bytes, length: int = 16) -> str:
    """Hex prefix of the SHA-256 of `data` (the form `apkSha256` is recorded in).

    Args:
        data: The bytes to hash.
        length: How many hex characters to keep.

    Returns:
        The first `length` hex characters of the digest.
    """
    return hashlib.sha256(data).hexdigest()[:length]


def digest_json(value: Any) -> str:
    """`sha256:<16 hex>` over a canonical JSON form of `value` (sorted keys, so key order never matters).

    Args:
        value: Any JSON-serialisable value.

    Returns:
        The digest string as suites record it (`suiteDigest`, `serverBuild`).
    """
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + sha256_prefix(canonical.encode("utf-8"))


def is_unknown(value: Any) -> bool:
    return value is None or value == "" or value == UNKNOWN


def flat_fields(mapping: Mapping[str, Any] | None, prefix: str = "") -> dict[str, Any]:
    """A fingerprint mapping with nested mappings spelled out (`otherApps.com.android.contacts.versionCode`)."""
    flat: dict[str, Any] = {}
    for key, value in (mapping or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flat_fields(value, name + "."))
        else:
            flat[name] = value
    return flat


def unknown_fields(mapping: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Names of the fields of a fingerprint mapping that could not be read (sorted), nested ones too (the other apps' builds)."""
    return tuple(sorted(key for key, value in flat_fields(mapping).items() if is_unknown(value)))


def digest_text(value: str) -> str:
    """`sha256:<16 hex>` of a text (never the text itself, which may be a secret or a path)."""
    return "sha256:" + sha256_prefix(value.encode("utf-8", "surrogateescape"))


def digest_file(path: Path) -> str:
    """`sha256:<16 hex>` of a file's bytes, or `unreadable (why)`."""
    try:
        return "sha256:" + sha256_prefix(path.read_bytes())
    except OSError as error:
        return f"unreadable ({error.strerror or type(error).__name__})"


def iter_files(path: Path) -> Iterable[Path]:
    """A file itself, or a directory's files in sorted order (bytecode caches left out)."""
    if path.is_dir():
        for child in sorted(path.rglob("*")):
            if child.is_file() and "__pycache__" not in child.parts and child.suffix != ".pyc":
                yield child
    else:
        yield path


def digest_files(paths: Iterable[Path], *, relative_to: Path | None = None) -> str:
    """One digest over files (directories walked in sorted order) by name and content; missing files count as missing.

    Args:
        paths: Files or directories.
        relative_to: Names are recorded relative to this directory, so two checkouts at
            different places digest the same.

    Returns:
        `sha256:<16 hex>`.
    """
    entries = []
    for root in paths:
        root = Path(root)
        if not root.exists():
            entries.append([_relative_name(root, relative_to), "missing"])
            continue
        for path in iter_files(root):
            entries.append([_relative_name(path, relative_to), digest_file(path)])
    return digest_json(entries)


def _relative_name(path: Path, relative_to: Path | None) -> str:
    if relative_to is not None:
        try:
            return path.resolve().relative_to(relative_to.resolve()).as_posix()
        except ValueError:
            pass
    return path.as_posix()


# --------------------------------------------------------------------------- app build and suite digest


def app_build(
    *,
    version_name: str | None,
    version_code: int | str | None,
    last_update_time: str | None = None,
    apk_sha256: str | None = None,
) -> dict[str, Any]:
    """The `appBuild` fingerprint: version name and code, plus install time or, with `apkPath`, the APK hash.

    With an `apkPath` preflight reinstalls the APK on every run, which resets the install time,
    so the APK's SHA-256 prefix takes its place.

    Args:
        version_name: `versionName` from `dumpsys package`, None if unread.
        version_code: `versionCode`, None if unread.
        last_update_time: `lastUpdateTime`, None if unread (ignored when `apk_sha256` is given).
        apk_sha256: SHA-256 prefix of the suite's APK when the suite sets `app.apkPath`.

    Returns:
        `{versionName, versionCode, lastUpdateTime}` or `{versionName, versionCode, apkSha256}`;
        unread values are "unknown".
    """
    build: dict[str, Any] = {
        "versionName": version_name if version_name not in (None, "") else UNKNOWN,
        "versionCode": _version_code(version_code),
    }
    if apk_sha256 is not None:
        build["apkSha256"] = apk_sha256 or UNKNOWN
    else:
        build["lastUpdateTime"] = last_update_time if last_update_time not in (None, "") else UNKNOWN
    return build


def _version_code(value: int | str | None) -> int | str:
    if value is None or value == "":
        return UNKNOWN
    if isinstance(value, int):
        return value
    return int(value) if str(value).isdigit() else str(value)


def requested_model(suite_raw: Mapping[str, Any], model_override: str | None) -> str | None:
    """The model a run asks for: the `--model` override if given, else the suite's `claude.model`."""
    if model_override:
        return model_override
    claude = suite_raw.get("claude") or {}
    return claude.get("model") or None


def suite_digest(suite_raw: Mapping[str, Any], *, prompt_text: str, model_override: str | None = None) -> str:
    """`suiteDigest`: the task a baseline measured, as a digest.

    Covers the prompt text, every suite setting as written except `baseline` and
    `baselineToolSequence`, and the requested model. The `prompt` key (a file path) is replaced
    by the text it points to, because the agent reads the text, not the path.

    Args:
        suite_raw: The suite mapping as loaded from YAML (`Suite.raw`).
        prompt_text: The prompt file's text (before placeholders are filled in).
        model_override: The `--model` option, if given.

    Returns:
        `sha256:<16 hex>`, independent of key order.
    """
    settings = {key: value for key, value in suite_raw.items() if key not in _BASELINE_SUITE_KEYS and key != "prompt"}
    document = {
        "prompt": prompt_text,
        "settings": settings,
        "requestedModel": requested_model(suite_raw, model_override),
    }
    return digest_json(document)



# --------------------------------------------------------------------------- device fingerprint

DEVICE_FINGERPRINT_FIELDS: tuple[str, ...] = (
    "sdk",
    "model",
    "locale",
    "screenSize",
    "density",
    "fontScale",
    "windowAnimationScale",
    "transitionAnimationScale",
    "animatorDurationScale",
    "theme",
    "accessibilityServices",
    "navigationMode",
    "inputMethod",
    "timeZone",
    "clock",
    "buildId",
    "rotation",
    "suForm",
)

# (section, shell command) pairs run as ONE device shell script, so reading the whole
# fingerprint costs one adb round trip. Sections are raw command outputs; several fields read
# more than one section (locale falls back to the product locale, rotation to user_rotation).
# stderr goes to /dev/null because shell v1 merges it into stdout.
DEVICE_FINGERPRINT_COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("sdk", ("getprop", "ro.build.version.sdk")),
    ("model", ("getprop", "ro.product.model")),
    ("localeSystem", ("getprop", "persist.sys.locale")),
    ("localeProduct", ("getprop", "ro.product.locale")),
    ("wmSize", ("wm", "size")),
    ("wmDensity", ("wm", "density")),
    ("fontScale", ("settings", "get", "system", "font_scale")),
    ("windowAnimationScale", ("settings", "get", "global", "window_animation_scale")),
    ("transitionAnimationScale", ("settings", "get", "global", "transition_animation_scale")),
    ("animatorDurationScale", ("settings", "get", "global", "animator_duration_scale")),
    ("uiModeNight", ("cmd", "uimode", "night")),
    ("accessibilityServices", ("settings", "get", "secure", "enabled_accessibility_services")),
    ("navigationMode", ("settings", "get", "secure", "navigation_mode")),
    ("inputMethod", ("settings", "get", "secure", "default_input_method")),
    ("timeZone", ("getprop", "persist.sys.timezone")),
    ("time1224", ("settings", "get", "system", "time_12_24")),
    ("buildId", ("getprop", "ro.build.id")),
    ("windowDisplays", ("dumpsys", "window", "displays")),
    ("accelerometerRotation", ("settings", "get", "system", "accelerometer_rotation")),
    ("userRotation", ("settings", "get", "system", "user_rotation")),
)

_MARK = "@@agentbench-fp@@"


def device_fingerprint_script() -> Script:
    """The one shell script that prints every `DEVICE_FINGERPRINT_COMMANDS` output between markers.

    Parts are joined with `;`, so one failing command never stops the rest; a section whose
    end marker is missing from the output (the script was cut off) reads as unknown.

    Returns:
        A `Script` for `Adb.shell(serial, script, check=False)`.
    """
    parts: list[Script] = []
    for section, argv in DEVICE_FINGERPRINT_COMMANDS:
        parts += [sh("echo", f"{_MARK}begin {section}"), sh(*argv).quiet(), sh("echo", f"{_MARK}end {section}")]
    # Which su form gives root (device/rootshell.py): its probe prints its own markers, so it is not quieted.
    parts += [sh("echo", f"{_MARK}begin suForm"), su_form_probe(), sh("echo", f"{_MARK}end suForm")]
    return Script.join(parts, ";")


def _split_sections(output: str) -> dict[str, str]:
    """Raw output per section; only sections whose end marker was printed are returned."""
    sections: dict[str, str] = {}
    current: str | None = None
    collected: list[str] = []
    for line in output.replace("\r\n", "\n").split("\n"):
        if line.startswith(_MARK + "begin "):
            current, collected = line[len(_MARK) + 6 :].strip(), []
        elif line.startswith(_MARK + "end "):
            if current is not None and line[len(_MARK) + 4 :].strip() == current:
                sections[current] = "\n".join(collected).strip()
            current = None
        elif current is not None:
            collected.append(line)
    return sections


def _settings_value(text: str) -> str:
    """A `settings get` value; raises ValueError when the setting is absent (`null`) or empty."""
    value = text.strip()
    if not value or value == "null" or "\n" in value:
        raise ValueError(f"no setting value in {text!r}")
    return value


def _parse_prop(text: str) -> str:
    """A `getprop` value; raises ValueError when empty (the property does not exist)."""
    value = text.strip()
    if not value or "\n" in value:
        raise ValueError(f"no property value in {text!r}")
    return value


def _parse_locale(system_locale: str, product_locale: str) -> str:
    """`persist.sys.locale`, falling back to `ro.product.locale` (set until the user picks one)."""
    try:
        return _parse_prop(system_locale)
    except ValueError:
        return _parse_prop(product_locale)


def _parse_wm_pair(text: str, unit: str) -> str:
    """The effective value of `wm size` / `wm density`: the override if set, else the physical one."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = re.match(rf"\s*(Physical|Override) {unit}:\s*(\S+)\s*$", line)
        if match:
            found[match[1]] = match[2]
    value = found.get("Override") or found.get("Physical")
    if value is None:
        raise ValueError(f"no {unit} in {text!r}")
    return value


def _parse_wm_size(text: str) -> str:
    """Effective screen size `WxH` from `wm size`."""
    value = _parse_wm_pair(text, "size")
    if not re.fullmatch(r"\d+x\d+", value):
        raise ValueError(f"bad screen size {value!r}")
    return value


def _parse_wm_density(text: str) -> str:
    """Effective density (dpi) from `wm density`."""
    value = _parse_wm_pair(text, "density")
    if not value.isdigit():
        raise ValueError(f"bad density {value!r}")
    return value


def _parse_scale(text: str) -> str:
    """A font or animation scale; an absent setting (`null`) means the default 1.0."""
    value = text.strip()
    if value == "null":
        return "1.0"
    try:
        return repr(float(_settings_value(value)))
    except ValueError as error:
        raise ValueError(f"bad scale {text!r}") from error


def _parse_theme(text: str) -> str:
    """`light`, `dark`, `auto`, `custom`, `custom_schedule` or `custom_bedtime` from `cmd uimode night`.

    Android 13+ (AOSP UiModeManagerService.Shell.nightModeToStr) prints `custom_schedule` or
    `custom_bedtime` for MODE_NIGHT_CUSTOM; older releases print `custom`. AOSP's own `unknown`
    stays unknown.
    """
    match = re.search(r"Night mode:\s*(\w+)", text)
    if not match:
        raise ValueError(f"no night mode in {text!r}")
    mode = match[1].lower()
    mapping = {"no": "light", "yes": "dark", "auto": "auto", "custom": "custom",
               "custom_schedule": "custom_schedule", "custom_bedtime": "custom_bedtime"}
    if mode not in mapping:
        raise ValueError(f"unknown night mode {mode!r}")
    return mapping[mode]


def _parse_accessibility_services(text: str) -> str:
    """Enabled accessibility services, sorted and comma-joined; `none` when the setting is empty or absent."""
    value = text.strip()
    if value in ("", "null"):
        return "none"
    if "\n" in value:
        raise ValueError(f"bad accessibility services {text!r}")
    return ",".join(sorted(service for service in value.split(":") if service))


def _parse_navigation_mode(text: str) -> str:
    """`3-button`, `2-button` or `gesture` from secure `navigation_mode` 0/1/2."""
    modes = {"0": "3-button", "1": "2-button", "2": "gesture"}
    value = _settings_value(text)
    if value not in modes:
        raise ValueError(f"unknown navigation mode {value!r}")
    return modes[value]


def _parse_clock(text: str) -> str:
    """`12` or `24` from system `time_12_24`; absent means the locale's default, recorded as `auto`."""
    value = text.strip()
    if value in ("", "null"):
        return "auto"
    if value not in ("12", "24"):
        raise ValueError(f"bad time_12_24 {value!r}")
    return value


_ROTATION_PATTERNS = (
    re.compile(r"mCurrentRotation=ROTATION_(0|90|180|270)\b"),
    re.compile(r"mCurrentRotation=([0-3])\b"),
    re.compile(r"\bmRotation=([0-3])\b"),
    re.compile(r"\bSurfaceOrientation:\s*([0-3])\b"),
)
_QUARTER_TURNS = {"0": "0", "1": "90", "2": "180", "3": "270"}


def _parse_rotation(window_displays: str, accelerometer_rotation: str, user_rotation: str) -> str:
    """Live rotation in degrees (`0`, `90`, `180`, `270`).

    Read from `dumpsys window displays` (`mCurrentRotation=ROTATION_90` on newer releases,
    `mRotation=1` on older ones). When the dump names none and auto-rotate is off, the display
    sits at the user's locked rotation (`user_rotation`); with auto-rotate on and no dump value
    the rotation is unknown.
    """
    for pattern in _ROTATION_PATTERNS:
        match = pattern.search(window_displays)
        if match:
            value = match[1]
            return _QUARTER_TURNS.get(value, value) if len(value) == 1 else value
    if accelerometer_rotation.strip() == "0":
        locked = _settings_value(user_rotation)
        if locked in _QUARTER_TURNS:
            return _QUARTER_TURNS[locked]
    raise ValueError("no rotation in window dump and auto-rotate is not off")


def parse_device_fingerprint(output: str) -> dict[str, str]:
    """The device fingerprint from the output of `device_fingerprint_script()`.

    Args:
        output: Everything the script printed.

    Returns:
        Every field of `DEVICE_FINGERPRINT_FIELDS`, in that order, as strings; a field whose
        section is missing or cannot be parsed is "unknown".
    """
    sections = _split_sections(output)

    def read(parser: Callable[..., str], *names: str) -> str:
        if any(name not in sections for name in names):
            return UNKNOWN
        try:
            return parser(*(sections[name] for name in names))
        except ValueError:
            return UNKNOWN

    fingerprint = {
        "sdk": read(_parse_prop, "sdk"),
        "model": read(_parse_prop, "model"),
        "locale": read(_parse_locale, "localeSystem", "localeProduct"),
        "screenSize": read(_parse_wm_size, "wmSize"),
        "density": read(_parse_wm_density, "wmDensity"),
        "fontScale": read(_parse_scale, "fontScale"),
        "windowAnimationScale": read(_parse_scale, "windowAnimationScale"),
        "transitionAnimationScale": read(_parse_scale, "transitionAnimationScale"),
        "animatorDurationScale": read(_parse_scale, "animatorDurationScale"),
        "theme": read(_parse_theme, "uiModeNight"),
        "accessibilityServices": read(_parse_accessibility_services, "accessibilityServices"),
        "navigationMode": read(_parse_navigation_mode, "navigationMode"),
        "inputMethod": read(_settings_value, "inputMethod"),
        "timeZone": read(_parse_prop, "timeZone"),
        "clock": read(_parse_clock, "time1224"),
        "buildId": read(_parse_prop, "buildId"),
        "rotation": read(_parse_rotation, "windowDisplays", "accelerometerRotation", "userRotation"),
        "suForm": read(lambda text: parse_su_form(text) or NO_SU, "suForm"),
    }
    return {name: fingerprint[name] for name in DEVICE_FINGERPRINT_FIELDS}


def parse_app_build(dumpsys_package: str, *, apk_sha256: str | None = None) -> dict[str, object]:
    """The `appBuild` fingerprint from `dumpsys package <pkg>` output.

    Only the first `Packages:` entry counts: an updated system app also lists its factory
    version under `Hidden system packages:` further down.

    Args:
        dumpsys_package: Output of `dumpsys package <package>`.
        apk_sha256: SHA-256 prefix of the suite's APK when it sets `app.apkPath`.

    Returns:
        `baseline.app_build(...)`; values that are not in the output are "unknown".
    """
    text = dumpsys_package.split("Hidden system packages:", 1)[0]

    def first(pattern: str) -> str | None:
        match = re.search(pattern, text, re.MULTILINE)
        return match[1].strip() if match else None

    return app_build(
        version_name=first(r"^\s*versionName=(.+)$"),
        version_code=first(r"^\s*versionCode=(\d+)"),
        last_update_time=first(r"^\s*lastUpdateTime=(.+)$"),
        apk_sha256=apk_sha256,
    )
