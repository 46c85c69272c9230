"""The OpenAPI 3.1 document at /openapi.json, derived from the route table."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace

import pytest
import schemathesis
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from refapi import openapi, routes
from refapi.config import Config
from refapi.errors import HostNotAllowed, IdempotencyKeyInvalid
from refapi.handlers import articles, items, todos
from refapi.handlers.proxy import ssrf
from refapi.lab import routes as lab_routes
from refapi.middleware import request_id
from refapi.openapi.descriptions import DESCRIPTIONS
from refapi.routes import CURSOR, LIMIT, Param, Route
from refapi.schemas import invisible
from refapi.web import idempotency, pagination
from tests.helpers import assert_error, operations_inline

LISTED = [route for route in routes.ROUTES if route.documented]
LAB_LISTED = [route for route in lab_routes.ROUTES if route.documented]


@pytest.fixture(scope="module")
def texts() -> dict[tuple[str, str], str]:
    """The documents below as JSON text, by kind and configuration: each is made once
    per configuration and module, as making one (and writing its operations out)
    takes most of a test's time here; each test reads a copy of its own."""
    return {}


def configured(config: Config) -> str:
    """What the document can depend on: the configuration, but for the database."""
    return repr(replace(config, database_url=""))


@pytest.fixture
def served(app, config, texts):
    """The document as served: what operations share is referred to."""
    key = ("served", configured(config))
    if key not in texts:
        texts[key] = app.get("/openapi.json").text
    return json.loads(texts[key])


@pytest.fixture
def document(served, config, texts):
    """The document with each operation's responses and parameters in place."""
    key = ("inline", configured(config))
    if key not in texts:
        texts[key] = json.dumps(operations_inline(served))
    return json.loads(texts[key])


@pytest.fixture
def lab_document(app, config, texts):
    """The lab's own document (/lab/openapi.json), its operations written out."""
    key = ("lab", configured(config))
    if key not in texts:
        texts[key] = json.dumps(operations_inline(app.get("/lab/openapi.json").json))
    return json.loads(texts[key])


def validator(document: dict, component: str) -> Draft202012Validator:
    """A validator for one of the document's component schemas."""
    registry = Registry().with_resource("urn:doc", Resource.opaque(document))
    reference = {"$ref": f"urn:doc#/components/schemas/{component}"}
    return Draft202012Validator(reference, registry=registry)


def test_the_document_is_valid_openapi_3_1(document):
    assert document["openapi"] == "3.1.0"
    assert document["info"]["version"] == Config().version
    # schemathesis checks the document against the OpenAPI 3.1 meta-schema.
    schemathesis.openapi.from_dict(document).validate()
    for name, schema in document["components"]["schemas"].items():
        Draft202012Validator.check_schema(schema)
        assert "$schema" not in schema and "title" not in schema, name


@pytest.mark.parametrize("component", ["user-register", "user-replace"])
def test_an_email_the_service_calls_invisible_the_document_refuses_too(
    document, anon, component
):
    # Schemathesis found it: the document's email allowed a soft hyphen, which
    # x-no-invisible (ours, which a client's validator skips) refuses. Every
    # character of the table's Basic Multilingual Plane, checked both ways.
    check = validator(document, component)
    schema = document["components"]["schemas"][component]
    body = {"email": "ann@example.com", "password": "a long unusual passphrase"}
    if component == "user-replace":
        body |= {"firstName": "Ann", "lastName": "Lee", "role": "user"}
    check.validate(body)
    for first, last in invisible.RANGES:
        for code in {first, last} if last <= 0xFFFF else ():
            email = f"an{chr(code)}n@example.com"
            assert not check.is_valid({**body, "email": email}), hex(code)
    # The rest (U+110BD and up) the description names, as ECMA-262 without its
    # u flag reads such a character as two.
    assert "format character" in schema["properties"]["email"]["description"]
    refused = anon.post_json(
        "/api/users", {**body, "email": "a\u00adb@example.com"}, status=400
    )
    assert refused.json["details"]["errors"] == [
        {
            "field": "/email",
            "message": "must not contain an invisible character (U+00AD)",
        }
    ]


def test_every_reference_names_a_component(served):
    refs = set(_refs(served))
    for ref in refs:
        kind, name = ref.removeprefix("#/components/").split("/")
        assert name in served["components"][kind], ref
    # ... and every component is used.
    for kind in ("schemas", "responses", "parameters", "headers"):
        used = {ref.rpartition("/")[2] for ref in refs if f"/{kind}/" in ref}
        assert used == set(served["components"][kind]), kind


# Swagger UI at /docs fetches, parses and resolves the whole document before it
# draws an operation (docs/development.md, "The OpenAPI document's size").
MOST_BYTES = 300_000


def test_the_served_document_is_at_most_300_kb(app):
    assert len(app.get("/openapi.json").body) <= MOST_BYTES


def test_what_operations_share_is_said_once_in_the_components(served):
    # A response or parameter that two operations would write out alike is a
    # component both refer to; one that only one operation gives stays in it.
    seen: Counter[str] = Counter()
    for item in served["paths"].values():
        for operation in item.values():
            for status, answer in operation["responses"].items():
                seen[json.dumps([status, answer], sort_keys=True)] += 1
            for parameter in operation.get("parameters", ()):
                seen[json.dumps(parameter, sort_keys=True)] += 1
    written_twice = [text for text, count in seen.items() if count > 1]
    assert all('"$ref"' in text for text in written_twice), written_twice
    components = served["components"]
    assert components["responses"] and components["parameters"]
    for name in components["responses"]:
        assert re.fullmatch(r"[1-5]([0-9]{2}|XX)\.[0-9a-f]{6,}", name), name
    for name, parameter in components["parameters"].items():
        assert name.rpartition(".")[0] == parameter["name"], name


