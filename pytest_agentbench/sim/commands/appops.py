"""`cmd appops get|set|reset|query-op` (and the `appops` binary), `dumpsys appops`, `cmd deviceidle whitelist` -> app-op and idle state.

Output follows Android 14's AppOpsService.Shell: `OP: mode[; time=+5m1s2ms ago][ (running)]` lines,
`No operations.` plus `Default mode: ...` for an op nothing set, errors as `Error: ...` on stderr
with status 255 (the shell command returns -1).
"""

from __future__ import annotations

import time

from ..system.appops import MODE_NAMES, default_mode, mode_from_text, op_from_text
from ..system.power import SYSTEM_ALLOWLIST, format_duration
from ..shell import Invocation
from ..users import FIRST_APPLICATION_UID, ROOT, SHELL, SYSTEM
from . import command

HELP = """AppOps service (appops) commands:
  help
    Print this help text.
  set [--user <USER_ID>] <[--uid] PACKAGE | UID> <OP> <MODE>
    Set the mode for a particular application and operation.
  get [--user <USER_ID>] [--attribution <ATTRIBUTION_TAG>] <PACKAGE | UID> [<OP>]
    Return the mode for a particular application and optional operation.
  query-op [--user <USER_ID>] <OP> [<MODE>]
    Print all packages that currently have the given op in the given mode.
  reset [--user <USER_ID>] [<PACKAGE>]
    Reset the given application or all applications to default modes.
  options:
    <PACKAGE> an Android package name or its UID if prefixed by --uid
    <OP>      an AppOps operation.
    <MODE>    one of allow, ignore, deny, or default
    <USER_ID> the user id under which the package is installed. If --user is
              not specified, the current user is assumed.
"""


@command("appops")
def appops(inv: Invocation) -> int:
    """`/system/bin/appops` is a script that runs `cmd appops "$@"`."""
    return appops_command(inv, list(inv.args))


def appops_command(inv: Invocation, args: list[str]) -> int:
    if not args or args[0] in ("help", "-h"):
        inv.out(HELP)
        return 0
    if inv.user not in (ROOT, SHELL, SYSTEM):
        return inv.fail("Security exception: uid does not have android.permission.MANAGE_APP_OPS_MODES.", 255)
    verb, rest = args[0], [arg for arg in _drop_user(args[1:])]
    try:
        if verb == "get":
            return _get(inv, rest)
        if verb == "set":
            return _set(inv, rest)
        if verb == "reset":
            return _reset(inv, rest)
        if verb == "query-op":
            return _query_op(inv, rest)
        if verb in ("write-settings", "read-settings", "start", "stop"):
            return 0
    except ValueError as error:
        return inv.fail(f"Error: {error}", 255)
    return inv.fail(f"Unknown command: {verb}", 255)


def _drop_user(args: list[str]) -> list[str]:
    out, i = [], 0
    while i < len(args):
        if args[i] == "--user":
            i += 2
            continue
        out.append(args[i])
        i += 1
    return out


def _target(inv: Invocation, args: list[str], *, op_required: bool) -> tuple[str | None, int | None, bool, str | None]:
    """(package, uid, --uid given, op) from `[--uid] PACKAGE|UID [OP]`."""
    targets_uid = "--uid" in args
    positional = [arg for arg in args if arg != "--uid"]
    if "--attribution" in positional:
        index = positional.index("--attribution")
        del positional[index:index + 2]
    if not positional:
        raise ValueError("Package name not specified.")
    name = positional[0]
    op = op_from_text(positional[1]) if len(positional) > 1 else None
    if op is None and op_required:
        raise ValueError("Operation not specified.")
    if name.isdigit() or (name.startswith("u0_a") and name[4:].isdigit()):
        # A bare uid (or u0_aN) addresses the uid's modes, not a package's.
        return None, int(name) if name.isdigit() else FIRST_APPLICATION_UID + int(name[4:]), True, op
    info = inv.phone.packages.get(name)
    if info is None:
        raise ValueError(f"No UID for {name} in user 0")
    return name, info.uid, targets_uid, op


def _get(inv: Invocation, args: list[str]) -> int:
    package, uid, _targets_uid, op = _target(inv, args, op_required=False)
    table = inv.phone.appops
    lines = []
    uid_modes = table.uids.get(uid or -1, {})
    uid_entries = [(name, uid_modes[name]) for name in uid_modes if op is None or name == op]
    if uid_entries:
        lines.append("Uid mode: " + "".join(f"{name}: {MODE_NAMES[mode]}\n" for name, mode in uid_entries))
    if package is not None:
        now = time.time()
        for name, entry in table.entries(package):
            if op is not None and name != op:
                continue
            line = f"{name}: {MODE_NAMES[entry.mode]}"
            if entry.last_access is not None:
                line += f"; time={format_duration(int((now - entry.last_access) * 1000))} ago"
            if entry.running:
                line += " (running)"
            lines.append(line + "\n")
    if not lines:
        inv.out("No operations.\n")
        if op is not None:
            inv.out(f"Default mode: {MODE_NAMES[default_mode(op)]}\n")
        return 0
    inv.out("".join(lines))
    return 0


