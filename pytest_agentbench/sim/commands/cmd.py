"""`cmd SERVICE ...` -> the service's command handler (package, uimode, settings, activity, appops, deviceidle, role)."""

from __future__ import annotations

from ..shell import Invocation
from . import command
from .appops import appops_command, deviceidle_command


@command("cmd")
def cmd(inv: Invocation) -> int:
    if not inv.args:
        return inv.fail("cmd: No service specified; use -l to list all running services. Use -w to start and wait for a service.", 255)
    service, rest = inv.args[0], inv.args[1:]
    if service == "uimode":
        return _uimode(inv, rest)
    if service == "appops":
        return appops_command(inv, rest)
    if service == "deviceidle":
        return deviceidle_command(inv, rest)
    if service == "role":
        return _role(inv, rest)
    if service == "-l":
        names = sorted([*_SERVICES, "uimode", "appops", "deviceidle", "role"])
        inv.out("Currently running services:\n" + "".join(f"  {name}\n" for name in names))
        return 0
    target = _SERVICES.get(service)
    if target is None:
        return inv.fail(f"cmd: Can't find service: {service}", 255)
    return inv.run_argv([target, *rest])


# Services whose `cmd` interface is the same as their command-line tool's.
_SERVICES = {"package": "pm", "activity": "am", "settings": "settings", "window": "wm", "input": "input"}


def _uimode(inv: Invocation, args: list[str]) -> int:
    if not args or args[0] != "night":
        return inv.fail("UI mode service commands:\n  night [yes|no|auto|custom]", 255)
    table = inv.phone.settings["secure"]
    if len(args) > 1:
        if args[1] not in ("yes", "no", "auto"):
            return inv.fail("Error: mode must be 'yes', 'no', or 'auto'", 255)
        table["ui_night_mode"] = {"no": "1", "yes": "2", "auto": "0"}[args[1]]
    mode = {"1": "no", "2": "yes", "0": "auto"}.get(table.get("ui_night_mode", "1"), "no")
    inv.out(f"Night mode: {mode}\n")
    return 0


def _role(inv: Invocation, args: list[str]) -> int:
    """`cmd role get-role-holders ROLE` (holders joined with `;`, as RoleShellCommand prints them), add/remove-role-holder."""
    args = [arg for index, arg in enumerate(args) if arg != "--user" and (index == 0 or args[index - 1] != "--user")]
    if len(args) >= 2 and args[0] == "get-role-holders":
        holders = inv.phone.roles.get(args[1], [])
        inv.out(";".join(holders) + "\n" if holders else "")
        return 0
    if len(args) >= 3 and args[0] in ("add-role-holder", "remove-role-holder"):
        if args[2] not in inv.phone.packages:
            return inv.fail(f"Error: package {args[2]} not found", 255)
        holders = inv.phone.roles.setdefault(args[1], [])
        if args[0] == "add-role-holder" and args[2] not in holders:
            # The SMS role is exclusive: the new holder replaces the old one.
            holders[:] = [args[2]]
        elif args[0] == "remove-role-holder" and args[2] in holders:
            holders.remove(args[2])
        return 0
    return inv.fail("Role (role) commands:\n  get-role-holders [--user USER_ID] ROLE\n"
                    "  add-role-holder [--user USER_ID] ROLE PACKAGE [FLAGS]\n  remove-role-holder [--user USER_ID] ROLE PACKAGE [FLAGS]", 255)