def test_every_listed_route_is_an_operation_and_nothing_else(document):
    everything = {
        (path, method.upper()): operation["operationId"]
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }
    # HEAD, OPTIONS and the unprefixed paths: served by the router, not rows.
    operations = {
        key: name
        for key, name in everything.items()
        if not re.search(openapi.SERVED_TOO, name)
    }
    expected: dict[tuple[str, str], list[str]] = {}
    # A handler serving several methods (the lab's) adds the method to its name.
    methods = Counter(route.handler for route in LISTED)
    for route in LISTED:
        name = route.name
        if methods[route.handler] > 1:
            name += "_" + route.method.lower()
        expected.setdefault((route.path, route.method), []).append(name)
    assert operations == {key: "_or_".join(names) for key, names in expected.items()}
    assert len({*everything.values()}) == len(everything)


def test_rows_left_out_of_the_catalogue_are_left_out(document):
    served = [route.path for route in routes.ROUTES if not route.documented]
    assert served == [
        "/metrics", "/openapi.json", "/docs", "/docs/", "/docs/{name}", "/ui/", "/ui",
        "/ui/{name}", "/guides/", "/guides", "/guides/{name}",
    ]  # fmt: skip
    assert not set(served) & set(document["paths"])


@pytest.mark.parametrize(
    ("script_name", "server"), [("", "/"), ("/prod", "/prod"), ("/dev/", "/dev")]
)
def test_the_server_url_is_the_mount_point(app, script_name, server):
    response = app.get("/openapi.json", extra_environ={"SCRIPT_NAME": script_name})
    assert response.json["servers"] == [{"url": server, "x-internal": False}]


def test_the_document_is_built_once_per_mount_point(app):
    # The instance's own, not the process's: what its router bound to the handler.
    router = app.app.router
    row = next(r for r in router.route_table if r.path == "/openapi.json")
    document = router.handlers[row].keywords["document"]
    app.get("/openapi.json", extra_environ={"SCRIPT_NAME": "/once"})
    before = document.cache_info()
    app.get("/openapi.json", extra_environ={"SCRIPT_NAME": "/once"})
    after = document.cache_info()
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)


def test_head_options_and_conditional_get_of_the_document(app):
    got = app.get("/openapi.json")
    assert got.headers["Content-Type"] == "application/json; charset=utf-8"
    head = app.head("/openapi.json")
    assert head.status_int == 200 and head.body == b""
    assert head.headers["Content-Length"] == str(len(got.body))
    assert head.headers["ETag"] == got.headers["ETag"]
    options = app.options("/openapi.json", status=204)
    assert options.headers["Allow"] == "GET, HEAD, OPTIONS"
    headers = {"If-None-Match": got.headers["ETag"]}
    assert app.get("/openapi.json", headers=headers, status=304).body == b""


@pytest.mark.parametrize(
    ("route", "in_document"),
    [
        # The lab's rows are in its own document; each case reads only its own.
        *(pytest.param(r, "document", id=r.name) for r in LISTED if r.response),
        *(pytest.param(r, "lab_document", id=r.name) for r in LAB_LISTED if r.response),
    ],
)
def test_each_sample_is_an_instance_of_its_response_schema(request, route, in_document):
    document = request.getfixturevalue(in_document)
    success = str(route.status or (201 if route.method == "POST" else 200))
    answer = document["paths"][route.path][route.method.lower()]["responses"][success]
    media = (route.produces or ("application/json",))[0]
    content = answer["content"][media]
    assert {"$ref": f"#/components/schemas/{route.response}"} in (
        content["schema"].get("anyOf", [content["schema"]])
    )
    if media != "application/json":  # an event stream: its example would be text
        assert route.sample is None and "examples" not in content, route.name
        return
    assert route.sample in [e["value"] for e in content["examples"].values()]
    validator(document, route.response).validate(route.sample)


def test_response_schemas_agree_with_the_request_schemas(document):
    schemas = document["components"]["schemas"]
    for name in ("title", "tags"):
        assert (
            schemas["article"]["properties"][name]
            == (schemas["article-create"]["properties"][name])
        )
    payment, asked = schemas["payment"]["properties"], schemas["payment-create"]
    assert payment["currency"]["pattern"] == asked["properties"]["currency"]["pattern"]
    assert payment["amount"]["maximum"] == asked["properties"]["amount"]["maximum"]


def _responses(document, method, path):
    return document["paths"][path][method.lower()]["responses"]


def _codes(response) -> list[str]:
    return list(response["content"]["application/json"].get("examples", {}))


