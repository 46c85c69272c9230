"""Bodies are described by JSON Schema (draft 2020-12) documents in this folder.

This package imports only the error family and the body's bounds on a number
(``web/body.py``).

Request bodies are validated by them; response bodies are described by them for the
OpenAPI document (``openapi/``), which refers from one to another by file name
(``{"$ref": "article.json"}``). One file holds no schema: ``samples.json``, a
sample body for each response schema, by its name, that the document shows.

Each document is compiled once per process and configuration (``load``), however
many apps are built: checking a schema against the meta-schema costs milliseconds,
and a schema never changes while the process runs. ``validate`` asks a compiled
validator whether the body is valid (jsonschema-rs: most bodies are, and it says so
in about 7,000 instructions where jsonschema takes 460,000); only a body it refuses
goes to jsonschema, the authority, which reports every failing field at once, each
as ``{"field": <JSON pointer>, "message": <text>}``, so a client can fix its request
in one round trip. A missing required member gets the pointer it would have had.
The two run the same schema and our keywords run the same functions in both; the
property tests (``tests/schemas/test_agreement.py``) check that the compiled one never
accepts what jsonschema refuses (a whole number past a float's precision it may
leave to jsonschema, which then accepts it).

Validation costs what the schema allows, not what the client sends: every string,
array and object in a schema has a bound (``maxLength``, ``maxItems``,
``maxProperties``; ``load`` refuses a schema without them), and a value over its
bound is one error and is not looked into: no other keyword sees it, so 262,000
duplicate tags are never compared (``uniqueItems`` is quadratic). The list of errors
stops at 50, saying ``"truncated": true``.

Three keywords are ours: ``maxDecimalPlaces``; ``x-no-invisible``, which refuses
every format character and default-ignorable code point (``invisible.py``), so
that no email address looks exactly like another; and ``x-not-common-password``,
which refuses the 10,000 most common passwords whatever their case (NIST SP 800-63B
section 5.1.1.2). The list, ``common-passwords.txt``, is SecLists'
``10k-most-common.txt`` (Mark Burnett's), lower-cased, with only the entries of 8
characters or more: ``minLength`` refuses the others already.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError as SchemaError

from ..errors import ValidationError, quoted
from ..web.body import MAX_NUMBER_CHARS, OverlongNumber
from .invisible import first_invisible
from .numbers import Convert, is_integer, whole_numbers

_FOLDER = Path(__file__).parent

TYPE_NAMES = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}

# The bound a schema gives every string, array and object; by the decoded type too.
BOUNDS = {"string": "maxLength", "array": "maxItems", "object": "maxProperties"}
_BOUND_OF: dict[type, str] = {
    str: BOUNDS["string"],
    list: BOUNDS["array"],
    dict: BOUNDS["object"],
}


def _max_decimal_places(
    validator: Any, places: int, instance: Any, schema: dict[str, Any]
) -> Iterator[SchemaError]:
    """``maxDecimalPlaces``: a number written with at most that many decimals."""
    if isinstance(instance, Decimal):
        if not instance.is_finite():
            yield SchemaError("must be a finite number")
            return
        _, digits, exponent = instance.as_tuple()
        if not isinstance(exponent, int):  # a finite number's always is
            raise TypeError(f"{instance!r} has no integer exponent")
        trailing_zeros = len(digits) - len("".join(map(str, digits)).rstrip("0"))
        if -(exponent + trailing_zeros) > places:
            yield SchemaError(f"must have at most {places} decimal places")


@functools.cache
def common_passwords() -> frozenset[str]:
    """The most common passwords of 8 characters or more, lower-cased."""
    return frozenset((_FOLDER / "common-passwords.txt").read_text().split())


def _not_common_password(
    validator: Any, wanted: bool, instance: Any, schema: dict[str, Any]
) -> Iterator[SchemaError]:
    """``x-not-common-password``: not on the list, compared without regard to case."""
    if wanted and isinstance(instance, str):
        if instance.casefold() in common_passwords():
            yield SchemaError("is one of the 10,000 most common passwords")


def _no_invisible(
    validator: Any, wanted: bool, instance: Any, schema: dict[str, Any]
) -> Iterator[SchemaError]:
    """``x-no-invisible``: no character of ``invisible.RANGES``, named if found."""
    if wanted and isinstance(instance, str):
        found = first_invisible(instance)
        if found is not None:
            code = f"U+{ord(found):04X}"
            yield SchemaError(f"must not contain an invisible character ({code})")


def _type(
    validator: Any, kinds: str | list[str], instance: Any, schema: dict[str, Any]
) -> Iterator[SchemaError]:
    """``type``, without jsonschema's message: a repr of the whole instance."""
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not any(validator.is_type(instance, kind) for kind in kinds):
        yield SchemaError("is of another type")  # _describe words it


Keyword = Callable[[Any, Any, Any, dict[str, Any]], Iterator[SchemaError] | None]


