"""The CSV catalogue: made from the route table, one row per operation, each served."""

from __future__ import annotations

import csv
import functools
import io
import json
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

import pytest

from refapi.routes import Route
from refapi.web.body import FORM
from refapi.web.negotiation import JSON
from refapi.web.wsgi import CutShort
from tests.conftest import ADMIN
from tests.helpers import SERVED, as_sent, assert_error, response_validator

HEADER = [
    "name",
    "endpoint",
    "method",
    "required parameters",
    "optional parameters",
    "sample response",
]
CATALOGUED = [route for route in SERVED if route.catalogued]


def catalogue(app, **environ) -> list[dict[str, str]]:
    response = app.get("/api/download_csv.php", extra_environ=environ, status=200)
    rows = list(csv.reader(io.StringIO(response.text, newline="")))
    assert rows[0] == HEADER
    return [dict(zip(HEADER, row, strict=True)) for row in rows[1:]]


def test_the_download_is_a_csv_attachment(app):
    response = app.get("/api/download_csv.php")
    assert response.headers["Content-Type"] == "text/csv; charset=utf-8"
    assert (
        response.headers["Content-Disposition"]
        == 'attachment; filename="endpoints.csv"'
    )
    assert response.text.startswith(",".join(HEADER) + "\r\n")
    assert response.text.endswith("\r\n")
    head = app.head("/api/download_csv.php")
    assert head.body == b""
    assert head.headers["Content-Length"] == response.headers["Content-Length"]
    again = app.get(
        "/api/download_csv.php",
        headers={"If-None-Match": response.headers["ETag"]},
        status=304,
    )
    assert again.body == b""


def test_each_report_card_task_shows_its_own_checks_answer(app):
    # Every task's row showed see-other's answer: a sample is the task's own.
    from refapi.lab.grade import checks

    reader = csv.DictReader(io.StringIO(app.get("/api/download_csv.php").text))
    samples = {
        (row["method"], row["endpoint"].rsplit("/lab/grade/{run}/", 1)[1]):
        json.loads(row["sample response"])
        for row in reader
        if "/lab/grade/{run}/" in row["endpoint"] and row["sample response"] != "-"
    }  # fmt: skip
    assert samples[("GET", "too-many")] == {"check": "retry-after-429"}
    assert samples[("POST", "orders")] == {"check": "idempotency-key", "placed": True}
    assert {sample["check"] for sample in samples.values()} <= set(checks.BY_NAME)
    assert len({json.dumps(sample) for sample in samples.values()}) == len(samples)


def test_json_only_is_not_acceptable(app):
    response = app.get(
        "/api/download_csv.php",
        headers={"Accept": "application/json"},
        expect_errors=True,
    )
    assert_error(response, 406, "NOT_ACCEPTABLE")


def test_every_operation_has_one_row_and_nothing_else_does(app):
    rows = catalogue(app)
    assert [(r["method"], r["endpoint"]) for r in rows] == [
        (route.method, route.path) for route in CATALOGUED
    ]
    assert len({r["name"] for r in rows}) == len(rows)
    assert not {"HEAD", "OPTIONS"} & {r["method"] for r in rows}


def test_each_demo_action_is_its_own_row_with_action_required(app):
    demo = {r["name"]: r for r in catalogue(app) if r["endpoint"] == "/api/demo.php"}
    assert sorted(demo) == [
        "create_note (action=create)",
        "delete_note (action=delete)",
        "get_note (action=detail)",
        "list_notes (action=list)",
        "update_note (action=update)",
    ]
    assert demo["get_note (action=detail)"]["required parameters"] == (
        "action:string; id:integer"
    )
    assert demo["update_note (action=update)"]["required parameters"] == (
        "action:string; id:integer; text:string"
    )
    assert demo["list_notes (action=list)"]["optional parameters"] == (
        "limit:integer; cursor:string"
    )


def test_parameters_are_name_type_and_a_dash_means_none(app):
    rows = {(r["method"], r["endpoint"]): r for r in catalogue(app)}
    create = rows["POST", "/v1/articles"]
    assert create["required parameters"] == "title:string"
    assert create["optional parameters"] == "Idempotency-Key:string; tags:string[]"
    get = rows["GET", "/v1/articles/{id}"]
    assert get["required parameters"] == "id:integer"
    assert get["optional parameters"] == "-"
    assert rows["DELETE", "/v1/articles/{id}"]["sample response"] == "-"
    pay = rows["POST", "/v1/payments"]["required parameters"]
    assert pay == "Idempotency-Key:string; amount:number; currency:string"
    token = rows["POST", "/oauth/token"]  # a form's members, named as RFC 6749 does
    assert token["required parameters"] == "grant_type:string"
    assert token["optional parameters"] == (
        "client_id:string; client_secret:string; scope:string"
    )
    # string[][]: the explainer's header fields, [name, value] pairs; object: a
    # query of any names (the lab's cookies/set, response-headers)
    cell = re.compile(
        r"-|[A-Za-z_-]+:(integer|number|string|boolean|object)(\[\])*(; |$)"
    )
    for row in rows.values():
        for column in ("required parameters", "optional parameters"):
            assert re.fullmatch(f"(?:{cell.pattern})+", row[column]), row