@pytest.mark.parametrize(
    ("method", "path", "statuses"),
    [
        ("GET", "/v1/articles", "200 304 400 401 406 412 429 500 503"),
        ("POST", "/v1/articles", "201 400 401 403 406 409 413 415 422 429 500 503"),
        ("GET", "/v1/articles/{id}", "200 304 400 401 404 406 412 429 500 503"),
        (
            "PATCH",
            "/v1/articles/{id}",
            "200 400 401 403 404 406 412 413 415 429 500 503",
        ),
        ("DELETE", "/v1/articles/{id}", "204 400 401 403 404 406 412 429 500 503"),
        ("GET", "/v1/payments/{id}", "200 304 401 404 406 412 429 500 503"),
        ("POST", "/v1/payments", "201 400 401 403 406 409 413 415 422 429 500 503"),
        ("GET", "/healthz", "200 304 500 503"),
        ("GET", "/api/download_csv.php", "200 304 401 406 429 500 503"),
        ("GET", "/api/demo.php", "200 304 400 401 404 405 406 412 429 500 503"),
        ("POST", "/api/demo.php", "201 400 401 405 406 409 413 415 422 429 500 503"),
        ("DELETE", "/api/demo.php", "204 400 401 404 405 429 500 503"),
        ("POST", "/api/users", "201 400 401 403 406 409 413 415 429 500 503"),
        ("PUT", "/api/users/{id}", "200 400 401 403 404 406 409 413 415 429 500 503"),
        ("DELETE", "/api/users/{id}", "204 400 401 403 404 409 429 500 503"),
        ("POST", "/api/login", "200 400 401 406 413 415 429 500 503"),
        ("POST", "/api/logout", "204 401 403 429 500 503"),
        ("GET", "/api/session", "200 304 401 406 429 500 503"),
        (
            "GET",
            "/api/proxy.php",
            "200 2XX 304 400 401 403 406 429 4XX 500 502 503 504 508 5XX",
        ),
    ],
)
def test_the_statuses_each_operation_can_answer(document, method, path, statuses):
    # Less gunicorn's refusals, which every operation lists (the test below).
    answered = set(_responses(document, method, path)) - SERVER_REFUSALS
    assert sorted(answered) == statuses.split()


SERVER_REFUSALS = {"408", "414", "431"}


def test_every_operation_lists_what_gunicorn_refuses_before_the_app(document):
    # A request line or header field over gunicorn's limits (gunicorn.conf.py) is
    # answered by serving/gunicorn.py: the error object, X-Request-Id and nosniff, no
    # RateLimit.
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status in SERVER_REFUSALS:
                answer = operation["responses"][status]
                if "4XX" in operation["responses"]:
                    # The proxy and the lab may answer any 4xx (an upstream's, one
                    # asked for), with the headers of the layers: as optional.
                    headers = _ranged_off(answer["headers"])
                else:
                    headers = answer["headers"]
                assert headers == {
                    "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
                    "X-Content-Type-Options": {
                        "$ref": "#/components/headers/X-Content-Type-Options"
                    },
                    # When every origin is allowed (serving/gunicorn.py).
                    "Access-Control-Allow-Origin": {
                        "$ref": "#/components/headers/Access-Control-Allow-Origin"
                        ".optional"
                    },
                    "Access-Control-Expose-Headers": {
                        "$ref": "#/components/headers/Access-Control-Expose-Headers"
                        ".optional"
                    },
                }, (method, path, status)
    too_long = _responses(document, "GET", "/api/proxy.php")["414"]
    assert _codes(too_long) == ["URI_TOO_LONG"]


def _ranged_off(headers: dict) -> dict:
    """``headers`` less the optional ones that are not CORS headers."""
    return {
        name: ref
        for name, ref in headers.items()
        if name.startswith("Access-Control-") or not ref["$ref"].endswith(".optional")
    }


def test_an_exact_status_also_says_what_its_range_answers(app, document):
    # A reader matches an answer to its exact status before its range (OpenAPI
    # 3.1): the lab's asked-for 429 is read against the 429 entry, which its
    # bucket's refusal also has, so that entry allows both. Nothing under /lab/
    # reads a credential, so no 401 entry is there to say so.
    lab_document = operations_inline(app.get("/lab/openapi.json").json)
    lab = _responses(lab_document, "GET", "/lab/status/{codes}")
    assert "401" not in lab
    limited = lab["429"]
    assert "code SIMULATED" in limited["description"]
    assert _codes(limited) == ["RATE_LIMITED"]
    proxy = _responses(document, "GET", "/api/proxy.php")["403"]
    assert proxy["content"]["application/json"]["schema"] == {
        "anyOf": [
            {"$ref": "#/components/schemas/error"},
            {"$ref": "#/components/schemas/upstream"},
        ]
    }


def test_routes_that_need_a_credential_say_so(document):
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schemes["bearerAuth"]["description"],
    }
    assert schemes["apiKeyAuth"]["in"] == "header"
    assert schemes["apiKeyAuth"]["name"] == "X-API-Key"
    assert schemes["sessionCookie"]["in"] == "cookie"
    for route in LISTED:
        operation = document["paths"][route.path][route.method.lower()]
        # A public operation says so with an empty list (Redocly's security-defined).
        assert bool(operation["security"]) == bool(route.auth), route.name
    unauthorized = _responses(document, "GET", "/api/users")["401"]
    assert set(unauthorized["headers"]) >= {"WWW-Authenticate", "Cache-Control"}


