"""Tests for the simulated phone's command line: quoting, lists, pipes, redirections, command lookup."""

from __future__ import annotations

import pytest

from pytest_agentbench.sim.phone import Phone
from pytest_agentbench.sim.shell import ShellSyntaxError, parse, tokenize


@pytest.fixture
def phone() -> Phone:
    return Phone()


@pytest.mark.parametrize(
    ("line", "stdout"),
    [
        ("echo 'a  b'", "a  b\n"),
        ('echo "a  b"', "a  b\n"),
        ("echo a\\ b", "a b\n"),
        ('echo "x\\"y"', 'x"y\n'),
        ("echo 'it'\\''s'", "it's\n"),
        ("echo a;echo b", "a\nb\n"),
        ("echo ';'", ";\n"),
        ('echo "&&" "|"', "&& |\n"),
        ("true && echo yes", "yes\n"),
        ("false && echo yes", ""),
        ("false || echo no", "no\n"),
        ("true || echo no", ""),
        ("false && echo a || echo b", "b\n"),
        ("false; echo $?", "1\n"),
        ('nosuchcmd 2>/dev/null; echo "rc=$?"', "rc=127\n"),
        ("echo a | cat", "a\n"),
        ("printf 'a\\nb\\n' | grep b", "b\n"),
        ("echo one two | wc -w", "2\n"),
        ("printf '%s-%s\\n' a b", "a-b\n"),
        ("printf '%s\\n' a b", "a\nb\n"),
        ("echo -n x", "x"),
        ("echo -e 'a\\tb'", "a\tb\n"),
        ("echo a # a comment", "a\n"),
        ("x=1; echo $x ${x}", "1 1\n"),
        ("echo $HOME", "/\n"),
        ("cd /sdcard && pwd", "/sdcard\n"),
        ("echo a & echo b", "a\nb\n"),
        ("sh -c 'echo inner; exit 3'; echo $?", "inner\n3\n"),
    ],
)
def test_grammar_produces_what_sh_prints(phone: Phone, line: str, stdout: str) -> None:
    result = phone.shell(line)
    assert result.stdout.decode() == stdout
    assert result.stderr == b""


@pytest.mark.parametrize(
    ("line", "exit_code"),
    [
        ("true", 0),
        ("false", 1),
        ("nosuchcmd", 127),
        ("exit 3", 3),
        ("exit 4; echo never", 4),
        ("false | true", 0),
        ("true | false", 1),
        ("true && false", 1),
        ("/system/bin/false", 1),
        ("/data/local/tmp/nothing-here", 127),
        ("test -d /sdcard", 0),
        ("[ -f /sdcard ]", 1),
        ("[ 2 -gt 1 ]", 0),
    ],
)
def test_exit_status_is_the_last_command_s(phone: Phone, line: str, exit_code: int) -> None:
    assert phone.shell(line).exit_code == exit_code


def test_unknown_command_prints_what_android_prints(phone: Phone) -> None:
    result = phone.shell("nosuchcmd --flag")
    assert result.stderr == b"/system/bin/sh: nosuchcmd: inaccessible or not found\n"
    assert result.stdout == b""


@pytest.mark.parametrize(
    "line",
    ["/system/bin/getprop ro.build.version.sdk", "/system/xbin/getprop ro.build.version.sdk",
     "'getprop' ro.build.version.sdk", "/system/bin/sh -c 'getprop ro.build.version.sdk'"],
)
def test_absolute_and_quoted_command_names_resolve_by_basename(phone: Phone, line: str) -> None:
    assert phone.shell(line).stdout == b"34\n"


def test_redirect_truncates_and_append_appends(phone: Phone) -> None:
    phone.shell("echo first > /sdcard/a.txt; echo second >> /sdcard/a.txt")
    assert phone.fs.read("/sdcard/a.txt") == b"first\nsecond\n"
    phone.shell("echo again >/sdcard/a.txt")
    assert phone.fs.read("/sdcard/a.txt") == b"again\n"


def test_redirect_creates_the_file_even_when_the_command_prints_nothing(phone: Phone) -> None:
    phone.shell("true > /data/local/tmp/empty")
    assert phone.fs.read("/data/local/tmp/empty") == b""