def sample_problems(cell: str, route: Route, options: Mapping[str, Any]) -> list[str]:
    """What is wrong with a row's sample response (``cell``) for ``route``; none when
    it is an instance of the route's response schema (``schemas/<response>.json``),
    read as the service reads JSON. A route that answers JSON with no response
    schema has no sample, ``-``: there would be nothing to hold it to."""
    if route.response is None:
        return [] if cell == "-" else ["a sample with no response schema"]
    if cell == "-":
        return [f"no sample of {route.response}"]
    try:
        sample = json.loads(cell, parse_float=Decimal)
    except json.JSONDecodeError as exc:
        return [f"not JSON: {exc}"]
    validator = response_validator(route.response, options)
    return [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in validator.iter_errors(sample)
    ]


def _json(route: Route) -> bool:
    """Whether the row answers JSON: by default, or first of what it produces (the
    lab's response-headers, whose client may pick another)."""
    return not route.produces or route.produces[0] == JSON


def test_each_sample_response_is_an_instance_of_its_response_schema(app, config):
    rows = catalogue(app)
    paired = list(zip(rows, CATALOGUED, strict=True))
    json_rows = [(row, route) for row, route in paired if _json(route)]
    # Not JSON: the catalogue itself (CSV, its header for a sample) and the lab's
    # pages, texts and bytes, which have none ("-").
    texts = [row for row, route in paired if not _json(route)]
    sampled = [row["endpoint"] for row in texts if row["sample response"] != "-"]
    assert sampled == ["/api/download_csv.php"]
    for row, route in json_rows:
        assert sample_problems(row["sample response"], route, vars(config)) == [], row


def test_the_sample_check_refuses_what_the_response_schema_does_not_allow(config):
    route = next(
        r for r in CATALOGUED if (r.method, r.path) == ("GET", "/v1/articles/{id}")
    )
    sample = route.sample
    check = functools.partial(sample_problems, route=route, options=vars(config))
    assert check(json.dumps(sample)) == []
    untitled = {name: value for name, value in sample.items() if name != "title"}
    assert check(json.dumps(untitled)) == [": 'title' is a required property"]
    assert check(json.dumps({**sample, "title": ""})) != []  # minLength 1
    assert check(json.dumps({**sample, "id": "1"})) == ["id: is of another type"]
    assert check(json.dumps({**sample, "extra": 1})) != []  # additionalProperties
    assert check(json.dumps([sample])) == [": is of another type"]
    assert check("-") == ["no sample of article"]
    assert check('{"id": 1,') != [] and check('{"id": 1,')[0].startswith("not JSON")
    delete = next(r for r in CATALOGUED if (r.method, r.path) == ("DELETE", route.path))
    assert sample_problems(json.dumps(sample), delete, vars(config)) == [
        "a sample with no response schema"
    ]


def test_the_catalogue_sample_is_how_the_download_begins(app):
    row = next(r for r in catalogue(app) if r["endpoint"] == "/api/download_csv.php")
    sample = json.loads(row["sample response"])
    assert sample.endswith("...")
    download = app.get("/api/download_csv.php").text
    assert download.startswith(sample.removesuffix("...")), (sample, download[:200])


def test_under_a_mount_point_the_endpoints_carry_it(app):
    rows = catalogue(app, SCRIPT_NAME="/prod")
    assert {r["endpoint"] for r in rows} == {f"/prod{r.path}" for r in CATALOGUED}


# Body values a sample response cannot give (a password is never in one).
BODY_VALUES = {
    ("/api/users", "email"): "new@example.com",
    ("/api/users", "password"): "a-password",
    ("/api/login", "email"): ADMIN["email"],
    ("/api/login", "password"): ADMIN["password"],
    ("/api/users/1", "email"): ADMIN["email"],
    ("/oauth/token", "grant_type"): "client_credentials",
    ("/lab/explain", "method"): "GET",
    ("/lab/explain", "path"): "/v1/todos/1",
}