@pytest.mark.parametrize(
    ("method", "path", "status", "codes"),
    [
        ("GET", "/v1/articles", "400", ["VALIDATION_ERROR", "INVALID_CURSOR"]),
        (
            "POST",
            "/v1/payments",
            "400",
            [
                "INVALID_JSON",
                "MALFORMED_REQUEST",
                "VALIDATION_ERROR",
                "IDEMPOTENCY_KEY_REQUIRED",
                "IDEMPOTENCY_KEY_INVALID",
            ],
        ),
        ("POST", "/v1/payments", "422", ["IDEMPOTENCY_KEY_REUSED"]),
        ("PATCH", "/v1/articles/{id}", "412", ["PRECONDITION_FAILED"]),
        # Another principal's article.
        ("PATCH", "/v1/articles/{id}", "403", ["CSRF_FAILED", "FORBIDDEN"]),
        ("DELETE", "/v1/articles/{id}", "403", ["CSRF_FAILED", "FORBIDDEN"]),
        ("GET", "/api/proxy.php", "403", ["HOST_NOT_ALLOWED"]),
        ("GET", "/api/proxy.php", "504", ["UPSTREAM_TIMEOUT"]),
        ("GET", "/api/proxy.php", "508", ["LOOP_DETECTED"]),
        (
            "GET",
            "/api/demo.php",
            "400",
            ["VALIDATION_ERROR", "INVALID_CURSOR", "UNKNOWN_ACTION"],
        ),
        ("DELETE", "/api/demo.php", "405", ["METHOD_NOT_ALLOWED"]),
        ("GET", "/v1/todos/{id}", "429", ["RATE_LIMITED"]),
        ("GET", "/v1/todos/{id}", "500", ["INTERNAL_ERROR"]),
        ("GET", "/v1/todos/{id}", "401", ["UNAUTHENTICATED"]),
        ("POST", "/api/login", "401", ["UNAUTHENTICATED", "INVALID_CREDENTIALS"]),
        ("PUT", "/api/users/{id}", "403", ["CSRF_FAILED", "FORBIDDEN"]),
        ("PUT", "/api/users/{id}", "409", ["CONFLICT"]),
        ("DELETE", "/api/users/{id}", "409", ["CONFLICT"]),
    ],
)
def test_each_status_names_its_error_codes(document, method, path, status, codes):
    response = _responses(document, method, path)[status]
    assert _codes(response) == codes
    for code in codes:
        assert f"`{code}`" in response["description"]


def test_errors_carry_the_error_object_and_their_headers(document):
    responses = _responses(document, "GET", "/v1/items")
    error = validator(document, "error")
    for status in ("400", "406", "429", "500", "503"):
        json = responses[status]["content"]["application/json"]
        assert json["schema"] == {"$ref": "#/components/schemas/error"}
        for sample in json["examples"].values():
            error.validate(sample["value"])
    headers = {status: set(responses[status]["headers"]) for status in responses}
    assert headers["429"] >= {"Retry-After", "RateLimit", "RateLimit-Policy"}
    assert "Retry-After" in headers["503"]
    assert all("X-Request-Id" in names for names in headers.values())


def test_headers_of_success(document):
    def refs(method, path, status):
        response = _responses(document, method, path)[status]
        return {name: ref["$ref"] for name, ref in response["headers"].items()}

    component = "#/components/headers/"
    listed = refs("GET", "/v1/items", "200")
    assert listed["ETag"] == component + "ETag"
    assert listed["X-Next-Cursor"] == component + "X-Next-Cursor.optional"
    assert listed["Link"] == component + "Link.optional"
    assert listed["Vary"] == component + "Vary"
    assert refs("POST", "/v1/articles", "201")["Location"] == component + "Location"
    replay = refs("POST", "/v1/payments", "201")["Idempotent-Replayed"]
    assert replay == component + "Idempotent-Replayed.optional"
    assert "RateLimit" not in refs("GET", "/healthz", "200")
    assert document["components"]["headers"]["ETag"]["required"] is True


def test_representations_of_a_resource(document):
    content = _responses(document, "GET", "/v1/articles/{id}")["200"]["content"]
    assert list(content) == [
        "application/json",
        "application/vnd.refapi+json;version=1",
        "application/xml",
        "text/csv",
    ]
    assert content["text/csv"]["schema"] == {"type": "string"}
    errors = _responses(document, "GET", "/v1/articles/{id}")["404"]["content"]
    assert list(errors) == ["application/json"]


def test_parameters_and_bodies(document):
    listed = document["paths"]["/v1/articles"]["get"]["parameters"]
    assert [(p["name"], p["in"], p["required"]) for p in listed] == [
        ("limit", "query", False),
        ("cursor", "query", False),
        ("tag", "query", False),
        ("If-None-Match", "header", False),
        ("If-Match", "header", False),
    ]
    assert listed[0]["schema"] == {
        "type": "integer",
        "format": "int32",
        "minimum": 1,
        "maximum": 100,
        "default": 20,
    }
    patch = document["paths"]["/v1/articles/{id}"]["patch"]
    assert [(p["name"], p["in"]) for p in patch["parameters"]] == [
        ("id", "path"),
        ("If-Match", "header"),
    ]
    assert patch["parameters"][0]["schema"] == {
        "type": "integer",
        "format": "int64",
        "minimum": 1,
        "maximum": 2**63 - 1,
    }
    body = patch["requestBody"]
    assert body["required"] is True
    assert body["content"] == {
        "application/json": {
            "schema": {"$ref": "#/components/schemas/article-patch"},
            "example": {"title": "Hello again"},  # what "Try it out" fills in
        }
    }
    assert "application/merge-patch+json" in body["description"]
    key = document["paths"]["/v1/payments"]["post"]["parameters"][0]
    assert (key["name"], key["in"], key["required"]) == (
        "Idempotency-Key",
        "header",
        True,
    )


