"""`su [WHO [COMMAND...]]` (AOSP userdebug), `su -c CMD`, `id` and `whoami` -> commands as another user.

AOSP's su exists only on userdebug/eng builds and only the shell and root may use it; on a user
build there is no su binary at all, so the shell reports it as not found (exit 127).
"""

from __future__ import annotations

from ..shell import SHELL_NAME, Invocation
from ..users import ROOT, SHELL, id_line, name_of, uid_of, user_for
from . import command


@command("su")
def su(inv: Invocation) -> int:
    if not inv.phone.debuggable_build:
        return inv.fail(f"{SHELL_NAME}: su: inaccessible or not found", 127)
    if inv.user not in (ROOT, SHELL):
        return inv.fail("su: uid %d not allowed to su" % uid_of(inv.phone, inv.user))
    args = list(inv.args)
    who = ROOT
    if args and not args[0].startswith("-"):
        found = user_for(inv.phone, args[0].split(",", 1)[0])
        if found is None:
            return inv.fail(f"su: unknown user {args[0]}")
        who, args = found, args[1:]
    if args[:1] in (["-c"], ["--command"]):
        if len(args) < 2:
            return inv.fail("su: option requires an argument -- c")
        # `su -c 'CMD'` (SuperSU/Magisk style) runs CMD through sh.
        return inv.run_argv(["sh", "-c", " ".join(args[1:])], user=who)
    if args[:1] == ["-"]:
        args = args[1:]
    return inv.run_argv(args or ["sh"], user=who)


@command("id")
def id_(inv: Invocation) -> int:
    flags = "".join(arg[1:] for arg in inv.args if arg.startswith("-"))
    if "u" in flags or "g" in flags:
        uid = uid_of(inv.phone, inv.user)
        inv.out((name_of(inv.phone, inv.user) if "n" in flags else str(uid)) + "\n")
        return 0
    inv.out(id_line(inv.phone, inv.user))
    return 0


@command("whoami")
def whoami(inv: Invocation) -> int:
    inv.out(name_of(inv.phone, inv.user) + "\n")
    return 0
