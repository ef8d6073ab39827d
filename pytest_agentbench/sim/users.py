"""Shell users (root, shell, system, an app's package) -> Android uids, user names and `id` lines."""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .phone import Phone

# The fs and the shell name a caller by a string: one of these, or an app's package name (run-as, su UID).
ROOT = "root"
SHELL = "shell"
SYSTEM = "system"

ROOT_UID = 0
SYSTEM_UID = 1000
SHELL_UID = 2000
FIRST_APPLICATION_UID = 10000

_ROOT_GROUPS = ("0(root),1004(input),1007(log),1011(adb),1015(sdcard_rw),1028(sdcard_r),1078(ext_data_rw),"
                "1079(ext_obb_rw),3001(net_bt_admin),3002(net_bt),3003(inet),3006(net_bw_stats),3009(readproc),"
                "3011(uhid),3012(readtracefs)")
_SHELL_GROUPS = ("2000(shell),1004(input),1007(log),1011(adb),1015(sdcard_rw),1028(sdcard_r),1078(ext_data_rw),"
                 "1079(ext_obb_rw),3001(net_bt_admin),3002(net_bt),3003(inet),3006(net_bw_stats),3009(readproc),"
                 "3011(uhid),3012(readtracefs)")


def app_uid_candidate(package: str, attempt: int = 0) -> int:
    """A stable app uid for a package (10100-10999), so a package keeps its uid from boot to boot."""
    return FIRST_APPLICATION_UID + (zlib.crc32(f"{package}#{attempt}".encode()) % 900) + 100


def app_user_name(uid: int) -> str:
    """`u0_a123` for uid 10123, as Android names app uids of user 0."""
    return f"u0_a{uid - FIRST_APPLICATION_UID}"


def uid_of(phone: Phone, user: str) -> int:
    """The uid a shell user runs as; an unknown app name (uninstalled meanwhile) reads as the shell's."""
    if user == ROOT:
        return ROOT_UID
    if user == SYSTEM:
        return SYSTEM_UID
    info = phone.packages.get(user)
    return info.uid if info is not None else SHELL_UID


def name_of(phone: Phone, user: str) -> str:
    """What `whoami` prints."""
    if user in (ROOT, SHELL, SYSTEM):
        return user
    return app_user_name(uid_of(phone, user))


def user_for(phone: Phone, who: str) -> str | None:
    """The shell user `su WHO` switches to: a uid number, `root`, `shell`, `system` or `u0_aN`; None when unknown."""
    if who in (ROOT, SHELL, SYSTEM):
        return who
    if who.startswith("u0_a") and who[4:].isdigit():
        who = str(FIRST_APPLICATION_UID + int(who[4:]))
    if not who.isdigit():
        return None
    uid = int(who)
    fixed = {ROOT_UID: ROOT, SYSTEM_UID: SYSTEM, SHELL_UID: SHELL}
    if uid in fixed:
        return fixed[uid]
    for package, info in phone.packages.items():
        if info.uid == uid:
            return package
    return None


def id_line(phone: Phone, user: str) -> str:
    """The line `id` prints for a shell user, with its SELinux context."""
    if user == ROOT:
        return f"uid=0(root) gid=0(root) groups={_ROOT_GROUPS} context=u:r:su:s0\n"
    if user == SHELL:
        return f"uid=2000(shell) gid=2000(shell) groups={_SHELL_GROUPS} context=u:r:shell:s0\n"
    if user == SYSTEM:
        return "uid=1000(system) gid=1000(system) groups=1000(system),1007(log),3003(inet) context=u:r:su:s0\n"
    uid = uid_of(phone, user)
    name, app_id = app_user_name(uid), uid - FIRST_APPLICATION_UID
    return (f"uid={uid}({name}) gid={uid}({name}) groups={uid}({name}),3003(inet),9997(everybody),"
            f"{20000 + app_id}({name}_cache),{50000 + app_id}(all_a{app_id}) "
            f"context=u:r:untrusted_app:s0:c{app_id % 256},c256,c512,c768\n")
