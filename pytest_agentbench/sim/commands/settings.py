"""`settings get|put|delete|list NAMESPACE ...` -> the phone's settings tables (`null` when unset)."""

from __future__ import annotations

from ..shell import Invocation
from . import command

NAMESPACES = ("global", "system", "secure")


@command("settings")
def settings(inv: Invocation) -> int:
    args = list(inv.args)
    while args and args[0].startswith("--"):  # --user 0 / --user current
        args = args[2:] if args[0] == "--user" else args[1:]
    if len(args) < 2 or args[0] not in ("get", "put", "delete", "list", "reset"):
        return inv.fail("usage:  settings [--user <USER_ID> | current] get namespace key\n"
                        "        settings [--user <USER_ID> | current] put namespace key value")
    verb, namespace = args[0], args[1]
    if namespace not in NAMESPACES:
        return inv.fail(f"Invalid namespace '{namespace}'")
    table = inv.phone.settings[namespace]
    if verb == "list":
        inv.out("".join(f"{key}={table[key]}\n" for key in sorted(table)))
        return 0
    if len(args) < 3:
        return inv.fail(f"settings {verb} needs a key")
    key = args[2]
    if verb == "get":
        inv.out(f"{table.get(key, 'null')}\n")
    elif verb == "put":
        if len(args) < 4:
            return inv.fail("settings put needs a value")
        table[key] = args[3]
    elif verb == "delete":
        inv.out(f"Deleted {1 if table.pop(key, None) is not None else 0} rows\n")
    return 0