def _bounded(keyword: str, check: Keyword) -> Keyword:
    """``check``, unless the instance is over its bound: then that bound's one error."""

    def run(
        validator: Any, value: Any, instance: Any, schema: dict[str, Any]
    ) -> Iterator[SchemaError]:
        bound = _BOUND_OF.get(type(instance))
        if bound in schema and len(instance) > schema[bound]:
            if keyword == bound:
                # Not jsonschema's own error: its message is a repr of the value.
                yield SchemaError(f"is over its {bound}")  # _describe words it
            return
        yield from check(validator, value, instance, schema) or ()

    return run


# Draft 2020-12 with a quieter ``type``, plus ``maxDecimalPlaces`` (numbers arrive as
# Decimal, so it is exact); every keyword behind the bound check.
_KEYWORDS = {
    **Draft202012Validator.VALIDATORS,
    "type": _type,
    "maxDecimalPlaces": _max_decimal_places,
    "x-not-common-password": _not_common_password,
    "x-no-invisible": _no_invisible,
}
# A whole-valued number is an integer (9555.0), as the draft says; jsonschema's own
# check knows int and float, but a fraction or exponent arrives here as a Decimal.
_TYPES = Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda checker, instance: is_integer(instance)
)
Validator = validators.extend(
    Draft202012Validator,
    {name: _bounded(name, check) for name, check in _KEYWORDS.items()},
    type_checker=_TYPES,
)


def _compiled_keyword(name: str, check: Keyword) -> type:
    """Our keyword ``name`` for jsonschema-rs, which calls a class per schema that
    uses it: it runs ``check``, the very function jsonschema runs, and refuses the
    instance where that finds an error."""

    def __init__(self: Any, schema: dict[str, Any], value: Any, path: Any) -> None:
        self.schema, self.value = schema, value

    def validate(self: Any, instance: Any) -> None:
        for _ in check(None, self.value, instance, self.schema) or ():
            raise ValueError(f"{name}: refused")

    return type(name, (), {"__init__": __init__, "validate": validate})


_COMPILED_KEYWORDS = {
    "maxDecimalPlaces": _compiled_keyword("maxDecimalPlaces", _max_decimal_places),
    "x-not-common-password": _compiled_keyword(
        "x-not-common-password", _not_common_password
    ),
    "x-no-invisible": _compiled_keyword("x-no-invisible", _no_invisible),
}


def _fill_from_config(node: Any, options: Mapping[str, Any]) -> None:
    """Set ``enum`` wherever a schema says ``"x-enum-from-config": <option>``, and
    ``maxItems`` where it says ``"x-max-items-from-config": <option>`` (a page's
    data: at most the largest ``limit``)."""
    if isinstance(node, dict):
        if "x-enum-from-config" in node:
            node["enum"] = list(options[node["x-enum-from-config"]])
        if "x-max-items-from-config" in node:
            node["maxItems"] = options[node["x-max-items-from-config"]]
        for child in node.values():
            _fill_from_config(child, options)


@dataclass(frozen=True)
class Schema:
    validator: Draft202012Validator  # the authority, and the one that names errors
    compiled: jsonschema_rs.Validator  # asked first: is the body valid?
    # A valid body's whole numbers as ints where an integer is wanted (None: none is).
    whole_numbers: Convert | None = None

    def compiled_valid(self, body: Any) -> bool:
        """Whether jsonschema-rs finds ``body`` valid; False for a value it cannot
        read (a number token left unread, ``OverlongNumber``), left to jsonschema."""
        try:
            return self.compiled.is_valid(body)
        except (ValueError, TypeError):
            return False


def _require_bounds(schema: dict[str, Any], where: str = "") -> None:
    """Refuse a schema in which a value could be of any type, or of unbounded size."""
    kinds = schema.get("type")
    if kinds is None:
        raise ValueError(f"{where or 'the root'} needs a type")
    for kind in [kinds] if isinstance(kinds, str) else kinds:
        if kind in BOUNDS and BOUNDS[kind] not in schema:
            raise ValueError(f"{where or 'the root'} needs {BOUNDS[kind]}")
        # 1e300 is a whole number: bounds keep its int small (numbers.whole_numbers).
        if kind == "integer" and not {"minimum", "maximum"} <= set(schema):
            raise ValueError(f"{where or 'the root'} needs minimum and maximum")
    for name, sub in schema.get("properties", {}).items():
        _require_bounds(sub, f"{where}/properties/{name}")
    for keyword in ("items", "additionalProperties"):
        if isinstance(schema.get(keyword), dict):
            _require_bounds(schema[keyword], f"{where}/{keyword}")


def from_document(document: dict[str, Any]) -> Schema:
    """Compile a schema document, once its bounds are checked."""
    Validator.check_schema(document)
    _require_bounds(document)
    compiled = jsonschema_rs.Draft202012Validator(
        document, keywords=_COMPILED_KEYWORDS, validate_formats=False
    )
    return Schema(Validator(document), compiled, whole_numbers(document))


def document(name: str) -> dict[str, Any]:
    """The JSON document ``schemas/<name>.json``, freshly read."""
    loaded: dict[str, Any] = json.loads((_FOLDER / f"{name}.json").read_text())
    return loaded


