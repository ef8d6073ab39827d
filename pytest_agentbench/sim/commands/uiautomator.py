"""`uiautomator dump [FILE|/dev/tty]` -> the screen as uiautomator XML, in a file or on stdout."""

from __future__ import annotations

from ..shell import Invocation
from . import command

DEFAULT_DUMP = "/sdcard/window_dump.xml"


@command("uiautomator")
def uiautomator(inv: Invocation) -> int:
    args = [a for a in inv.args if a not in ("--compressed", "--verbose")]
    if not args or args[0] != "dump":
        inv.out("Usage: uiautomator <subcommand> [options]\n\nAvailable subcommands:\n\n"
                "help: displays help message\n\ndump: creates an XML dump of current UI hierarchy\n")
        return 0 if not args or args[0] == "help" else 1
    target = args[1] if len(args) > 1 else DEFAULT_DUMP
    if inv.phone.take_busy_dump():
        # What AOSP's DumpCommand prints when the window never goes idle (an animating screen);
        # `Phone(busy_screen_dumps={PKG: N})` makes the next N dumps with PKG in front do it.
        inv.out("ERROR: could not get idle state.\n")
        return 0
    xml = inv.phone.screen_xml()
    if target == "/dev/tty":
        # A real device prints the XML with no newline and then the (misspelt) confirmation.
        inv.out(xml + "UI hierchary dumped to: /dev/tty\n")
        return 0
    path = inv.path(target)
    try:
        inv.phone.fs.write(path, xml.encode(), user=inv.user, make_parents=False)
    except OSError as error:
        # uiautomator reports write failures on stdout, keeping stderr empty as clients expect.
        inv.out(f"ERROR: could not write {target}: {error.strerror}\n")
        return 1
    inv.out(f"UI hierchary dumped to: {target}\n")
    return 0
