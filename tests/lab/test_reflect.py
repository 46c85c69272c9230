"""httpbin's request endpoints in the lab (lab/reflect.py; docs/lab.md, "Requests"):
/lab/get, /lab/post, /lab/put, /lab/patch, /lab/delete, /lab/headers, /lab/ip,
/lab/user-agent and /lab/uuid, their members as httpbin names them, in process.
The lab's conventions (no credential read, its bucket, its CORS) are
tests/lab/test_lab.py's, over these paths too."""

from __future__ import annotations

import json
import uuid

import pytest
import webtest

from tests.helpers import assert_error

# What /lab/get answers, and what the body's endpoints add (httpbin's order).
GET_MEMBERS = ["args", "headers", "origin", "url", "credentials"]
REQUEST_MEMBERS = ["args", "data", "files", "form", "headers", "json", "origin",
                   "url", "credentials"]  # fmt: skip
CLIENT = {"REMOTE_ADDR": "192.0.2.7"}


@pytest.fixture
def anon(make_app) -> webtest.TestApp:
    return make_app(anonymous=True)


def test_get_reflects_the_query_headers_client_and_url(anon):
    answer = anon.get(
        "/lab/get?a=1&a=2&b=x",
        headers={"Authorization": "Bearer not-real", "X-Note": "hi"},
        extra_environ=CLIENT,
    )
    assert answer.status_int == 200
    assert list(answer.json) == GET_MEMBERS
    assert answer.json["args"] == {"a": ["1", "2"], "b": "x"}
    assert answer.json["headers"]["X-Note"] == "hi"
    assert answer.json["headers"]["Authorization"] == "[redacted]"
    assert answer.json["origin"] == "192.0.2.7"
    assert answer.json["url"] == "http://localhost/lab/get?a=1&a=2&b=x"
    assert answer.json["credentials"] == ["bearer"]
    assert answer.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize(
    ("host", "url"),
    [
        # The servers let an underscore through (a Compose service's name);
        # Werkzeug's get_host read it as no host: http:///lab/get.
        ("my_service:8000", "http://my_service:8000/lab/get"),
        ("api.test:80", "http://api.test/lab/get"),
        ("", "http://localhost/lab/get"),  # none sent: the server's name, port 80
    ],
)
def test_the_url_names_the_host_the_request_was_sent_to(anon, host, url):
    answer = anon.get("/lab/get", extra_environ={"HTTP_HOST": host})
    assert answer.json["url"] == url


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_each_body_endpoint_takes_its_method_alone(anon, method):
    path = f"/lab/{method.lower()}"
    answer = anon.request(path, method=method, body=b'{"title": "A"}',
                          content_type="application/json")  # fmt: skip
    assert list(answer.json) == REQUEST_MEMBERS
    assert answer.json["data"] == '{"title": "A"}'
    assert answer.json["json"] == {"title": "A"}
    assert (answer.json["form"], answer.json["files"]) == ({}, {})
    other = "GET" if method != "GET" else "POST"
    refused = anon.request(path, method=other, expect_errors=True)
    assert_error(refused, 405, "METHOD_NOT_ALLOWED")
    assert refused.headers["Allow"] == ", ".join(sorted([method, "OPTIONS"]))
    assert_error(anon.post("/lab/get", expect_errors=True), 405, "METHOD_NOT_ALLOWED")


def test_a_form_is_form_not_data(anon):
    answer = anon.post("/lab/post?z=1", "a=1&a=2&b=%C3%A9",
                       content_type="application/x-www-form-urlencoded")  # fmt: skip
    assert answer.json["form"] == {"a": ["1", "2"], "b": "é"}
    assert answer.json["data"] == "" and answer.json["json"] is None
    assert answer.json["args"] == {"z": "1"}


def test_a_multipart_form_gives_its_fields_and_files(anon):
    answer = anon.post(
        "/lab/post", params={"x": "y"},
        upload_files=[("text", "a.txt", b"hello"), ("bytes", "b.bin", b"\xff\x00")],
    )  # fmt: skip
    assert answer.json["form"] == {"x": "y"}
    assert answer.json["files"] == {
        "text": "hello",
        "bytes": "data:application/octet-stream;base64,/wA=",
    }


@pytest.mark.parametrize(
    "content_type",
    ["multipart/form-data; boundary=x", "multipart/form-data"],
    ids=["broken", "no-boundary"],
)
def test_a_multipart_body_that_is_none_is_shown_as_data(anon, content_type):
    # As httpbin shows it: a body that says multipart and is not, is no form.
    answer = anon.request("/lab/post", method="POST", body=b"--x\r\nnot a part",
                          content_type=content_type)  # fmt: skip
    assert answer.json["data"] == "--x\r\nnot a part"
    assert (answer.json["form"], answer.json["files"]) == ({}, {})


