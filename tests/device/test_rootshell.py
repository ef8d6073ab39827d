"""su form detection and the rewrite of harness root commands (device/rootshell.py): tables of cases, and on the simulated phone."""

from __future__ import annotations

import pytest

from pytest_agentbench.device.rootshell import parse_su_form, su_form_probe, with_su_form
from pytest_agentbench.device.shellscript import Script, sh
from pytest_agentbench.sim.phone import Phone

ROOT_ID = "uid=0(root) gid=0(root) groups=0(root) context=u:r:su:s0"
M = "@@agentbench-su@@"


@pytest.mark.parametrize(("output", "form"), [
    (f"{M} su 0\n{ROOT_ID}\n{M} su -c\n{ROOT_ID}\n{M} su root\n{ROOT_ID}\n{M} end\n", "su 0"),
    (f"{M} su 0\n/system/bin/sh: id: No such file or directory\n{M} su -c\n{ROOT_ID}\n{M} su root\n{M} end\n", "su -c"),
    (f"{M} su 0\nsu: unknown user 0\n{M} su -c\nsu: unknown user -c\n{M} su root\n{ROOT_ID}\n{M} end\n", "su root"),
    (f"{M} su 0\n/system/bin/sh: su: inaccessible or not found\n{M} su -c\n/system/bin/sh: su: inaccessible or not found\n"
     f"{M} su root\n/system/bin/sh: su: inaccessible or not found\n{M} end\n", None),
    (f"{M} su 0\nuid=2000(shell) gid=2000(shell)\n{M} end\n", None),  # su that did not change user
    ("", None),
])
def test_the_first_form_that_runs_id_as_root_wins(output: str, form: str | None) -> None:
    assert parse_su_form(output) == form
    assert parse_su_form(output.replace("\n", "\r\n")) == form


@pytest.mark.parametrize(("script", "form", "text"), [
    (sh("su", "0", "cat", "/data/data/x/a b.xml"), "su root", "su root cat '/data/data/x/a b.xml'"),
    (sh("su", "0", "cat", "/data/data/x/a b.xml"), "su -c", "su -c 'cat '\"'\"'/data/data/x/a b.xml'\"'\"''"),
    (sh("su", "0", "cat", "/x").merge_stderr(), "su -c", "su -c 'cat /x' 2>&1"),
    (Script.join([sh("echo", "a"), sh("su", "0", "setprop", "p", "v")], "&&"), "su root", "echo a && su root setprop p v"),
    # A value that only looks like a root command is never rewritten.
    (sh("echo", "x; su 0 reboot"), "su -c", "echo 'x; su 0 reboot'"),
    (sh("cat", "su", "0"), "su root", "cat su 0"),
    (sh("su", "0", "id"), "su 0", "su 0 id"),
])
def test_root_commands_are_rewritten_to_the_devices_form(script: Script, form: str, text: str) -> None:
    assert with_su_form(script, form).text == text  # type: ignore[arg-type]


@pytest.mark.parametrize(("variant", "form"), [("aosp", "su 0"), ("magisk", "su -c"), ("root-only", "su root")])
def test_the_simulated_phones_su_variants_are_each_detected_and_run(variant: str, form: str) -> None:
    phone = Phone(su_variant=variant)
    assert parse_su_form(phone.shell(su_form_probe().text).stdout.decode()) == form
    command = with_su_form(sh("su", "0", "id", "-u"), form)  # type: ignore[arg-type]
    result = phone.shell(command.text)
    assert (result.exit_code, result.stdout.decode()) == (0, "0\n"), result.stderr
    if form != "su 0":  # as written, the harness's `su 0` does not run on this su
        assert phone.shell("su 0 id -u").stdout.decode() != "0\n"


def test_a_user_build_has_no_form() -> None:
    phone = Phone(props={"ro.build.type": "user"})
    assert parse_su_form(phone.shell(su_form_probe().text).stdout.decode()) is None


@pytest.mark.parametrize("form", ["su -c", "su root"])
def test_the_probe_is_never_rewritten(form: str) -> None:
    assert with_su_form(su_form_probe(), form).text == su_form_probe().text  # type: ignore[arg-type]