def test_input_redirect_feeds_stdin(phone: Phone) -> None:
    phone.fs.write("/sdcard/in.txt", b"from file\n")
    assert phone.shell("cat < /sdcard/in.txt").stdout == b"from file\n"


@pytest.mark.parametrize(
    ("line", "stdout", "stderr"),
    [
        ("cat /nope", "", "cat: /nope: No such file or directory\n"),
        ("cat /nope 2>/dev/null", "", ""),
        ("cat /nope 2>&1", "cat: /nope: No such file or directory\n", ""),
        # Descriptors are copied left to right: stderr keeps the old stdout, stdout goes to /dev/null.
        ("cat /nope 2>&1 >/dev/null", "cat: /nope: No such file or directory\n", ""),
        ("cat /nope >/dev/null 2>&1", "", ""),
        ("echo to-err >&2", "", "to-err\n"),
        ("echo to-err 1>&2", "", "to-err\n"),
        ("echo gone > /dev/null", "", ""),
        ("pm list features 2>/dev/null | grep -c touchscreen", "2\n", ""),
    ],
)
def test_descriptor_redirections(phone: Phone, line: str, stdout: str, stderr: str) -> None:
    result = phone.shell(line)
    assert (result.stdout.decode(), result.stderr.decode()) == (stdout, stderr)


def test_stderr_redirected_into_a_file_together_with_stdout(phone: Phone) -> None:
    phone.shell("cat /nope > /sdcard/log 2>&1; echo ok >> /sdcard/log")
    assert phone.fs.read("/sdcard/log") == b"cat: /nope: No such file or directory\nok\n"


def test_redirect_into_a_missing_directory_fails_like_sh(phone: Phone) -> None:
    result = phone.shell("echo x > /sdcard/no/such/file")
    assert result.exit_code == 1
    assert result.stderr == b"/system/bin/sh: can't create /sdcard/no/such/file: No such file or directory\n"


def test_relative_paths_follow_cd(phone: Phone) -> None:
    phone.shell("cd /data/local/tmp && mkdir -p d/e && cd d && echo hi > e/f")
    assert phone.fs.read("/data/local/tmp/d/e/f") == b"hi\n"


def test_shell_user_cannot_read_app_private_storage(phone: Phone) -> None:
    result = phone.shell("ls /data/data/dev.jasonpearson.automobile.playground")
    assert result.exit_code == 1
    assert b"Permission denied" in result.stderr
    assert phone.shell("echo x > /data/data/com.android.settings/f").exit_code == 1


@pytest.mark.parametrize("line", ["echo 'unterminated", 'echo "open', "&& echo x", "echo x |", "echo x &&", "| cat",
                                  "echo >"])
def test_syntax_errors_exit_2_with_a_message(phone: Phone, line: str) -> None:
    result = phone.shell(line)
    assert result.exit_code == 2
    assert result.stderr.startswith(b"/system/bin/sh: syntax error:")


def test_tokenize_keeps_quoted_operators_as_words() -> None:
    tokens = tokenize("echo ';' a\\;b && x 2>&1")
    assert tokens == [("word", ("echo",)), ("word", (";",)), ("word", ("a;b",)), ("op", "&&"), ("word", ("x",)),
                      ("op", "2>&1")]


def test_digit_inside_a_word_is_not_a_descriptor() -> None:
    pipelines = parse("echo a2>/dev/null")
    command = pipelines[0].commands[0]
    assert command.words == [("echo",), ("a2",)]
    assert command.redirects[0].fd == 1


def test_syntax_error_type_is_raised_by_parse() -> None:
    with pytest.raises(ShellSyntaxError):
        parse("echo 'x")


def test_status_wrapper_used_over_shell_v1_reports_the_real_status(phone: Phone) -> None:
    # pure-python-adb only speaks shell v1, so the device layer appends the status to stdout.
    result = phone.shell("getprop ro.build.version.sdk; echo \"__rc=$?\"")
    assert result.stdout == b"34\n__rc=0\n"
    assert phone.shell("ls /nope; echo :$?").stdout == b":1\n"