def test_a_form_of_many_fields_is_refused_bounded(anon):
    many = "&".join(["a=1"] * 1000)
    answer = anon.post("/lab/post", many,
                       content_type="application/x-www-form-urlencoded")  # fmt: skip
    assert len(answer.json["form"]["a"]) == 1000
    refused = anon.post("/lab/post", many + "&b=2", expect_errors=True,
                        content_type="application/x-www-form-urlencoded")  # fmt: skip
    assert_error(refused, 400, "VALIDATION_ERROR")


def test_a_body_of_many_parts_is_refused_bounded(anon):
    parts = "".join(
        f'--x\r\nContent-Disposition: form-data; name="f{n}"\r\n\r\nv\r\n'
        for n in range(1001)
    )
    answer = anon.request("/lab/post", method="POST",
                          body=(parts + "--x--\r\n").encode(),
                          content_type="multipart/form-data; boundary=x",
                          expect_errors=True)  # fmt: skip
    assert_error(answer, 400, "VALIDATION_ERROR")


@pytest.mark.parametrize(
    ("body", "content_type", "data", "parsed"),
    [
        (b"[1, 2]", "text/plain", "[1, 2]", [1, 2]),  # JSON whatever the type
        (b"{not json", "application/json", "{not json", None),
        (b"[" * 40 + b"]" * 40, "application/json", "[" * 40 + "]" * 40, None),
        (b"\xff\xfe", "application/octet-stream",
         "data:application/octet-stream;base64,//4=", None),
        (b"", "application/json", "", None),
        # A number of over 32 characters is read by no one: shown as its text (it
        # was a 500, the encoder meeting what the parser left unread).
        (b'{"n": ' + b"1" * 33 + b"}", "application/json",
         '{"n": ' + "1" * 33 + "}", {"n": "1" * 33}),
        (b"[1e" + b"1" * 40 + b"]", "application/json",
         "[1e" + "1" * 40 + "]", ["1e" + "1" * 40]),
    ],
    ids=["json-as-text", "not-json", "too-deep", "not-utf-8", "empty",
         "an overlong integer", "an overlong exponent"],
)  # fmt: skip
def test_data_is_the_body_and_json_what_parses(anon, body, content_type, data, parsed):
    answer = anon.put("/lab/put", body, content_type=content_type)
    assert answer.json["data"] == data
    assert answer.json["json"] == parsed


def test_a_body_over_the_service_s_limit_is_413(make_app):
    small = make_app(anonymous=True, max_body_bytes=100)
    assert (
        small.post("/lab/post", b"x" * 100, content_type="text/plain").json["data"]
        == "x" * 100
    )
    answer = small.post("/lab/post", b"x" * 101, content_type="text/plain",
                        expect_errors=True)  # fmt: skip
    assert_error(answer, 413, "PAYLOAD_TOO_LARGE")


def test_headers_ip_user_agent_and_uuid_answer_one_member_each(anon):
    sent = {"User-Agent": "client/1.0", "X-Api-Key": "secret"}
    headers = anon.get("/lab/headers", headers=sent).json
    assert list(headers) == ["headers"]
    assert headers["headers"]["User-Agent"] == "client/1.0"
    assert headers["headers"]["X-Api-Key"] == "[redacted]"
    assert anon.get("/lab/ip", extra_environ=CLIENT).json == {"origin": "192.0.2.7"}
    agent = anon.get("/lab/user-agent", headers={"User-Agent": "client/1.0"}).json
    assert agent == {"user-agent": "client/1.0"}
    assert anon.get("/lab/user-agent").json == {"user-agent": None}
    first, second = (anon.get("/lab/uuid") for _ in range(2))
    ids = [uuid.UUID(answer.json["uuid"]) for answer in (first, second)]
    assert ids[0].version == ids[1].version == 4 and ids[0] != ids[1]
    assert first.headers["Cache-Control"] == "no-store"


def test_the_answers_fit_the_lab_s_document(anon):
    # Each body validates against its response schema in /lab/openapi.json.
    from jsonschema import Draft202012Validator

    from tests.helpers import operations_inline

    document = operations_inline(anon.get("/lab/openapi.json").json)
    answers = {
        ("/lab/get", "get"): anon.get("/lab/get?a=1&a=2"),
        ("/lab/post", "post"): anon.post("/lab/post", json.dumps({"a": 1}),
                                         content_type="application/json"),
        ("/lab/headers", "get"): anon.get("/lab/headers"),
        ("/lab/ip", "get"): anon.get("/lab/ip"),
        ("/lab/user-agent", "get"): anon.get("/lab/user-agent"),
        ("/lab/uuid", "get"): anon.get("/lab/uuid"),
    }  # fmt: skip
    for (path, method), answer in answers.items():
        schema = document["paths"][path][method]["responses"]["200"]["content"][
            "application/json"
        ]["schema"]
        # Its references resolve in the document's components.
        whole = {**schema, "components": document["components"]}
        Draft202012Validator(whole).validate(answer.json)
