"""`pm list|path|clear|install|uninstall|resolve-activity|query-activities|dump` -> the phone's package manager.

`pm install FILE` cannot parse a real APK; it reads a small manifest instead: either a zip holding
`AndroidManifest.json` ({"package", "versionName", "versionCode", "debuggable", "label"}) or a text
file of `key=value` lines with the same keys. The installed base.apk keeps the pushed bytes.
"""

from __future__ import annotations

import io
import json
import zipfile

from ..shell import Invocation
from . import command
from .am import short_component

FEATURES = ("android.hardware.touchscreen", "android.hardware.touchscreen.multitouch", "android.hardware.wifi",
            "android.hardware.screen.portrait", "android.hardware.screen.landscape", "android.hardware.faketouch",
            "android.software.app_widgets", "android.software.home_screen", "android.software.input_methods",
            "android.software.webview")


@command("pm")
def pm(inv: Invocation) -> int:
    args = [a for a in inv.args]
    if not args:
        return inv.fail("usage: pm [list|path|install|uninstall|clear|resolve-activity|query-activities] ...", 255)
    verb, rest = args[0], _drop_user(args[1:])
    handler = _VERBS.get(verb)
    if handler is None:
        return inv.fail(f"Unknown command: {verb}", 255)
    return handler(inv, rest)


def _drop_user(args: list[str]) -> list[str]:
    out, i = [], 0
    while i < len(args):
        if args[i] == "--user":
            i += 2
            continue
        out.append(args[i])
        i += 1
    return out


def _list(inv: Invocation, args: list[str]) -> int:
    what = args[0] if args else ""
    phone = inv.phone
    if what == "packages":
        flags = {a for a in args[1:] if a.startswith("-")}
        needle = next((a for a in args[1:] if not a.startswith("-")), "")
        for name in sorted(phone.packages):
            info = phone.packages[name]
            if ("-3" in flags and info.system) or ("-s" in flags and not info.system) or needle not in name:
                continue
            line = f"package:{info.apk_path}={name}" if "-f" in flags else f"package:{name}"
            inv.out(line + (f" uid:{info.uid}" if "-U" in flags else "") + "\n")
        return 0
    if what == "users":
        inv.out("Users:\n\tUserInfo{0:Owner:c13} running\n")
        return 0
    if what == "features":
        inv.out("".join(f"feature:{name}\n" for name in FEATURES) + "feature:reqGlEsVersion=0x30002\n")
        return 0
    return inv.fail(f"Error: unknown list type '{what}'", 255)


def _path(inv: Invocation, args: list[str]) -> int:
    info = inv.phone.packages.get(args[0]) if args else None
    if info is None:
        return 1
    inv.out(f"package:{info.apk_path}\n")
    return 0


def _clear(inv: Invocation, args: list[str]) -> int:
    if not args or args[0] not in inv.phone.packages:
        return inv.fail("Failed")
    inv.phone.clear_data(args[0])
    inv.out("Success\n")
    return 0


def _install(inv: Invocation, args: list[str]) -> int:
    files = [a for a in args if not a.startswith("-")]
    if not files:
        return inv.fail("Error: must either specify a package size or an APK file", 255)
    path = inv.path(files[-1])
    try:
        data = inv.phone.fs.read(path, user=inv.user)
    except OSError:
        return inv.fail(f"Error: Unable to open file: {files[-1]}\nConsider using a file under /data/local/tmp/", 255)
    try:
        manifest = parse_manifest(data)
    except ValueError as error:
        inv.out(f"Failure [INSTALL_PARSE_FAILED_NOT_APK: Failed parse during installPackageLI: {path}: {error}]\n")
        return 1
    package = manifest["package"]
    version_code = int(manifest.get("versionCode", 1))
    existing = inv.phone.packages.get(package)
    if existing is not None and version_code < existing.version_code and "-d" not in args:
        inv.out(f"Failure [INSTALL_FAILED_VERSION_DOWNGRADE: Downgrade detected: Update version code {version_code} "
                f"is older than current {existing.version_code}]\n")
        return 1
    app = inv.phone.app_for_install(package, manifest.get("label"))
    if "debuggable" in manifest:
        # The manifest decides debuggability, as android:debuggable does.
        app.debuggable = str(manifest["debuggable"]).lower() in ("true", "1")
    inv.phone.install(app, data, version_name=str(manifest.get("versionName", "1.0")), version_code=version_code)
    inv.out("Success\n")
    return 0