def test_the_configuration_shows_in_the_document(make_app):
    document = operations_inline(
        make_app(
            page_size_max=50,
            currencies=("EUR", "CHF"),
            deprecation="@1796000000",
            cors_origins=("https://ui.example",),
        )
        .get("/openapi.json")
        .json
    )
    limit = document["paths"]["/v1/items"]["get"]["parameters"][0]["schema"]
    assert limit["maximum"] == 50
    currency = document["components"]["schemas"]["payment-create"]["properties"]
    assert currency["currency"]["enum"] == ["EUR", "CHF"]
    assert "multipleOf" in currency["amount"] and "maxDecimalPlaces" not in currency
    todo = _responses(document, "GET", "/v1/todos/{id}")
    assert (
        "Deprecation" in todo["200"]["headers"]
        and "Sunset" not in todo["200"]["headers"]
    )
    assert (
        "Deprecation" not in _responses(document, "GET", "/healthz")["200"]["headers"]
    )
    # Vary: Origin on every answer of the app (gunicorn's refusals name no origin).
    assert all(
        "Vary" in answer["headers"]
        for status, answer in todo.items()
        if status not in SERVER_REFUSALS
    )


# Rows that share a path and a method, told apart by ``action``, as the demo's are.
DEMO = "/api/demo.php"
ACTION = Param("action", "string", required=True)
DEMO_ROUTES = (
    Route("GET", DEMO, items.list_items, action="list", params=(ACTION, LIMIT, CURSOR),
          response="item-page"),
    Route("GET", DEMO, todos.get_todo, action="detail",
          params=(ACTION, Param("id", "integer", required=True)), response="todo"),
    Route("POST", DEMO, articles.create_article, action="create", params=(ACTION,),
          schema="article-create", body_limit=16384, response="article"),
)  # fmt: skip


def test_the_demo_is_one_operation_per_method(document):
    demo = document["paths"]["/api/demo.php"]
    actions = {
        method: operation["parameters"][0]["schema"]["enum"]
        for method, operation in demo.items()
        if method not in ("head", "options")  # the GET's, and the router's
    }
    assert actions == {
        "get": ["list", "detail"],
        "post": ["create"],
        "patch": ["update"],
        "delete": ["delete"],
    }
    ids = {p["name"]: p["required"] for p in demo["get"]["parameters"]}
    assert ids["id"] is False and ids["action"] is True
    assert {p["name"]: p["required"] for p in demo["delete"]["parameters"]} == {
        "action": True,
        "id": True,
    }
    examples = demo["get"]["responses"]["200"]["content"]["application/json"]
    assert list(examples["examples"]) == ["list", "detail"]


def test_the_catalogue_is_csv(document):
    answer = _responses(document, "GET", "/api/download_csv.php")["200"]
    assert answer["content"] == {"text/csv": {"schema": {"type": "string"}}}
    assert {"ETag", "Vary"} <= set(answer["headers"])


def test_actions_of_one_path_and_method_are_one_operation(app):
    # Served by the app's middleware, which declare what they add and answer.
    layers = app.app.layers
    document = openapi.document(DEMO_ROUTES, Config(), layers=layers)
    schemathesis.openapi.from_dict(document).validate()
    document = operations_inline(document)
    get = document["paths"][DEMO]["get"]
    assert get["operationId"] == "list_items_or_get_todo"
    parameters = {p["name"]: p for p in get["parameters"]}
    assert list(parameters) == ["action", "limit", "cursor", "id", "If-None-Match"]
    assert parameters["action"]["required"] is True
    assert parameters["action"]["schema"] == {
        "type": "string",
        "enum": ["list", "detail"],
    }
    # Required by one action only, so not by the operation.
    assert parameters["id"]["required"] is False
    responses = get["responses"]
    assert responses["200"]["content"]["application/json"]["schema"] == {
        "anyOf": [
            {"$ref": "#/components/schemas/item-page"},
            {"$ref": "#/components/schemas/todo"},
        ]
    }
    assert "404" in responses  # detail's unknown id
    assert "INVALID_CURSOR" in _codes(responses["400"])  # list's cursor
    assert "Allow" in responses["405"]["headers"]  # an action of another method
    post = document["paths"][DEMO]["post"]
    assert post["parameters"][0]["schema"]["enum"] == ["create"]
    assert post["requestBody"]["required"] is True
    assert sorted(set(post["responses"]) - SERVER_REFUSALS) == [
        "201", "400", "401", "405", "406", "413", "415", "429", "500", "503"
    ]  # fmt: skip


def _refs(node):
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_a_parameter_only_some_actions_read_has_no_bounds_in_the_merged_operation(
    document,
):
    # GET /api/demo.php?action=list&id=0 is a 200 (list ignores id), so the document
    # must not promise that an id of 0 is refused on that operation.
    get = document["paths"]["/api/demo.php"]["get"]
    params = {param["name"]: param for param in get["parameters"]}
    assert params["id"]["schema"] == {"type": "string"}
    assert params["id"]["description"].startswith("Read by `detail`;")
    assert params["limit"]["schema"] == {"type": "string"}
    delete = document["paths"]["/api/demo.php"]["delete"]
    only = {param["name"]: param for param in delete["parameters"]}
    assert only["id"]["schema"]["minimum"] == 1  # one action: its own bounds