def _request_of(row: dict[str, str], payment_id: str) -> tuple[str, str, dict]:
    """A request that exercises the row, from nothing but what the row says."""
    path = row["endpoint"].replace("{id}", "1")
    path = path.replace("{codes}", "200").replace("{seconds}", "0")  # the lab
    path = path.replace("{path}", "any/path").replace("{n}", "1")
    path = path.replace("{user}", "ada").replace("{passwd}", "pw")
    path = path.replace("{qop}", "auth").replace("{algorithm}", "SHA-256")
    path = path.replace("{stale_after}", "never")
    path = path.replace("{value}", "aGk").replace("{offset}", "0")
    path = path.replace("{etag}", "tag")
    if row["endpoint"] == "/v1/payments/{id}":
        path = row["endpoint"].replace("{id}", payment_id)
    sample = json.loads(row["sample response"]) if row["sample response"] != "-" else {}
    query, body, headers = [], {}, {}
    for param in row["required parameters"].split("; "):
        if param == "-":
            continue
        name, kind = param.split(":")
        if name == "action":
            query.append("action=" + re.search(r"action=(\w+)", row["name"]).group(1))
        elif name == "id" and path == "/api/demo.php":
            query.append("id=1")
        elif name == "url" and path == "/lab/redirect-to":
            query.append("url=get")  # a path of the lab's own
        elif name == "url":
            query.append("url=http://example.com/")
        elif name == "Idempotency-Key":
            headers[name] = "catalogue-key"
        elif f"{{{name}}}" not in row["endpoint"]:  # not a path parameter
            body[name] = BODY_VALUES.get((path, name)) or sample[name]
    url = path + ("?" + "&".join(query) if query else "")
    return (
        url,
        json.dumps(body) if row["method"] in ("POST", "PUT", "PATCH") else "",
        headers,
    )


# What the report card's tasks answer first (docs/lab.md, "A report card for
# clients"); the rest 200. No second origin here: the handoff is 404.
STAGED = {"see-other": 303, "loop": 302, "loop/{hop}": 302, "handoff": 404,
          "too-many": 429, "unavailable": 503, "orders": 504}  # fmt: skip


# The rows of a report card's run (its score and its tasks), and the rest.
TASKS = [i for i, route in enumerate(CATALOGUED) if "{run}" in route.path]
OTHERS = [i for i in range(len(CATALOGUED)) if i not in TASKS]


@pytest.mark.parametrize("index", TASKS)
def test_every_task_of_a_run_is_served(app, index):
    row = catalogue(app)[index]
    run = app.post("/lab/grade", status=201).json["id"]
    path = row["endpoint"].replace("{run}", run).replace("{hop}", "1")
    path = path.replace("{proof}", "0" * 16)
    task = row["endpoint"].removeprefix("/lab/grade/{run}").lstrip("/")  # "": the score
    if task == "download":
        with pytest.raises(CutShort):  # the first download's connection drops
            app.get(path)
        return
    response = app.request(path, method=row["method"], expect_errors=True)
    assert response.status_int == STAGED.get(task, 200), (row, response.text)


@pytest.mark.parametrize("index", OTHERS)
def test_every_row_is_served(app, index):
    app.post_json("/v1/articles", {"title": "A"}, status=201)
    app.post_json("/api/demo.php?action=create", {"text": "n"}, status=201)
    payment = app.post_json(
        "/v1/payments",
        {"amount": 1, "currency": "EUR"},
        headers={"Idempotency-Key": "setup"},
        status=201,
    ).json["id"]
    app.post_json("/api/keys", {"name": "k"}, status=201)
    client = app.post_json("/api/oauth-clients", {"name": "c"}, status=201).json
    # A second admin, so that user 1 is not the last one and may be deleted.
    second = {"email": "second@example.com", "password": "second-pw", "role": "admin"}
    app.post_json("/api/users", second, status=201)
    row = catalogue(app)[index]
    url, body, headers = _request_of(row, payment)
    if row["endpoint"] == "/lab/brotli":  # WebTest refuses br: read it as sent
        sent = as_sent(app, url)
        assert (sent.status_code, sent.headers["Content-Encoding"]) == (200, "br")
        return
    if body:
        headers["Content-Type"] = "application/json"
    if row["endpoint"] == "/oauth/token":  # a form, with the client's credentials
        form = {**json.loads(body), "client_id": client["clientId"],
                "client_secret": client["clientSecret"]}  # fmt: skip
        body, headers["Content-Type"] = urlencode(form), FORM
    response = app.request(
        url, method=row["method"], body=body.encode(), headers=headers,
        expect_errors=True,
    )  # fmt: skip
    if row["endpoint"] == "/api/proxy.php":  # no host is allowed in tests
        assert_error(response, 403, "HOST_NOT_ALLOWED")
    elif row["endpoint"] == "/api/session":  # served: no session cookie was sent
        assert_error(response, 401, "UNAUTHENTICATED")
    elif row["endpoint"].startswith("/lab/hidden-basic-auth/"):  # no Basic sent
        assert_error(response, 404, "NOT_FOUND")
    elif row["endpoint"].startswith("/lab/basic-auth/"):  # the lab's challenge
        assert response.headers["WWW-Authenticate"] == 'Basic realm="refapi lab"'
    elif row["endpoint"].startswith("/lab/digest-auth/"):  # no Digest sent
        assert_error(response, 401, "UNAUTHENTICATED")
        assert response.headers["WWW-Authenticate"].startswith("Digest ")
    elif "redirect" in row["endpoint"] or row["endpoint"].startswith("/lab/cookies/"):
        # served: a redirect, to the lab's own
        assert response.status_int == 302 and response.headers["Location"]
    else:
        assert response.status_int < 300, (row, response.text)
