"""The authority: jsonschema, which names every failing field of a body refused.

``validate`` (``schemas/__init__.py``) asks the compiled validator first and
imports this module only when that refuses a body, so a worker whose bodies are
valid never loads jsonschema (about 4 MiB with attrs, referencing and rpds). It
runs the same documents with draft 2020-12's keywords, a quieter ``type``, our
keywords (the very functions the compiled validator runs, ``OUR_KEYWORDS``) and
every keyword behind the bound check: a value over its bound is one error and is
not looked into.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError as SchemaError

from ..errors import ValidationError, quoted
from ..web.body import MAX_NUMBER_CHARS, OverlongNumber
from .keywords import BOUNDS, OUR_KEYWORDS, Check
from .numbers import is_integer

TYPE_NAMES = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}

# Each bound by the decoded type it bounds.
_BOUND_OF: dict[type, str] = {
    str: BOUNDS["string"],
    list: BOUNDS["array"],
    dict: BOUNDS["object"],
}

Keyword = Callable[[Any, Any, Any, dict[str, Any]], Iterator[SchemaError] | None]


def _ours(check: Check) -> Keyword:
    """One of our keywords as jsonschema calls a keyword: its fault as an error."""

    def run(
        validator: Any, value: Any, instance: Any, schema: dict[str, Any]
    ) -> Iterator[SchemaError]:
        message = check(value, instance)
        if message is not None:
            yield SchemaError(message)

    return run


def _type(
    validator: Any, kinds: str | list[str], instance: Any, schema: dict[str, Any]
) -> Iterator[SchemaError]:
    """``type``, without jsonschema's message: a repr of the whole instance."""
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not any(validator.is_type(instance, kind) for kind in kinds):
        yield SchemaError("is of another type")  # _describe words it


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


# Draft 2020-12 with a quieter ``type``, plus our keywords (numbers arrive as
# Decimal, so ``maxDecimalPlaces`` is exact); every keyword behind the bound check.
_KEYWORDS: dict[str, Keyword] = {
    **Draft202012Validator.VALIDATORS,
    "type": _type,
    **{name: _ours(check) for name, check in OUR_KEYWORDS.items()},
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
    if keyword in OUR_KEYWORDS:
        return error.message
    return error.message[:200]


def _type_message(kinds: str | list[str], instance: Any) -> str:
    """What a value of another type than ``kinds`` is told."""
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if isinstance(instance, OverlongNumber) and "number" in kinds:
        return f"must be a number of at most {MAX_NUMBER_CHARS} characters"
    return "must be " + " or ".join(TYPE_NAMES[k] for k in kinds)


def refuse_if_invalid(body: Any, validator: Draft202012Validator) -> None:
    """Raise ``VALIDATION_ERROR`` listing every field of ``body`` that ``validator``
    finds failing, at most ``ValidationError.MAX_ERRORS``; nothing if none is."""
    found: dict[tuple[str, str], None] = {}
    for error in validator.iter_errors(body):
        for field, message in _describe(error):
            found[(field, message)] = None
        if len(found) > ValidationError.MAX_ERRORS:
            break  # the list is cut there anyway
    if found:
        raise ValidationError([{"field": f, "message": m} for f, m in sorted(found)])