def test_the_token_endpoint_takes_a_form_and_the_bearer_scheme_names_it(app):
    served = app.get("/openapi.json", extra_environ={"SCRIPT_NAME": "/dev"}).json
    document = operations_inline(served)
    token = document["paths"]["/oauth/token"]["post"]
    form = token["requestBody"]["content"]
    assert list(form) == ["application/x-www-form-urlencoded"]
    assert token["security"] == []  # the client authenticates itself there
    refused = token["responses"]["401"]["headers"]["WWW-Authenticate"]
    assert refused == {"$ref": "#/components/headers/WWW-Authenticate"}
    answer = app.post(
        "/oauth/token",
        {"grant_type": "client_credentials", "client_id": "x", "client_secret": "y"},
        status=401,
    )
    assert answer.headers["WWW-Authenticate"] == 'Basic realm="refapi"'
    bearer = document["components"]["securitySchemes"]["bearerAuth"]
    assert "/oauth/token" in bearer["description"]


def test_every_operation_is_described_and_every_description_is_used(document):
    assert set(DESCRIPTIONS) == {(route.method, route.path) for route in LISTED}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if re.search(openapi.SERVED_TOO, operation["operationId"]):
                assert operation["description"], (method, path)
            else:
                described = DESCRIPTIONS[(method.upper(), path)]
                assert operation["description"] == described


def test_head_options_and_the_unprefixed_paths_are_declared_as_served(app, document):
    # Prism refused what the server serves (issue 24): they are operations too.
    paths = document["paths"]
    for path, item in paths.items():
        assert "options" in item, path
        assert ("head" in item) == ("get" in item), path
        for answer in item.get("head", {}).get("responses", {}).values():
            assert "content" not in answer  # RFC 9110 section 9.3.2: no body
    options = paths["/v1/articles/{id}"]["options"]
    assert "Allow" in options["responses"]["204"]["headers"]
    # Any segment: the router answers OPTIONS before a row reads the id.
    assert options["parameters"][0]["schema"]["type"] == "string"
    app.options("/v1/articles/not-an-id", status=204)
    assert "/v1/articles" in paths and "/articles" in paths
    assert paths["/articles"]["get"]["operationId"] == "list_articles_by_accept"
    vendor = {"Accept": "application/vnd.refapi+json;version=1"}
    app.get("/articles", headers=vendor, status=200)
    app.get("/articles", status=404)
    assert "404" in paths["/articles"]["get"]["responses"]


def test_the_document_names_its_licence_contact_and_audience(document):
    assert document["info"]["license"] == {"name": "MIT", "identifier": "MIT"}
    assert document["info"]["contact"] == {"name": "refapi maintainers"}
    assert document["servers"] == [{"url": "/", "x-internal": False}]


# What the server enforces, the document states: a request the document calls valid
# is accepted (schemathesis's positive_data_acceptance), and the bounds of each
# parameter are read from the code that enforces them.


def _parameter(document, method, path, name):
    operation = document["paths"][path][method]
    return next(p for p in operation["parameters"] if p["name"] == name)


# Printable ASCII with the characters the key's rules single out, and a few outside.
_KEY_ALPHABET = ' !"#,\\az~\t\x7f\u00e9'


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet=_KEY_ALPHABET, max_size=8)
    | st.from_regex(idempotency.KEY_SCHEMA["pattern"], fullmatch=True)
)
@example("k" * 255)
@example("k" * 256)
@example('"' + "k" * 255 + '"')
@example('"' + "k" * 256 + '"')
@example('"' + '\\"' * 255 + '"')
def test_an_idempotency_key_is_accepted_exactly_when_the_document_says(key):
    # HTTP strips spaces and tabs around a field value (RFC 9110 section 5.5).
    assume(key == key.strip(" \t"))
    try:
        idempotency.key(key)
    except IdempotencyKeyInvalid:
        accepted = False
    else:
        accepted = True
    assert accepted == bool(re.fullmatch(idempotency.KEY_SCHEMA["pattern"], key))
    assert len(key) <= idempotency.KEY_SCHEMA["maxLength"] or not accepted


@settings(max_examples=200, deadline=None)
@given(st.from_regex(ssrf.URL_SCHEMA["pattern"], fullmatch=True))
def test_a_url_the_document_calls_valid_is_well_formed_to_the_proxy(url):
    assume(len(url) <= ssrf.URL_SCHEMA["maxLength"])
    # Well-formed, so refused only for its host: no allow-list entry names it.
    with pytest.raises(HostNotAllowed):
        ssrf.check_target(url, [], lambda host, port: ["192.0.2.1"])


@pytest.mark.parametrize(
    "url",
    [
        "http://192.0.2.1/",
        "http://198.51.100.7:8080/x?y=1",
        "https://[2001:db8::1]/",
        "http://[::1]:65535/",
        "http://[2001:db8:0:0:0:0:0:1]:443",
        "https://example.org:10000/",
    ],
)
def test_the_document_calls_valid_the_urls_the_proxy_takes(url):
    # Prism refused these (issue 24): IP literals and ports over 9999.
    assert re.fullmatch(ssrf.URL_SCHEMA["pattern"], url)
    with pytest.raises(HostNotAllowed):
        ssrf.check_target(url, [], lambda host, port: ["192.0.2.1"])


@pytest.mark.parametrize(
    "url", ["http://[::1/", "http://1.2.3.256/", "http://a.org:65536/", "http://[:::]/"]
)
def test_the_document_calls_invalid_what_the_proxy_cannot_read(url):
    assert not re.fullmatch(ssrf.URL_SCHEMA["pattern"], url)


