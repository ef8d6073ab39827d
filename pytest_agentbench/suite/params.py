"""A suite's ``params:`` declaration + (seed, suite, repeat) -> the values of one seeded task instance, filled into its texts.

Each param is a typed generator: ``choice`` (one of a list), ``integer`` (min..max inclusive),
``word`` (from WORDS, a fixed built-in list) or ``code`` (an alphabet and a length, or a
pattern). Values come from SHA-256 of the seed, the suite name, the repeat index and the param
name, never from Python's ``hash()`` or ``random``, so instance r3 of a suite has the same values
on every machine and Python version. Repeats are drawn without replacement: r2 is redrawn while
it would repeat r1, until every instance of the suite's space has run once (`instance_space`).
DERIVATION names this recipe; changing the recipe or WORDS changes every instance, so both are
pinned by tests.

The seed is the secret: a session draws a fresh one (`draw_seed`) unless it is given, so a value
the prompt hides cannot be computed by anyone who knows the suite and this package.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import math
import re
import secrets
import string
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from jsonschema import Draft202012Validator

from pytest_agentbench.suite.schema import schema_problems

# The seed of a Suite instantiated outside a session (tests, library calls). A session never uses
# it unless told to: without --agentbench-seed it draws a secret one (draw_seed).
DEFAULT_SEED = 0
# v2 = v1's streams, each repeat redrawn (an attempt number added to its key) while it would repeat
# an earlier instance of its cycle. A repeat that needs no redraw keeps v1's values.
DERIVATION = "agentbench-params-v2"
_STREAM_PREFIX = "agentbench-params-v1"
# Bits of a drawn session seed: too many to try one by one (2**53 SHA-256 streams), and every
# drawn seed stays exact in JSON readers that hold numbers as doubles (JavaScript, jq 1.6).
SEED_BITS = 53

# The run-time placeholders (suite.PLACEHOLDERS, filled when a run starts): params may not take
# these names, and fill() leaves them in place. A test keeps the two lists equal.
RESERVED = ("deviceSerial", "packageName", "runDirectory")
PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
MAX_CODE_LENGTH = 64
MAX_SAFE_INTEGER = 2**53 - 1
# A readable instance id lists the values themselves while it stays this short.
_READABLE_ID_LENGTH = 24
_READABLE_VALUE_RE = re.compile(r"^[A-Za-z0-9._]+$")

# Pattern characters of a `code`: everything else is literal, and a backslash makes the next
# character literal. Letters and digits are always literal, so "ORD-####" needs no escaping.
PATTERN_CLASSES = {
    "#": string.digits,
    "@": string.ascii_uppercase,
    "%": string.ascii_lowercase,
    "*": string.ascii_uppercase + string.digits,
}
_PATTERN_MEANINGS = {"#": "a digit", "@": "an uppercase letter", "%": "a lowercase letter", "*": "an uppercase letter or digit"}

# Common, concrete, easy-to-type English words, unique and lowercase. Part of DERIVATION v1:
# append-only is not enough (indices would shift meaning), so never edit this list in place.
WORDS: tuple[str, ...] = tuple(
    """
    acorn anchor apple apron arrow atlas autumn badge bagel bamboo banjo barley basil basket beach
    beacon berry bison blanket bloom bottle branch bread breeze brick bridge brook bucket butter
    button cabin cable cactus camel candle canoe canyon carpet carrot castle cedar cello chalk
    cherry chimney cider circus clover cobalt cocoa comet compass copper coral cotton cradle crane
    crayon cricket crystal cushion daisy delta denim desert diamond dolphin donkey dragon drum eagle
    easel ember engine falcon feather fern fiddle flame flute forest fossil fountain garden garlic
    gecko ginger glacier globe goose granite grape guitar hammer harbor harp hazel helmet heron
    honey iceberg island ivory jacket jaguar jasmine jelly jigsaw jungle kayak kettle kitten koala
    ladder lagoon lantern lemon lettuce lily lizard lobster locket lotus magnet mango maple marble
    meadow melon meteor mirror mitten monkey moose mosaic muffin napkin nectar needle nickel noodle
    nutmeg oasis ocean olive onion orange orbit orchid otter oyster paddle palace panda papaya
    parrot peach peanut pearl pebble pelican pencil pepper piano pigeon pillow pirate planet plum
    pocket pony poppy potato prism puffin pumpkin puzzle quartz quill rabbit radish raven ribbon
    river robin rocket saddle salmon sandal satchel scarf seagull shell silver sketch sled sofa
    sparrow spider spinach spruce squid statue summit sunset swan teapot thistle tiger timber toast
    tomato topaz torch tower trumpet tulip tundra turtle umbrella valley velvet violin volcano
    waffle wagon walnut walrus whale whistle willow window winter wizard yogurt zebra
    """.split()
)

_CASES = ("lower", "upper", "title")

# The JSON Schema fragment for a suite's `params` key (draft 2020-12). `x-expected` carries the
# phrase suite._schema_problems puts after "expected"; rules a schema cannot say are in code.
_PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Seeded task instance values: name -> generator; fills {name} in the prompt, preflight, verify and device checks",
    "propertyNames": {
        "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
        "x-expected": "a param name of letters, digits and '_', not starting with a digit (it is used as {name})",
    },
    "additionalProperties": {
        "type": "object",
        "required": ["type"],
        "properties": {
            "type": {"enum": ["choice", "integer", "word", "code"], "x-expected": "a type of choice, integer, word or code"},
        },
        "allOf": [
            {
                "if": {"type": "object", "properties": {"type": {"const": "choice"}}, "required": ["type"]},
                "then": {
                    "additionalProperties": False,
                    "required": ["values"],
                    "properties": {
                        "type": True,
                        "values": {
                            "type": "array",
                            "minItems": 1,
                            "items": {
                                "type": ["string", "integer", "object"],
                                "x-expected": "a string, an integer, or a record of field names to strings and integers",
                                "minProperties": 1,
                                "propertyNames": {
                                    "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
                                    "x-expected": "a field name of letters, digits and '_', not starting with a digit (it is used as {name})",
                                },
                                "additionalProperties": {"type": ["string", "integer"], "x-expected": "a string or an integer"},
                            },
                        },
                    },
                },
            },
            {
                "if": {"type": "object", "properties": {"type": {"const": "integer"}}, "required": ["type"]},
                "then": {
                    "additionalProperties": False,
                    "required": ["min", "max"],
                    "properties": {"type": True, "min": {"type": "integer"}, "max": {"type": "integer"}},
                },
            },
            {
                "if": {"type": "object", "properties": {"type": {"const": "word"}}, "required": ["type"]},
                "then": {
                    "additionalProperties": False,
                    "properties": {
                        "type": True,
                        "case": {"enum": list(_CASES), "x-expected": "a case of lower, upper or title"},
                    },
                },
            },
            {
                "if": {"type": "object", "properties": {"type": {"const": "code"}}, "required": ["type"]},
                "then": {
                    "additionalProperties": False,
                    "properties": {
                        "type": True,
                        "alphabet": {"type": "string", "minLength": 1},
                        "length": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": MAX_CODE_LENGTH,
                            "x-expected": f"an integer from 1 to {MAX_CODE_LENGTH}",
                        },
                        "pattern": {"type": "string", "minLength": 1},
                    },
                    "oneOf": [{"required": ["pattern"]}, {"required": ["alphabet", "length"]}],
                    "x-expected": "either a pattern, or an alphabet and a length (not both)",
                },
            },
        ],
    },
}


def params_schema() -> dict[str, Any]:
    """A copy of the JSON Schema fragment for ``params`` (unknown keys rejected), for the suite schema."""
    return copy.deepcopy(_PARAMS_SCHEMA)


def _show(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _pattern_slots(pattern: str) -> list[str] | None:
    """The pattern as one alphabet (a class) or one literal character per position; None if it ends in a lone backslash."""
    slots: list[str] = []
    chars = iter(pattern)
    for char in chars:
        if char == "\\":
            literal = next(chars, None)
            if literal is None:
                return None
            slots.append(literal)
        else:
            slots.append(PATTERN_CLASSES.get(char, char))
    return slots


def _printable(text: str) -> bool:
    return all(not unicodedata.category(c).startswith(("C", "Z")) for c in text)


def _spec_rules(where: str, spec: Mapping[str, Any]) -> list[str]:
    """Rules a schema cannot say, for one param whose shape is already valid."""
    kind = spec["type"]
    if kind == "choice":
        values = spec["values"]
        duplicates = sorted({_show(v) for v in values if values.count(v) > 1})
        problems = [f"{where}.values: expected each choice once, got {d} more than once" for d in duplicates]
        records = [value for value in values if isinstance(value, Mapping)]
        if records and len(records) != len(values):
            problems.append(f"{where}.values: expected all records or no records (a record choice draws every field at once)")
        elif records:
            fields = list(records[0])
            problems += [f"{where}.values[{index}]: expected the fields {', '.join(fields)} (as values[0]), got {', '.join(record)}"
                         for index, record in enumerate(records) if set(record) != set(fields)]
        return problems
    if kind == "integer":
        low, high = spec["min"], spec["max"]
        problems = [
            f"{where}.{key}: expected a safe integer (|n| <= 2**53 - 1), got {spec[key]}"
            for key in ("min", "max")
            if abs(spec[key]) > MAX_SAFE_INTEGER
        ]
        if low > high:
            problems.append(f"{where}: expected min <= max, got min {low} and max {high}")
        return problems
    if kind == "code" and "alphabet" in spec:
        alphabet = spec["alphabet"]
        if len(alphabet) < 2:
            return [f"{where}.alphabet: expected at least 2 characters (one would make every code the same), got {_show(alphabet)}"]
        if not _printable(alphabet):
            return [f"{where}.alphabet: expected visible characters only (no spaces or control characters), got {_show(alphabet)}"]
        duplicates = sorted({c for c in alphabet if alphabet.count(c) > 1})
        return [f"{where}.alphabet: expected each character once, got {d!r} more than once" for d in duplicates]
    if kind == "code":
        pattern = spec["pattern"]
        slots = _pattern_slots(pattern)
        classes = ", ".join(f"{char} ({meaning})" for char, meaning in _PATTERN_MEANINGS.items())
        if slots is None:
            return [f"{where}.pattern: expected a character after the final backslash, got {_show(pattern)}"]
        if not _printable("".join(s for s in slots if len(s) == 1)):
            return [f"{where}.pattern: expected visible characters only (no spaces or control characters), got {_show(pattern)}"]
        if all(len(s) == 1 for s in slots):
            return [f"{where}.pattern: expected at least one of {classes}; got {_show(pattern)}, which is always the same"]
        if len(slots) > MAX_CODE_LENGTH:
            return [f"{where}.pattern: expected at most {MAX_CODE_LENGTH} characters, got {len(slots)} in {_show(pattern)}"]
    return []


def rule_problems(declaration: Mapping[str, Any], where: str = "params") -> list[str]:
    """Problems the JSON Schema cannot find (reserved names, min > max, duplicates, patterns).

    Params whose shape the schema rejects are skipped, so each problem is reported once. Use this
    when the suite schema already embeds params_schema(); otherwise use validate().
    """
    problems: list[str] = []
    if not isinstance(declaration, Mapping):
        return problems
    spec_validator = Draft202012Validator(_PARAMS_SCHEMA["additionalProperties"])
    built_in = ", ".join(f"{{{r}}}" for r in RESERVED)
    owners: dict[str, str] = {}
    for name, spec in declaration.items():
        if name in RESERVED:
            problems.append(f"{where}.{name}: expected a name other than the built-in placeholders {built_in}")
        if isinstance(name, str) and spec_validator.is_valid(spec):
            problems += _spec_rules(f"{where}.{name}", spec)
            if _record_fields(spec):
                plain = [other for other, other_spec in declaration.items()
                         if isinstance(other_spec, Mapping) and not _record_fields(other_spec)]
                problems += placeholder_problems(spec["values"], tuple(plain), where=f"{where}.{name}.values", keep=())
            for field_name in _record_fields(spec):
                if field_name in RESERVED:
                    problems.append(f"{where}.{name}.values: expected field names other than the built-in placeholders {built_in}")
                elif (field_name in declaration and field_name != name) or field_name in owners:
                    other = owners.get(field_name, field_name)
                    problems.append(f"{where}.{name}.values: field {field_name!r} is also drawn by params.{other}; "
                                    "expected each placeholder name drawn once")
                else:
                    owners[field_name] = name
    return problems


def _record_fields(spec: Mapping[str, Any]) -> list[str]:
    """The field names of a record choice (its first record's), else none."""
    values = spec.get("values") if spec.get("type") == "choice" else None
    if isinstance(values, list) and values and isinstance(values[0], Mapping):
        return [str(key) for key in values[0]]
    return []


def shown_values(declaration: Mapping[str, Any] | None, values: Mapping[str, str | int]) -> dict[str, str | int]:
    """Param name -> the value a reader sees: a record choice by its field of the param's own name, else its first field."""
    shown: dict[str, str | int] = {}
    for name, spec in (declaration or {}).items():
        fields = _record_fields(spec) if isinstance(spec, Mapping) else []
        main = name if name in fields or not fields else fields[0]
        if main in values:
            shown[name] = values[main]
    return shown


def value_names(declaration: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The placeholder names a declaration draws: each param's name, or a record choice's field names in its place."""
    names: list[str] = []
    for name, spec in (declaration or {}).items():
        fields = _record_fields(spec) if isinstance(spec, Mapping) else []
        names += fields or [name]
    return tuple(names)


def validate(declaration: Any, where: str = "params") -> list[str]:
    """Check a ``params`` declaration; each problem names the key path, the value and what was expected.

    Args:
        declaration: The value of the suite's ``params`` key.
        where: The key path of the declaration, for the messages.

    Returns:
        The problems; none means the declaration is valid.
    """
    if isinstance(declaration, Mapping):
        odd = [key for key in declaration if not isinstance(key, str)]
        if odd:
            return [f"{where}: expected string param names, got {_show(key)}; quote it" for key in odd]
    schema = {"type": "object", "properties": {where: _PARAMS_SCHEMA}}
    validator = Draft202012Validator(schema)
    errors = sorted(validator.iter_errors({where: declaration}), key=lambda e: [str(p) for p in e.absolute_path])
    problems: list[str] = []
    for error in errors:
        problems += schema_problems(error)
    return problems + rule_problems(declaration, where)


def parse_seed(text: str) -> int:
    """Read ``--agentbench-seed``: a non-negative decimal integer.

    Raises:
        ValueError: With a sentence naming the value and what was expected.
    """
    stripped = text.strip()
    if not stripped.isascii() or not stripped.isdigit():
        raise ValueError(f"expected a non-negative whole number as the seed (such as 0 or 20260101), got {text!r}")
    return int(stripped)


def draw_seed() -> int:
    """A fresh session seed from the operating system's secure source: SEED_BITS random bits, never guessable."""
    return secrets.randbits(SEED_BITS)


def _check_instance(seed: int, suite: str, repeat: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: expected a non-negative integer, got {seed!r}")
    if not isinstance(suite, str) or not suite:
        raise ValueError(f"suite: expected a non-empty suite name, got {suite!r}")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat: expected a repeat index >= 1 (r1 is the first), got {repeat!r}")


class _Stream:
    """Deterministic 64-bit draws: SHA-256 in counter mode over one key."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._blocks = self._generate()

    def _generate(self) -> Iterator[int]:
        counter = 0
        while True:
            block = hashlib.sha256(self._key + counter.to_bytes(8, "big")).digest()
            for offset in range(0, 32, 8):
                yield int.from_bytes(block[offset : offset + 8], "big")
            counter += 1

    def below(self, bound: int) -> int:
        """A uniform integer in [0, bound): rejection sampling, so no value is favoured by a modulo."""
        limit = 2**64 - (2**64 % bound)
        while True:
            draw = next(self._blocks)
            if draw < limit:
                return draw % bound


def _stream(seed: int, suite: str, repeat: int, name: str, attempt: int = 0) -> _Stream:
    # NUL separators: no suite or param name contains one, so ("a", "bc") and ("ab", "c") differ.
    parts = (_STREAM_PREFIX, str(seed), suite, str(repeat), name, *((str(attempt),) if attempt else ()))
    return _Stream("\0".join(parts).encode("utf-8"))


def _spec_size(spec: Mapping[str, Any]) -> int:
    kind = spec["type"]
    if kind == "choice":
        return len(spec["values"])
    if kind == "integer":
        return spec["max"] - spec["min"] + 1
    if kind == "word":
        return len(WORDS)
    if "pattern" in spec:
        return math.prod(len(slot) for slot in _pattern_slots(spec["pattern"]) or [])
    return len(spec["alphabet"]) ** spec["length"]


def instance_space(declaration: Mapping[str, Any] | None) -> int:
    """How many distinct instances a valid declaration can draw: the product of its params' sizes (1 without params).

    Choices, alphabets and WORDS hold each value once (the rules check it), so every combination
    of draws is a different instance.
    """
    return math.prod(_spec_size(spec) for spec in (declaration or {}).values())


def _canonical(draw: Any) -> str:
    return json.dumps(draw, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass
class _Series:
    """One (declaration, seed, suite)'s draws so far, r1 first, and which of them the current cycle holds."""

    space: int
    draws: list[tuple[Any, ...]] = field(default_factory=list)
    cycle: set[str] = field(default_factory=set)


# Draws are computed once per (declaration, seed, suite) and extended as later repeats are asked
# for, so N repeats cost N draws, not N**2. Bounded: a process that instantiates many suites
# (the project's own tests) starts over rather than grow.
_SERIES: dict[tuple[str, int, str], _Series] = {}
_SERIES_LIMIT = 512


def _draws(declaration: Mapping[str, Any], seed: int, suite: str, repeat: int) -> tuple[Any, ...]:
    """The raw draws (one per param, a record choice's record whole) of instance r`repeat`.

    Without replacement: within each cycle of `instance_space` repeats (r1..rS, then rS+1..r2S,
    ...) no two repeats draw the same combination; a repeat that would is redrawn from the next
    attempt's streams. r3 depends on r1 and r2 only, never on how many repeats a session runs.
    """
    # Declaration order matters (a draw lists the params in it), so the key keeps it.
    key = (json.dumps(declaration, ensure_ascii=False, default=str), seed, suite)
    series = _SERIES.get(key)
    if series is None:
        if len(_SERIES) >= _SERIES_LIMIT:
            _SERIES.clear()
        series = _SERIES[key] = _Series(instance_space(declaration))
    while len(series.draws) < repeat:
        index = len(series.draws) + 1
        if (index - 1) % series.space == 0:
            series.cycle = set()
        attempt = 0
        while True:
            draw = tuple(_generate(spec, _stream(seed, suite, index, name, attempt)) for name, spec in declaration.items())
            canonical = _canonical(draw)
            # The cycle holds fewer than `space` combinations, so a free one exists and is found.
            if canonical not in series.cycle:
                break
            attempt += 1
        series.cycle.add(canonical)
        series.draws.append(draw)
    return series.draws[repeat - 1]


def _generate(spec: Mapping[str, Any], stream: _Stream) -> str | int:
    kind = spec["type"]
    if kind == "choice":
        return spec["values"][stream.below(len(spec["values"]))]
    if kind == "integer":
        return spec["min"] + stream.below(spec["max"] - spec["min"] + 1)
    if kind == "word":
        word = WORDS[stream.below(len(WORDS))]
        case = spec.get("case", "lower")
        return word.upper() if case == "upper" else word.title() if case == "title" else word
    if "pattern" in spec:
        slots = _pattern_slots(spec["pattern"]) or []
        return "".join(slot if len(slot) == 1 else slot[stream.below(len(slot))] for slot in slots)
    alphabet = spec["alphabet"]
    return "".join(alphabet[stream.below(len(alphabet))] for _ in range(spec["length"]))


def instance_values(declaration: Mapping[str, Any] | None, *, seed: int, suite: str, repeat: int) -> dict[str, str | int]:
    """The values of one seeded instance, in declaration order.

    Each param draws from its own stream (seed, suite, repeat, param name), so adding or removing
    a param leaves the others' values unchanged (unless a repeat had to be redrawn: see `_draws`).
    Repeats are distinct instances until the declaration's space is used up (`instance_space`).

    Args:
        declaration: The suite's ``params`` mapping (``None`` or empty: no values).
        seed: The session seed (`--agentbench-seed`, else drawn for the session by `draw_seed`).
        suite: The suite name.
        repeat: The repeat index, 1 for ``r1``.

    Returns:
        Placeholder name -> value (``integer`` params give ints, all others strings or the chosen item;
        a record choice gives one value per field, named by the field).

    Raises:
        ValueError: For a bad seed, suite or repeat, or an invalid declaration (the problems listed).
    """
    _check_instance(seed, suite, repeat)
    if not declaration:
        return {}
    problems = validate(declaration)
    if problems:
        raise ValueError("params: invalid declaration: " + "; ".join(problems))
    drawn: dict[str, str | int] = {}
    records: dict[str, str | int] = {}
    for name, value in zip(declaration, _draws(declaration, seed, suite, repeat)):
        # A record choice draws its fields together (a city and its id): each field is a value.
        (records if isinstance(value, Mapping) else drawn).update(value if isinstance(value, Mapping) else {name: value})
    # A record's field may name another param (`first: "{pinNumber}"`: which drawn number comes
    # first), so a record can order or pair values drawn elsewhere.
    filled = {key: fill(value, drawn).value for key, value in records.items()}
    return {name: filled.get(name, drawn.get(name)) for name in value_names(declaration)}  # type: ignore[misc]


def instance_id(repeat: int, values: Mapping[str, Any]) -> str:
    """A short, stable id for node ids and result.json: ``r3``, ``r3-42-Alice`` or ``r3-1f2e3d4c``.

    The values are listed (sorted by param name) when each is plain (letters, digits, ``.``, ``_``)
    and together they stay within 24 characters; otherwise the first 8 hex digits of the SHA-256
    of their canonical JSON stand for them.
    """
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat: expected a repeat index >= 1, got {repeat!r}")
    if not values:
        return f"r{repeat}"
    shown = [str(values[name]) for name in sorted(values)]
    readable = "-".join(shown)
    if len(readable) <= _READABLE_ID_LENGTH and all(_READABLE_VALUE_RE.match(v) for v in shown):
        return f"r{repeat}-{readable}"
    canonical = json.dumps(dict(values), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return f"r{repeat}-{hashlib.sha256(canonical.encode('utf-8')).hexdigest()[:8]}"


class Filled(NamedTuple):
    """fill()'s result: the filled copy and the placeholder names that were neither values nor kept."""

    value: Any
    unknown: tuple[str, ...]


def fill(value: Any, values: Mapping[str, Any], *, keep: tuple[str, ...] = RESERVED) -> Filled:
    """Fill ``{name}`` placeholders in every string inside nested dicts, lists and tuples.

    Only ``{identifier}`` is a placeholder, so other braces (JSON in a prompt, ``{}``, ``{ x }``)
    stay as written. A string stays a string: ``"{n}"`` with n = 42 becomes ``"42"``. Mapping keys
    are structure and are not filled. Names in ``keep`` (the run-time placeholders by default) are
    left for the run to fill; any other unknown name is left in place and reported.

    Args:
        value: A string, or a nested structure of dicts, lists, tuples and scalars.
        values: Param name -> value, as instance_values returns.
        keep: Placeholder names to leave alone without reporting them.

    Returns:
        Filled(value=the filled copy, unknown=sorted unknown placeholder names).
    """
    unknown: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in values:
            return str(values[name])
        if name not in keep:
            unknown.add(name)
        return match.group(0)

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return PLACEHOLDER_RE.sub(replace, node)
        if isinstance(node, Mapping):
            return {key: walk(child) for key, child in node.items()}
        if isinstance(node, list):
            return [walk(child) for child in node]
        if isinstance(node, tuple):
            return tuple(walk(child) for child in node)
        return node

    return Filled(walk(value), tuple(sorted(unknown)))


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, child in value.items():
            yield from _strings(child, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for index, child in enumerate(value):
            yield from _strings(child, f"{path}[{index}]")


def placeholder_problems(value: Any, names: Mapping[str, Any] | tuple[str, ...], *, where: str, keep: tuple[str, ...] = RESERVED) -> list[str]:
    """One sentence per unknown ``{placeholder}`` in a nested value, naming its key path.

    Args:
        value: The text or structure to check (a prompt, ``verify``, ``preflight``, device checks).
        names: The declared param names (or the declaration itself).
        where: The key path of ``value`` (``prompt``, ``verify.screenIncludes``).
        keep: Built-in placeholders that are allowed too.

    Returns:
        Sentences like ``verify.screenIncludes[0]: unknown placeholder {contct} (did you mean
        {contact}?); expected a declared param (contact, amount) or {deviceSerial}, ...``.
    """
    declared = list(value_names(names)) if isinstance(names, Mapping) else list(names)
    allowed = [*declared, *keep]
    choices = ", ".join(declared) if declared else "none declared"
    built_in = ", ".join(f"{{{k}}}" for k in keep)
    problems: list[str] = []
    for path, text in _strings(value, where):
        for name in sorted({m.group(1) for m in PLACEHOLDER_RE.finditer(text)} - set(allowed)):
            hint = difflib.get_close_matches(name, allowed, n=1)
            guess = f" (did you mean {{{hint[0]}}}?)" if hint else ""
            also = f" or {built_in}" if built_in else ""
            problems.append(f"{path}: unknown placeholder {{{name}}}{guess}; expected a declared param ({choices}){also}")
    return problems


@dataclass(frozen=True)
class Instance:
    """Which seeded instance a run is: repeat index (1 for r1), session seed, values, and the id.

    ``id`` is ``params.instance_id(repeat, values)``: ``r3`` for a suite without params,
    ``r3-42-Bob`` or ``r3-1f2e3d4c`` with them. It goes into the node id and result.json.
    """

    repeat: int
    seed: int
    id: str
    values: Mapping[str, str | int] = field(default_factory=dict)
    #: What a reader needs to tell instances apart: param name -> value, a record choice shown by
    #: its main field (`city=Tokyo`, not its id and time zone); empty means `values`.
    shown: Mapping[str, str | int] = field(default_factory=dict)

    @property
    def values_text(self) -> str:
        """The drawn values as `city=Tokyo,snooze=20` (declaration order); empty without params."""
        return values_text(self.shown or self.values)

    def to_json(self) -> dict[str, Any]:
        """The `instance` block of result.json; `label` is the values as `city=Tokyo,snooze=20` (see suite.instance.instance_label)."""
        return {
            "id": self.id,
            "repeat": self.repeat,
            "seed": self.seed,
            "derivation": DERIVATION,
            "values": dict(self.values),
            "label": self.values_text,
        }


def values_text(values: Mapping[str, Any]) -> str:
    """Param values as a reader sees them: `city=Tokyo,snooze=20`, in the given order, nothing elided."""
    return ",".join(f"{name}={value}" for name, value in values.items())
