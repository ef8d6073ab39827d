"""suite/spaces.py as pure tables: a template string + the params -> every value it could have been filled with, and which strings of a device check hold one."""

from __future__ import annotations

import re

import pytest

from pytest_agentbench.suite.params import WORDS
from pytest_agentbench.suite.spaces import device_spaces, entry_spaces, value_space

PARAMS = {
    "name": {"type": "choice", "values": ["Courier", "Depot"]},
    "n": {"type": "integer", "min": 5, "max": 12},
    "big": {"type": "integer", "min": 0, "max": 100000},
    "word": {"type": "word", "case": "title"},
    "pin": {"type": "code", "pattern": "+1555201####"},
    "tag": {"type": "code", "alphabet": "AB", "length": 3},
    "order": {"type": "choice", "values": [{"first": "{pin}", "label": "one"}, {"first": "x{n}", "label": "two"}]},
}


@pytest.mark.parametrize(
    ("template", "inside", "outside"),
    [
        ("{name}", ["Courier", "Depot"], ["Dispatch", "courier", "Courier "]),
        ("Pickup {name}", ["Pickup Depot"], ["Depot"]),
        ("{n}", ["5", "12"], ["4", "13", "05"]),
        ("{big}", ["0", "99999", "-7"], ["1234567"]),
        ("{word}", [WORDS[0].title(), WORDS[-1].title()], [WORDS[0], "Zzz"]),
        ("{pin}", ["+15552010000", "+15552019999"], ["+15552020000", "15552010000"]),
        ("{tag}", ["ABA", "BBB"], ["ABC", "AB"]),
        ("{first}", ["+15552011234", "x7"], ["x13", "one"]),
        ("{label}", ["one", "two"], ["three"]),
        ("https://{name}.example/", ["https://Depot.example/"], ["https://Depotxexample/"]),
    ],
    ids=["choice", "literal-around", "integer-listed", "integer-wide", "word-cased", "code-pattern", "code-alphabet",
         "record-field-naming-a-param", "record-field", "escaped-literal"],
)
def test_a_template_could_have_been_exactly_these_values(template: str, inside: list[str], outside: list[str]) -> None:
    space = value_space(template, PARAMS)
    assert space is not None
    assert all(re.fullmatch(space, value) for value in inside), space
    assert not any(re.fullmatch(space, value) for value in outside), space


@pytest.mark.parametrize("template", ["fixed", "{deviceSerial}", "{packageName}", "{unknown}"],
                         ids=["fixed", "run-time", "package", "undeclared"])
def test_a_template_without_a_drawn_value_has_no_space(template: str) -> None:
    assert value_space(template, PARAMS) is None


def test_a_digits_operand_has_a_space_over_digits_only() -> None:
    space = value_space("555-2{n}-{pin}", PARAMS, digits=True)
    assert re.fullmatch(space, "55527" + "15552011234")
    assert not re.fullmatch(space, "555-27-+15552011234")


def test_each_string_of_a_check_that_holds_a_drawn_value_by_its_key_path() -> None:
    entry = {"kind": "content", "name": "c", "uri": "content://x", "projection": ["a", "b", "c"],
             "match": {"a": "{name}", "b": {"digits": "555{n}"}, "c": {"token": {"fromPrefs": {"package": "p.q", "file": "f", "key": "k"}}}}}
    spaces = entry_spaces(entry, PARAMS)
    assert set(spaces) == {".match.a", ".match.b.digits"}
    sqlite = {"kind": "sqlite", "rows": [["pinned", "{pin}"]], "query": "SELECT 1"}
    assert set(entry_spaces(sqlite, PARAMS)) == {".rows[0][1]"}
    suite = {"params": PARAMS, "verify": {"device": [entry, sqlite, {"kind": "appops", "package": "fixed.pkg"}]}}
    assert [set(found) for found in device_spaces(suite)] == [{".match.a", ".match.b.digits"}, {".rows[0][1]"}, set()]