def test_the_document_states_the_bounds_the_server_enforces(document):
    key = _parameter(document, "post", "/v1/payments", "Idempotency-Key")
    assert key["schema"] == idempotency.KEY_SCHEMA
    url = _parameter(document, "get", "/api/proxy.php", "url")
    assert url["schema"] == ssrf.URL_SCHEMA
    tag = _parameter(document, "get", "/v1/articles", "tag")
    assert tag["schema"] == {"type": "string", "minLength": 1, "maxLength": 50}


def test_the_headers_patterns_are_those_the_code_checks(document):
    headers = document["components"]["headers"]
    assert headers["X-Request-Id"]["schema"] == request_id.REQUEST_ID_SCHEMA
    cursor = headers["X-Next-Cursor.optional"]["schema"]
    assert cursor["pattern"] == pagination.CURSOR_SCHEMA["pattern"]


PAGED = [
    "/v1/articles",
    "/v1/items",
    "/api/users",
    "/api/keys",
    "/api/oauth-clients",
    "/api/demo.php?action=list",
]


@pytest.mark.parametrize("url", PAGED)
def test_an_empty_cursor_is_refused_on_every_paged_list_as_the_document_says(
    app, document, url
):
    path = url.partition("?")[0]
    cursor = _parameter(document, "get", path, "cursor")
    if path == "/api/demo.php":  # read by list only: its schema is in the description
        assert cursor["description"].startswith("Read by `list`;")
        assert "an empty one included" in cursor["description"]
    else:
        assert cursor["schema"] == pagination.CURSOR_SCHEMA
    separator = "&" if "?" in url else "?"
    assert_error(app.get(f"{url}{separator}cursor=", status=400), 400, "INVALID_CURSOR")


@pytest.mark.parametrize("url", PAGED)
def test_a_cursor_of_the_documented_shape_is_taken_only_if_signed_as_the_document_says(
    app, document, url
):
    # A signature is not a schema: the pattern gives a cursor's shape, and the
    # description says a value of that shape the server did not sign is refused.
    path = url.partition("?")[0]
    cursor = _parameter(document, "get", path, "cursor")
    said = cursor.get("description") or cursor["schema"]["description"]
    assert "signed by the server" in said
    forged = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    assert re.fullmatch(pagination.CURSOR_SCHEMA["pattern"], forged)
    separator = "&" if "?" in url else "?"
    refused = app.get(f"{url}{separator}cursor={forged}", status=400)
    assert_error(refused, 400, "INVALID_CURSOR")


def test_the_longest_cursor_fits_the_documented_length_and_a_longer_one_is_refused(
    app,
):
    # The widest scope: the longest tag, each character 4 bytes in UTF-8.
    scope = pagination.scope("articles", {"tag": "\U0001f600" * 50})
    longest = pagination.encode_cursor(b"k" * 32, scope, 2**63 - 1, 2**63 - 1)
    assert len(longest) <= pagination.CURSOR_SCHEMA["maxLength"]
    too_long = "A" * (pagination.CURSOR_SCHEMA["maxLength"] + 1)
    refused = app.get(f"/v1/items?cursor={too_long}", status=400)
    assert_error(refused, 400, "INVALID_CURSOR")


def test_an_empty_tag_filter_is_refused_and_the_longest_is_taken(app):
    assert_error(app.get("/v1/articles?tag=", status=400), 400, "VALIDATION_ERROR")
    app.get("/v1/articles?tag=" + "t" * 50, status=200)
    assert_error(
        app.get("/v1/articles?tag=" + "t" * 51, status=400), 400, "VALIDATION_ERROR"
    )


@pytest.mark.parametrize("method", ["patch", "delete"])
def test_an_empty_if_match_lists_no_tag_so_it_never_matches(app, document, method):
    # RFC 9110 section 13.1.1: If-Match = "*" / #entity-tag, a list that may be
    # empty; the condition is false when no listed tag matches the current one.
    condition = _parameter(document, method, "/v1/articles/{id}", "If-Match")
    assert (
        "An empty value lists no tag, so it never matches (412)"
        in (condition["description"])
    )
    article = app.post_json("/v1/articles", {"title": "Hello"}, status=201).json
    url = f"/v1/articles/{article['id']}"
    if method == "patch":
        answer = app.patch_json(url, {"title": "x"}, headers={"If-Match": ""},
                                status=412)  # fmt: skip
    else:
        answer = app.delete(url, headers={"If-Match": ""}, status=412)
    assert_error(answer, 412, "PRECONDITION_FAILED")
    assert app.get(url).json["title"] == "Hello"


@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("url", ["/v1/articles/1", "/v1/articles", "/v1/todos/1"])
def test_an_empty_if_none_match_lists_no_tag_so_the_answer_is_whole(
    app, document, method, url
):
    # RFC 9110 section 13.1.2: If-None-Match = "*" / #entity-tag, a list that may
    # be empty; no listed tag matches, so the condition holds: not a 304, nor a
    # refusal of a value the document calls valid.
    app.post_json("/v1/articles", {"title": "Hello"}, status=201)
    template = url.replace("/1", "/{id}")
    condition = _parameter(document, method.lower(), template, "If-None-Match")
    assert re.fullmatch(condition["schema"]["pattern"], "")
    said = condition["description"]
    assert "An empty value lists no tag, so none is current" in said
    whole = app.request(url, method=method)
    for empty in ("", " ", ","):
        answer = app.request(url, method=method, headers={"If-None-Match": empty})
        assert answer.status_int == 200
        assert answer.body == whole.body
        assert answer.headers["ETag"] == whole.headers["ETag"]


