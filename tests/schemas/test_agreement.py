"""jsonschema-rs and jsonschema agree on every request schema in schemas/.

Bodies are generated as JSON text from each schema, near its bounds and past them,
with number tokens an integer member may meet (``1.0``, ``1e300``, ``-0.0``,
``2.5``, ``1E+999999999999999999``), and read by the service's own decoder (a
fraction or exponent becomes a Decimal) and by ``json.loads`` (a float). The
compiled validator never accepts what jsonschema refuses, and where every number is
an integer a float holds exactly, it accepts exactly what jsonschema accepts (past
that it may leave a valid body to jsonschema: ``9223372036854775807.0``); ``validate``
returns what jsonschema accepts, each whole number an int where an integer is
wanted, and refuses the rest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refapi import schemas
from refapi.config import Config
from refapi.errors import ValidationError
from refapi.schemas.numbers import is_integer
from refapi.web.body import parse_json

FOLDER = Path(schemas.__file__).resolve().parent


def loadable(name: str) -> bool:
    try:
        schemas.load(name, vars(Config()))
    except ValueError:  # a response schema: not bounded for validation
        return False
    return True


NAMES = sorted(
    path.stem
    for path in FOLDER.glob("*.json")
    if path.stem != "samples" and loadable(path.stem)
)
NUMBERS = st.sampled_from(
    ["0", "1", "-1", "1.0", "1.000", "-0.0", "0.0", "2.5", "1e300", "-1e300",
     "1E+999999999999999999", "9555.0", "1e0", "10E-1", "0.1e1", "0.01", "0.001",
     "9223372036854775807", "9223372036854775808", "9223372036854775807.0",
     "1000000", "1000000.00", "1000000.01", "1.0000000000000000000000000001"]
) | st.integers(-(10**20), 10**20).map(str) | st.floats(
    allow_nan=False, allow_infinity=False
).map(repr)  # fmt: skip
SCALARS = st.one_of(
    NUMBERS, st.sampled_from(["true", "false", "null", '""', '"x"', "[]", "{}"])
)
LETTERS = st.text(alphabet="ab@.XYZ 🦄\x00", max_size=8)


def texts(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    """JSON texts of values near what ``schema`` accepts, and of other types."""
    kinds = schema.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    return st.one_of([_texts(kind, schema) for kind in kinds] + [SCALARS])


def _texts(kind: str, schema: dict[str, Any]) -> st.SearchStrategy[str]:
    if kind in ("integer", "number"):
        return NUMBERS
    if kind in ("boolean", "null"):
        return st.sampled_from(["true", "false"] if kind == "boolean" else ["null"])
    if kind == "string":
        longest, shortest = schema.get("maxLength", 10), schema.get("minLength", 0)
        strings = st.one_of(
            st.sampled_from([*schema.get("enum", []), "ada@example.com", "a@b"]),
            st.sampled_from(["x" * longest, "x" * (longest + 1), "x" * shortest]),
            LETTERS,
            st.text(min_size=max(0, longest - 1), max_size=longest + 1),
        )
        return strings.map(json.dumps)
    if kind == "array":
        items = st.lists(
            texts(schema.get("items", {})), max_size=schema["maxItems"] + 2
        )
        return (items | items.map(lambda xs: xs + xs[:1])).map(
            lambda xs: "[" + ",".join(xs) + "]"
        )
    members = {name: texts(sub) for name, sub in schema.get("properties", {}).items()}
    required = {name: members[name] for name in schema.get("required", ())}
    optional = {name: text for name, text in members.items() if name not in required}
    # Most often every required member and no unknown one, so that bodies are
    # often valid; else any members, unknown ones among them.
    shaped = st.fixed_dictionaries(required, optional=optional).map(_object)
    unknown = st.dictionaries(st.sampled_from(["zz", "audience"]), SCALARS, max_size=2)
    chosen = st.fixed_dictionaries({}, optional=members)
    loose = st.tuples(chosen, unknown).map(lambda pair: _object({**pair[1], **pair[0]}))
    return shaped | shaped | loose


def _object(members: dict[str, str]) -> str:
    return "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in members.items()) + "}"


def integers_are_ints(schema: dict[str, Any], sent: Any, given_back: Any) -> bool:
    """Each value ``schema`` types integer alone came back as an int of its value."""
    kinds = schema.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if "integer" in kinds and "number" not in kinds and is_integer(sent):
        return type(given_back) is int and given_back == sent
    if isinstance(sent, dict):
        listed = schema.get("properties", {})
        return all(
            integers_are_ints(listed[name], value, given_back[name])
            for name, value in sent.items()
            if name in listed
        )
    return given_back == sent


def plain(value: Any) -> bool:
    """Whether every number in ``value`` is an integer a float holds exactly."""
    if isinstance(value, dict):
        return all(plain(v) for v in value.values())
    if isinstance(value, list):
        return all(plain(v) for v in value)
    if isinstance(value, bool | str) or value is None:
        return True
    return isinstance(value, int) and abs(value) <= 2**53


def test_a_whole_number_past_a_floats_precision_is_left_to_jsonschema():
    schema = schemas.load("api-key-create", vars(Config()))
    body = parse_json(b'{"name": "ci", "userId": 9223372036854775807.0}', 32)
    assert not schema.compiled_valid(body)  # conservative: it cannot tell exactly
    assert schemas.validate(body, schema)["userId"] == 2**63 - 1


# The same inputs every run (the suite's Hypothesis profile, tests/conftest.py);
# ten times these budgets with new inputs (1,500 to 3,000 examples a test, some
# 150 s of CPU for the three files) found nothing in November 2026, and at these
# each test takes a second or three.
@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_the_compiled_validator_agrees_with_jsonschema(name, data):
    document = schemas.configured(name, vars(Config()))
    schema = schemas.load(name, vars(Config()))
    text = data.draw(texts(document))
    for body in (parse_json(text.encode(), 32), json.loads(text)):
        valid = not any(True for _ in schema.validator.iter_errors(body))
        compiled = schema.compiled_valid(body)
        assert valid or not compiled, text  # never accepts what jsonschema refuses
        if plain(body):
            assert compiled == valid, text
        if valid:
            assert integers_are_ints(document, body, schemas.validate(body, schema))
        else:
            with pytest.raises(ValidationError):
                schemas.validate(body, schema)


@pytest.mark.parametrize("name", NAMES)
def test_each_request_body_has_an_example_it_takes(name):
    # /docs' "Try it out" fills a body in with it; without one, Swagger UI made up
    # text to match each pattern, and a click stored it.
    [example] = schemas.document(name)["examples"]
    options = vars(Config())  # the configured enums: the payment's currencies
    assert schemas.validate(example, schemas.load(name, options)) == example


def test_the_schemas_compared_are_the_request_bodies():
    assert {"api-key-create", "article-create", "login", "note"} <= set(NAMES)
    assert "article" not in NAMES  # a response: described, never validated
