"""Bodies are described by JSON Schema (draft 2020-12) documents in this folder.

This package imports nothing of refapi's outside it; its ``authority`` imports
jsonschema, the error family and the body's bounds on a number (``web/body.py``).

Request bodies are validated by them; response bodies are described by them for the
OpenAPI document (``openapi/``), which refers from one to another by file name
(``{"$ref": "article.json"}``). One file holds no schema: ``samples.json``, a
sample body for each response schema, by its name, that the document shows.

Each document is compiled once per process and configuration (``load``), however
many apps are built: checking a schema against the meta-schema costs milliseconds,
and a schema never changes while the process runs. ``validate`` asks a compiled
validator whether the body is valid (jsonschema-rs: most bodies are, and it says so
in about 7,000 instructions where jsonschema takes 460,000); only a body it refuses
goes to jsonschema, the authority (``authority.py``), which reports every failing
field at once, each as ``{"field": <JSON pointer>, "message": <text>}``, so a client
can fix its request in one round trip. A missing required member gets the pointer it
would have had. The authority is imported with the first body refused, not at start:
with what it needs (attrs, referencing, rpds) it is about 4 MiB that a worker sent
only valid bodies never uses (docs/benchmarks.md, "A worker's memory").
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

Three keywords are ours (``keywords.py``): ``maxDecimalPlaces``; ``x-no-invisible``,
which refuses every format character and default-ignorable code point
(``invisible.py``), so that no email address looks exactly like another; and
``x-not-common-password``, which refuses the 10,000 most common passwords whatever
their case (NIST SP 800-63B section 5.1.1.2). The list, ``common-passwords.txt``, is
SecLists' ``10k-most-common.txt`` (Mark Burnett's), lower-cased, with only the
entries of 8 characters or more: ``minLength`` refuses the others already.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from .keywords import BOUNDS, OUR_KEYWORDS, Check
from .numbers import Convert, whole_numbers

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

_FOLDER = Path(__file__).parent


def _compiled_keyword(name: str, check: Check) -> type:
    """Our keyword ``name`` for jsonschema-rs, which calls a class per schema that
    uses it: it runs ``check`` and refuses the instance where that finds fault."""

    def __init__(self: Any, schema: dict[str, Any], value: Any, path: Any) -> None:
        self.value = value

    def validate(self: Any, instance: Any) -> None:
        if check(self.value, instance) is not None:
            raise ValueError(f"{name}: refused")

    return type(name, (), {"__init__": __init__, "validate": validate})


_COMPILED_KEYWORDS = {
    name: _compiled_keyword(name, check) for name, check in OUR_KEYWORDS.items()
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
    document: dict[str, Any]  # as checked and compiled: never change it
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

    @functools.cached_property
    def validator(self) -> Draft202012Validator:
        """The authority's validator of the document, made when first asked: the
        one that names every failing field (``authority.py``)."""
        # Here, not at the top: see the module's docstring.
        # PERF: about 4 MiB of a worker's memory, make bench
        from .authority import Validator

        return Validator(self.document)


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
    """Compile a schema document, once its bounds are checked; a document that is
    not a schema (against draft 2020-12's meta-schema) raises ``ValueError``, as
    jsonschema-rs checks it before it compiles."""
    compiled = jsonschema_rs.Draft202012Validator(
        document, keywords=_COMPILED_KEYWORDS, validate_formats=False
    )
    _require_bounds(document)
    return Schema(document, compiled, whole_numbers(document))


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


def validate(body: Any, schema: Schema) -> Any:
    """``body``, its whole numbers as ints where the schema wants integers; or raise
    ``VALIDATION_ERROR`` listing every failing field."""
    if not schema.compiled_valid(body):
        from .authority import refuse_if_invalid  # see the module's docstring

        refuse_if_invalid(body, schema.validator)
    return body if schema.whole_numbers is None else schema.whole_numbers(body)
