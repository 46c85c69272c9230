"""The response as WSGI (web/wsgi.py): HEAD has the GET's headers and no body,
and no URL the service emits (Location, Link) starts with ``//``, which a client
reads as a scheme-relative URL naming another host (RFC 3986 section 4.2). A JSON
body is compact UTF-8, its keys in the order they were made."""

from __future__ import annotations

from decimal import Decimal

import pytest

from refapi.web import canonical_json, json_bytes


@pytest.mark.parametrize(
    "path", ["/v1/articles", "/v1/articles/1", "/v1/todos/1", "/v1/items", "/healthz"]
)
def test_head_has_the_get_headers_and_no_body(article_app, path):
    get = article_app.get(path, status=200)
    head = article_app.head(path, status=200)
    assert head.body == b""
    assert head.headers["Content-Type"] == get.headers["Content-Type"]
    assert head.headers["Content-Length"] == str(len(get.body))
    assert head.headers.get("ETag") == get.headers.get("ETag")


@pytest.mark.parametrize(
    "script_name", ["", "//", "//evil.example", "/\\evil.example", "/prod"]
)
def test_no_emitted_url_starts_with_two_slashes(app, script_name):
    environ = {"SCRIPT_NAME": script_name}
    created = app.post_json(
        "/v1/articles", {"title": "a"}, extra_environ=environ, status=201
    )
    app.post_json("/v1/articles", {"title": "b"}, status=201)
    page = app.get("/v1/articles?limit=1", extra_environ=environ, status=200)
    urls = [created.headers["Location"], page.headers["Link"].removeprefix("<")]
    for url in urls:
        assert url.startswith("/") and not url.startswith(("//", "/\\")), url
        assert "\\" not in url


@pytest.mark.parametrize(
    ("data", "body"),
    [
        ({"b": 1, "a": [True, None]}, b'{"b":1,"a":[true,null]}'),
        ({"name": "caf\u00e9 \U0001f642"}, '{"name":"caf\u00e9 \U0001f642"}'.encode()),
        ({"t": 'a"b\\c\n\x01\u2028'}, b'{"t":"a\\"b\\\\c\\n\\u0001\xe2\x80\xa8"}'),
        ([0.1, 1e16, 1e-07, -0.0], b"[0.1,1e+16,1e-07,-0.0]"),
        ([Decimal("10"), Decimal("12.50"), Decimal("1E+2")], b"[10,12.5,100]"),
        (
            {"data": [{"id": 1}, {"id": 2}], "next": None},
            b'{"data":[{"id":1},{"id":2}],"next":null}',
        ),
    ],
    ids=["key-order", "non-ascii", "escapes", "floats", "decimals", "page"],
)
def test_json_bytes_are_compact_utf8_in_insertion_order(data, body):
    assert json_bytes(data) == body


def test_canonical_json_sorts_keys():
    assert canonical_json({"b": [2, {"d": 1, "c": 0}], "a": "é"}) == (
        '{"a":"é","b":[2,{"c":0,"d":1}]}'.encode()
    )


def test_json_bytes_are_the_encoders_without_the_c_one_too(monkeypatch):
    """json_bytes uses the C encoder made once (web/wsgi.py, ``_one_shot``); an
    interpreter without it gets the JSONEncoder's own encode, with the same text."""
    import json

    from refapi.web import wsgi

    data = {"b": [1.5, None, True, 'é\n"x'], "a": Decimal("12.50"), "c": {"d": -0.0}}
    fast = wsgi._one_shot(wsgi._canonical)
    monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    plain = wsgi._one_shot(wsgi._canonical)
    assert plain == wsgi._canonical.encode
    assert (
        fast(data)
        == plain(data)
        == '{"a":12.5,"b":[1.5,null,true,"é\\n\\"x"],"c":{"d":-0.0}}'
    )
    assert json_bytes(data) == wsgi._encoder.encode(data).encode()


@pytest.mark.parametrize(
    "settings",
    [{"ensure_ascii": True}, {"check_circular": True}, {"indent": 2}],
    ids=["ascii", "cycle-check", "indent"],
)
def test_a_one_shot_encoder_writes_what_its_encoder_does(settings):
    import json

    from refapi.web import wsgi

    encoder = json.JSONEncoder(**{"check_circular": False, **settings})
    data = {"b": ["é\u2028", {"c": 1}], "a": None}
    assert wsgi._one_shot(encoder)(data) == encoder.encode(data)