@functools.cache
def _samples() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((_FOLDER / "samples.json").read_text())
    return loaded


def sample(name: str) -> Any:
    """The sample response body ``name`` of ``samples.json``."""
    return _samples()[name]


def configured(name: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``schemas/<name>.json`` with configured enums filled in."""
    schema = document(name)
    _fill_from_config(schema, options or {})
    return schema


def load(name: str, options: Mapping[str, Any] | None = None) -> Schema:
    """Compile ``schemas/<name>.json``, with configured enums filled in."""
    return _compiled(json.dumps(configured(name, options)))


@functools.lru_cache(maxsize=1024)  # a few schemas, each in a few configurations
def _compiled(text: str) -> Schema:
    # Keyed by the document's text (its members in the file's order):
    # configurations that fill in the same enums share one; a
    # Schema holds nothing of a request, so apps can share it.
    return from_document(json.loads(text))


def fields(name: str) -> tuple[tuple[str, str, bool], ...]:
    """``(name, type, required)`` of each top-level member of a body schema, the type
    as JSON Schema names it, an array's with ``[]`` after its items' (``string[]``)."""
    schema = document(name)
    required = set(schema.get("required", ()))

    def type_of(sub: dict[str, Any]) -> str:
        kinds = sub["type"] if isinstance(sub["type"], list) else [sub["type"]]
        kind = next(k for k in kinds if k != "null")
        return type_of(sub["items"]) + "[]" if kind == "array" else kind

    return tuple(
        (member, type_of(sub), member in required)
        for member, sub in schema.get("properties", {}).items()
    )


def pointer(path: Any) -> str:
    """A JSON pointer (RFC 6901) for a path of keys and indexes, each as an error
    quotes what a client sent (``errors.quoted``: a member name may be huge)."""
    return "".join("/" + _escaped(quoted(str(part))) for part in path)


def _escaped(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


# What an error of one field says, by keyword, with the keyword's value in it:
# worded here, where jsonschema's own message would quote the value sent.
_MESSAGES = {
    "minLength": "must be at least {} characters long",
    "maxLength": "must be at most {} characters long",
    "minItems": "must have at least {} items",
    "maxItems": "must have at most {} items",
    "maxProperties": "must have at most {} members",
    "uniqueItems": "must not contain duplicates",
    "minimum": "must be at least {}",
    "maximum": "must be at most {}",
    "exclusiveMinimum": "must be greater than {}",
    "exclusiveMaximum": "must be less than {}",
}


def _describe(error: SchemaError) -> list[tuple[str, str]]:
    """The (field, message) pairs one jsonschema error stands for."""
    # jsonschema types these as "maybe unset"; an error from iter_errors has them all.
    where = list(error.absolute_path)
    value: Any = error.validator_value
    instance: Any = error.instance
    schema: Any = error.schema
    match error.validator:
        case "required":
            return [
                (pointer([*where, name]), "is required")
                for name in value
                if isinstance(instance, dict) and name not in instance
            ]
        case "additionalProperties":
            known = schema.get("properties", {})
            return [
                (pointer([*where, name]), "is not allowed")
                for name in instance
                if name not in known
            ]
    return [(pointer(where), _message(error))]


def _message(error: SchemaError) -> str:
    """What an error about one field says of it."""
    keyword: Any = error.validator
    value: Any = error.validator_value
    schema: Any = error.schema
    if keyword == "type":
        return _type_message(value, error.instance)
    if keyword == "minLength" and value == 1:
        return "must not be empty"
    if keyword in _MESSAGES:
        return _MESSAGES[keyword].format(value)
    if keyword == "enum":
        return "must be one of " + ", ".join(map(str, value))
    if keyword == "pattern":
        return schema.get("description") or f"must match {value}"
    if keyword in ("maxDecimalPlaces", "x-not-common-password", "x-no-invisible"):
        return error.message
    return error.message[:200]


def _type_message(kinds: str | list[str], instance: Any) -> str:
    """What a value of another type than ``kinds`` is told."""
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if isinstance(instance, OverlongNumber) and "number" in kinds:
        return f"must be a number of at most {MAX_NUMBER_CHARS} characters"
    return "must be " + " or ".join(TYPE_NAMES[k] for k in kinds)


def validate(body: Any, schema: Schema) -> Any:
    """``body``, its whole numbers as ints where the schema wants integers; or raise
    ``VALIDATION_ERROR`` listing every failing field."""
    if not schema.compiled_valid(body):
        _refuse_if_invalid(body, schema)
    return body if schema.whole_numbers is None else schema.whole_numbers(body)


def _refuse_if_invalid(body: Any, schema: Schema) -> None:
    found: dict[tuple[str, str], None] = {}
    for error in schema.validator.iter_errors(body):
        for field, message in _describe(error):
            found[(field, message)] = None
        if len(found) > ValidationError.MAX_ERRORS:
            break  # the list is cut there anyway
    if found:
        raise ValidationError([{"field": f, "message": m} for f, m in sorted(found)])