def parse_manifest(data: bytes) -> dict[str, object]:
    """Read the sim's stand-in for an APK manifest (zip with AndroidManifest.json, or key=value text)."""
    if data[:2] == b"PK":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                manifest = json.loads(archive.read("AndroidManifest.json"))
        except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as error:
            raise ValueError(f"no readable AndroidManifest.json ({error})") from error
        if not isinstance(manifest, dict):
            raise ValueError("AndroidManifest.json is not an object")
    else:
        try:
            text = data.decode()
        except UnicodeDecodeError as error:
            raise ValueError("not a zip and not a key=value manifest") from error
        manifest = {}
        for line in text.splitlines():
            if "=" in line:
                key, value = line.split("=", 1)
                manifest[key.strip()] = value.strip()
    package = manifest.get("package")
    if not isinstance(package, str) or "." not in package:
        raise ValueError("manifest has no package name")
    try:
        int(manifest.get("versionCode", 1))
    except (TypeError, ValueError) as error:
        raise ValueError(f"versionCode {manifest.get('versionCode')!r} is not a number") from error
    return manifest


def _uninstall(inv: Invocation, args: list[str]) -> int:
    package = next((a for a in args if not a.startswith("-")), "")
    info = inv.phone.packages.get(package)
    if info is None or info.system:
        inv.out("Failure [DELETE_FAILED_INTERNAL_ERROR]\n")
        return 1
    inv.phone.uninstall(package)
    inv.out("Success\n")
    return 0


def _resolve_activity(inv: Invocation, args: list[str]) -> int:
    brief = "--brief" in args
    rest = [a for a in args if a != "--brief" and not a.startswith("--components")]
    package = rest[-1] if rest else ""
    info = inv.phone.packages.get(package)
    if info is None:
        inv.out("No activity found\n")
        return 0
    component = short_component(package, info.app.activity)
    if brief:
        inv.out(f"priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=true\n{component}\n")
    else:
        inv.out(_activity_block(info.package, info.app.activity, info.app.label, indent="  "))
    return 0


def _query_activities(inv: Invocation, args: list[str]) -> int:
    phone = inv.phone
    infos = [phone.packages[name] for name in sorted(phone.packages) if phone.packages[name].app.launchable]
    inv.out(f"{len(infos)} activities found:\n")
    for index, info in enumerate(infos):
        inv.out(f"  Activity #{index}:\n")
        inv.out(_activity_block(info.package, info.app.activity, info.app.label, indent="    "))
    return 0


def _activity_block(package: str, activity: str, label: str, indent: str) -> str:
    return (f"{indent}priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=false\n"
            f"{indent}ActivityInfo:\n"
            f"{indent}  name={activity}\n"
            f"{indent}  packageName={package}\n"
            f"{indent}  labelRes=0x0 nonLocalizedLabel={label} icon=0x0 banner=0x0\n"
            f"{indent}  enabled=true exported=true directBootAware=false\n"
            f"{indent}  taskAffinity={package} targetActivity=null persistableMode=PERSIST_ROOT_ONLY\n")


def _dump(inv: Invocation, args: list[str]) -> int:
    from .dumpsys import package_dump

    return package_dump(inv, args[0] if args else "")


_VERBS = {"list": _list, "path": _path, "clear": _clear, "install": _install, "uninstall": _uninstall,
          "resolve-activity": _resolve_activity, "query-activities": _query_activities, "dump": _dump}