def _set(inv: Invocation, args: list[str]) -> int:
    flags = [arg for arg in args if arg == "--uid"]
    positional = [arg for arg in args if arg != "--uid"]
    if len(positional) < 3:
        _target(inv, args, op_required=True)
        raise ValueError("Mode not specified.")
    package, uid, targets_uid, op = _target(inv, [*flags, *positional[:2]], op_required=True)
    mode = mode_from_text(positional[2])
    if targets_uid or package is None:
        inv.phone.appops.set_uid_mode(int(uid or 0), op or "", mode)
    else:
        inv.phone.appops.set_mode(package, op or "", mode)
    return 0


def _reset(inv: Invocation, args: list[str]) -> int:
    package = args[0] if args else None
    if package is not None and package not in inv.phone.packages:
        raise ValueError(f"No UID for {package} in user 0")
    inv.phone.appops.reset(package)
    inv.out(f"Reset all modes for: user 0, {'all packages' if package is None else 'package ' + package}\n")
    return 0


def _query_op(inv: Invocation, args: list[str]) -> int:
    if not args:
        raise ValueError("Operation not specified.")
    op = op_from_text(args[0])
    mode = mode_from_text(args[1]) if len(args) > 1 else 1
    packages = inv.phone.appops.packages_in_mode(op, mode)
    if not any(op in entries for entries in inv.phone.appops.packages.values()):
        inv.out("No operations.\n")
        return 0
    inv.out("".join(f"{package}\n" for package in packages))
    return 0


def format_uid(uid: int) -> str:
    """UserHandle.formatUid: `1000`, `u0a123` (an app of user 0), as `dumpsys appops` names uids."""
    if uid < FIRST_APPLICATION_UID:
        return str(uid)
    return f"u{uid // 100000}a{uid % 100000 - FIRST_APPLICATION_UID}"


def appops_dump(inv: Invocation) -> int:
    """`dumpsys appops`: per uid its state, its uid modes (`OP: mode=M`), then per package `OP (mode):` and access lines."""
    phone, table, now = inv.phone, inv.phone.appops, time.time()
    by_uid: dict[int, list[str]] = {uid: [] for uid in table.uids}
    for package in table.packages:
        info = phone.packages.get(package)
        if info is not None:
            by_uid.setdefault(info.uid, []).append(package)
    lines = ["Current AppOps Service state:", "  Settings:", "    top_state_settle_time=+5s0ms",
             "    fg_service_state_settle_time=+5s0ms", "    bg_state_settle_time=+1s0ms", ""]
    for uid in sorted(by_uid):
        lines += [f"  Uid {format_uid(uid)}:", "    state=cch", "    capability=LCMN", "    appWidgetVisible=false"]
        lines += [f"      {op}: mode={MODE_NAMES[mode]}" for op, mode in sorted(table.uids.get(uid, {}).items())]
        for package in sorted(by_uid[uid]):
            lines.append(f"    Package {package}:")
            for op, entry in table.entries(package):
                lines.append(f"      {op} ({MODE_NAMES[entry.mode]}): ")
                if entry.last_access is not None:
                    stamp = time.strftime("%Y-%m-%d %H:%M:%S.000", time.localtime(entry.last_access))
                    ago = format_duration(int((now - entry.last_access) * 1000))
                    lines.append(f"          Access: [bg-s] {stamp} (-{ago.lstrip('+')})")
                    if entry.running:
                        lines.append(f"          Running start at: {ago} ago")
    inv.out("\n".join(lines) + "\n")
    return 0


def deviceidle_command(inv: Invocation, args: list[str]) -> int:
    """`cmd deviceidle whitelist [+PKG|-PKG ...]`: the power allowlist Settings' "Unrestricted" adds apps to."""
    if not args or args[0] not in ("whitelist", "except-idle-whitelist", "sys-whitelist"):
        inv.out("Device idle controller (deviceidle) commands:\n  whitelist\n    Print currently whitelisted apps.\n"
                "  whitelist [package ...]\n    Add (prefix with +) or remove (prefix with -) packages.\n")
        return 0
    power = inv.phone.power
    changes = args[1:]
    if not changes:
        inv.out(deviceidle_listing(inv))
        return 0
    for change in changes:
        sign, package = change[:1], change[1:]
        if sign not in "+-" or not package:
            return inv.fail(f"Package must be prefixed with +, -, or =: {change}", 255)
        if sign == "+":
            if package not in inv.phone.packages:
                inv.out(f"Unknown package: {package}\n")
                continue
            power.allowlist.add(package)
            inv.out(f"Added: {package}\n")
        else:
            power.allowlist.discard(package)
            inv.out(f"Removed: {package}\n")
    return 0


def deviceidle_listing(inv: Invocation) -> str:
    """`system-excidle,PKG,UID` / `system,PKG,UID` / `user,PKG,UID` lines, as `dumpsys deviceidle whitelist`."""
    packages = inv.phone.packages
    lines = [f"system-excidle,{name},{packages[name].uid}\n" for name in SYSTEM_ALLOWLIST if name in packages]
    lines += [f"system,{name},{packages[name].uid}\n" for name in SYSTEM_ALLOWLIST if name in packages]
    lines += [f"user,{name},{packages[name].uid}\n" for name in sorted(inv.phone.power.allowlist) if name in packages]
    return "".join(lines)
