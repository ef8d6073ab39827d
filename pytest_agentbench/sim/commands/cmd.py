"""`cmd SERVICE ...` -> the service's command handler (package, uimode, settings, activity, appops, deviceidle, role, jobs)."""

from __future__ import annotations

from ..shell import Invocation
from . import command
from .appops import appops_command, deviceidle_command
from .jobscheduler import jobscheduler_command


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
    if service == "jobscheduler":
        return jobscheduler_command(inv, rest)
    if service == "-l":
        names = sorted([*_SERVICES, "uimode", "appops", "deviceidle", "role", "jobscheduler"])
        inv.out("Currently running services:\n" + "".join(f"  {name}\n" for name in names))
        return 0
    target = _SERVICES.get(service)
    if target is None:
        return inv.fail(f"cmd: Can't find service: {service}", 255)
    return inv.run_argv([target, *rest])


# Services whose `cmd` interface is the same as their command-line tool's.
_SERVICES = {"package": "pm", "activity": "am", "settings": "settings", "window": "wm", "input": "input"}


# AOSP UiModeManagerService.Shell (Android 13+): MODE_NIGHT_* as stored in secure ui_night_mode
# (0 auto, 1 no, 2 yes, 3 custom) and the custom type in ui_night_mode_custom_type (0 schedule, 1 bedtime).
_NIGHT_MODES = {"auto": ("0", None), "no": ("1", None), "yes": ("2", None),
                "custom_schedule": ("3", "0"), "custom_bedtime": ("3", "1")}
_UIMODE_HELP = ("UiModeManager service (uimode) commands:\n  help\n    Print this help text.\n"
                "  night [yes|no|auto|custom_schedule|custom_bedtime]\n    Set or read night mode.")


def night_mode_name(mode: str, custom_type: str | None) -> str:
    """What `cmd uimode night` prints for the stored setting (AOSP `nightModeToStr`)."""
    if mode == "3":
        return {"0": "custom_schedule", "1": "custom_bedtime"}.get(custom_type or "", "unknown")
    return {"0": "auto", "1": "no", "2": "yes"}.get(mode, "unknown")


def _uimode(inv: Invocation, args: list[str]) -> int:
    if not args or args[0] != "night":
        return inv.fail(_UIMODE_HELP, 255)
    table = inv.phone.settings["secure"]
    if len(args) > 1:
        if args[1] not in _NIGHT_MODES:
            return inv.fail("Error: mode must be 'yes', 'no', or 'auto', or 'custom_schedule', or 'custom_bedtime'", 255)
        mode, custom_type = _NIGHT_MODES[args[1]]
        table["ui_night_mode"] = mode
        if custom_type is not None:
            table["ui_night_mode_custom_type"] = custom_type
    name = night_mode_name(table.get("ui_night_mode", "1"), table.get("ui_night_mode_custom_type"))
    inv.out(f"Night mode: {name}\n")
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