def test_options_answers_any_segment_as_405_does_and_the_document_says_so(
    app, document
):
    # Decided (docs/api.md, "Order of checks"): OPTIONS is the routing step's
    # answer, like 405, made before a row reads the id a GET would refuse.
    segment = _parameter(document, "options", "/v1/articles/{id}", "id")["schema"]
    assert "an id they would refuse gets `Allow` too" in segment["description"]
    # The request line's length is gunicorn's to bound (414), not the app's.
    assert "maxLength" not in segment
    for bad in ("abc", "0", "9" * 40, "x" * 5000):
        assert re.fullmatch(segment["pattern"], bad)
        refused = app.get(f"/v1/articles/{bad}", status=400)
        assert_error(refused, 400, "VALIDATION_ERROR")
        allow = app.options(f"/v1/articles/{bad}", status=204).headers["Allow"]
        assert allow == "DELETE, GET, HEAD, OPTIONS, PATCH"
        not_here = app.post_json(f"/v1/articles/{bad}", {}, status=405)
        assert not_here.headers["Allow"] == allow


def test_a_key_in_use_is_documented_with_retry_after(document):
    conflict = _responses(document, "POST", "/v1/payments")["409"]
    assert "IDEMPOTENCY_KEY_IN_USE" in _codes(conflict)
    assert conflict["headers"]["Retry-After"] == {
        "$ref": "#/components/headers/Retry-After"
    }


def test_the_catalogue_download_names_its_file_as_the_document_says(app, document):
    answer = _responses(document, "GET", "/api/download_csv.php")["200"]
    header = answer["headers"]["Content-Disposition"]["$ref"].rpartition("/")[2]
    component = document["components"]["headers"][header]
    assert component["required"] is True
    sent = app.get("/api/download_csv.php").headers["Content-Disposition"]
    assert re.fullmatch(component["schema"]["pattern"], sent)


def _patterns(node):
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str):
            yield node["pattern"]
        for value in node.values():
            yield from _patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _patterns(value)


def test_every_pattern_means_the_same_to_the_server_and_to_the_document_s_readers(
    document,
):
    # The server matches with Python's re; the document's readers (generators,
    # schemathesis) with ECMA-262's. Python's \s, \d and \w take Unicode classes
    # (\s: the separators U+001C to U+001F too), ECMA's do not: such a pattern
    # refuses what the document allows.
    patterns = set(_patterns(document))
    assert patterns
    for pattern in patterns:
        assert not re.search(r"\\[sSdDwWbB]", pattern), pattern


def test_the_ratelimit_fields_may_list_several_buckets(document):
    headers = document["components"]["headers"]
    fields = {
        "RateLimit": '"default";r=99;t=0, "auth";r=9;t=0',
        "RateLimit-Policy": '"default";q=100;w=10, "auth";q=10;w=60',
    }
    for name, value in fields.items():
        assert re.search(headers[name]["schema"]["pattern"], value), name
        assert re.search(headers[name]["schema"]["pattern"], value.split(",")[0])


def test_a_password_change_takes_the_current_password(document):
    schema = document["components"]["schemas"]["user-replace"]
    assert schema["properties"]["currentPassword"] == {
        "type": "string",
        "maxLength": 1024,
        "description": schema["properties"]["currentPassword"]["description"],
    }
    assert "x-not-common-password" not in schema["properties"]["password"]
    assert "common passwords" in schema["properties"]["password"]["description"]


def test_the_routers_own_refusals_are_documented_without_any_layer():
    # No credential on a credential's row is the router's 401, not a layer's.
    document = operations_inline(openapi.document(routes.ROUTES, Config()))
    responses = document["paths"]["/api/keys"]["post"]["responses"]
    assert {"401", "403"} <= set(responses)
    codes = responses["401"]["content"]["application/json"]["examples"]
    assert list(codes) == ["UNAUTHENTICATED"]
    headers = responses["401"]["headers"]
    assert set(headers) == {"WWW-Authenticate", "Cache-Control", "Set-Cookie"}


def test_the_error_object_declares_every_member_of_details_the_code_emits(document):
    # Generators make a typed record of details (TypeScript, Python): every key the
    # code writes there is a declared member. The keys are read from the source:
    # a dict literal passed as details, and the keywords of serving/gunicorn.py's
    # _error(...).
    from pathlib import Path

    root = Path(openapi.__file__).resolve().parent.parent
    emitted = {"errors", "truncated", "limit"}  # ValidationError's; 413's limit
    for path in root.glob("**/*.py"):
        skipped = {"tests", "build", "bench", "examples"}  # not served
        parts = path.relative_to(root).parts
        if skipped & set(parts) or any(part.startswith(".") for part in parts):
            continue  # .venv, .venv-3.13: the environments' own packages
        text = path.read_text()
        for literal in re.findall(r"details=\{([^}]*)\}", text):
            emitted |= set(re.findall(r'"(\w+)":', literal))
        for call in re.findall(r"_error\(\s*\d{3},[^)]*\)", text):
            emitted |= set(re.findall(r"(\w+)=", call))
    emitted.add("reason")  # users.py: Conflict(..., {"reason": "last admin"})
    emitted.add("field")  # users.py: Conflict(..., {"field": "email"})
    details = document["components"]["schemas"]["error"]["properties"]["details"]
    assert {"allowed", "etag", "maxDepth", "retry_after", "supported"} <= emitted
    assert emitted <= set(details["properties"]), emitted - set(details["properties"])
