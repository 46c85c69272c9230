"""The echo's notes on the client's own request (lab/request_notes.py; docs/lab.md,
"Notes on your request"), in process: each note for a request that earns it, and
none for the same request made right. That well-formed requests from real clients
earn none, over both servers, is tests/e2e/test_request_notes.py's."""

from __future__ import annotations

import pytest

# One case a note: what earns it, then the same made right. Each is (headers, extra
# environ, method, body) for /lab/anything.
WEEKDAY = "Sun, 06 Nov 1994 08:49:37 GMT"
CASES = {
    "a body without Content-Type": (
        "Content-Type",
        ({}, {}, "POST", b"hello"),
        ({"Content-Type": "text/plain"}, {}, "POST", b"hello"),
    ),
    "JSON declared as something else": (
        "Content-Type",
        ({"Content-Type": "text/plain"}, {}, "POST", b'{"a": 1}'),
        ({"Content-Type": "application/json"}, {}, "POST", b'{"a": 1}'),
    ),
    "JSON that does not parse": (
        "body",
        ({"Content-Type": "application/json"}, {}, "POST", b'{"a": '),
        ({"Content-Type": "application/json"}, {}, "POST", b'{"a": 1}'),
    ),
    "JSON of a +json type that does not parse": (
        "body",
        ({"Content-Type": "application/merge-patch+json"}, {}, "PATCH", b"{'a': 1}"),
        ({"Content-Type": "application/merge-patch+json"}, {}, "PATCH", b'{"a": 1}'),
    ),
    "If-None-Match without quotes": (
        "If-None-Match",
        ({"If-None-Match": "v1"}, {}, "GET", b""),
        ({"If-None-Match": '"v1", W/"v2"'}, {}, "GET", b""),
    ),
    "If-Match not a list": (
        "If-Match",
        ({"If-Match": '"v1" "v2"'}, {}, "PUT", b""),
        ({"If-Match": "*"}, {}, "PUT", b""),
    ),
    "an Accept nothing here satisfies": (
        "Accept",
        ({"Accept": "text/html, application/xml;q=0.9"}, {}, "GET", b""),
        ({"Accept": "text/html, */*;q=0.1"}, {}, "GET", b""),
    ),
    "Content-Type repeated": (
        "Content-Type",
        ({"Content-Type": "text/plain, text/html"}, {}, "POST", b"hello"),
        ({"Content-Type": 'multipart/mixed; boundary="a,b"'}, {}, "POST", b"hello"),
    ),
    "Max-Forwards repeated": (
        "Max-Forwards",
        ({"Max-Forwards": "1,2"}, {}, "GET", b""),
        ({"Max-Forwards": "1"}, {}, "GET", b""),
    ),
    "If-Modified-Since repeated": (
        "If-Modified-Since",
        ({"If-Modified-Since": f"{WEEKDAY}, {WEEKDAY}"}, {}, "GET", b""),
        ({"If-Modified-Since": WEEKDAY}, {}, "GET", b""),
    ),
    "two credentials in Authorization": (
        "Authorization",
        ({"Authorization": "Bearer a, Bearer b"}, {"wsgi.url_scheme": "https"},
         "GET", b""),
        ({"Authorization": 'Digest username="a", realm="b", nonce="c"'},
         {"wsgi.url_scheme": "https"}, "GET", b""),
    ),
    "Content-Length on a GET": (
        "Content-Length",
        ({}, {"CONTENT_LENGTH": "0"}, "GET", b""),
        ({}, {}, "GET", b""),
    ),
    "a credential over plain HTTP": (
        "Authorization",
        ({"Authorization": "Bearer abc"}, {}, "GET", b""),
        ({"Authorization": "Bearer abc"}, {"wsgi.url_scheme": "https"}, "GET", b""),
    ),
    "an API key over plain HTTP": (
        "X-API-Key",
        ({"X-API-Key": "abc"}, {}, "GET", b""),
        ({"X-API-Key": "abc"}, {"wsgi.url_scheme": "https"}, "GET", b""),
    ),
    "a Cookie joined without its space": (
        "Cookie",
        ({"Cookie": "a=1;b=2"}, {}, "GET", b""),
        ({"Cookie": "a=1; b=2"}, {}, "GET", b""),
    ),
    "a Cookie value with a space": (
        "Cookie",
        ({"Cookie": 'a="x y"'}, {}, "GET", b""),
        ({"Cookie": 'a="xy"'}, {}, "GET", b""),
    ),
    "Expect: 100-continue without a body": (
        "Expect",
        ({"Expect": "100-continue"}, {}, "POST", b""),
        ({"Expect": "100-continue", "Content-Type": "text/plain"}, {}, "POST", b"x"),
    ),
}  # fmt: skip


def notes(app, case) -> list[dict]:
    headers, environ, method, body = case
    # WebOb gives a body of b"" a Content-Length of 0: none sent, none set.
    sent = {"body": body} if body else {}
    answer = app.request(
        "/lab/anything", method=method, headers=headers, environ=environ, **sent
    )
    assert answer.status_int == 200, answer.text
    found: list[dict] = answer.json["notes"]
    return found


@pytest.mark.parametrize(("subject", "wrong", "right"), CASES.values(), ids=CASES)
def test_a_request_earns_its_note_and_made_right_earns_none(
    anon, subject, wrong, right
):
    [note] = notes(anon, wrong)
    assert note["subject"] == subject
    assert note["level"] in ("bad", "warning")
    assert note["spec"].startswith("RFC ")
    assert note["summary"] and "\n" not in note["summary"]
    assert notes(anon, right) == []


def test_a_plain_request_has_nothing_to_say(anon):
    answer = anon.get("/lab/anything?q=1", headers={"Accept": "application/json"})
    assert answer.json["notes"] == []


def test_every_note_it_has_is_said_at_once(anon):
    headers = {"Accept": "image/png", "Cookie": "a=1;b=2", "If-Match": "v1",
               "Authorization": "Bearer abc"}  # fmt: skip
    said = notes(anon, (headers, {}, "POST", b'{"a": 1}'))
    assert [note["subject"] for note in said] == [
        "Content-Type", "If-Match", "Accept", "Cookie", "Authorization",
    ]  # fmt: skip


def test_json_nested_past_the_service_s_depth_is_noted_not_a_crash(anon):
    deep = b"[" * 100_000 + b"]" * 100_000
    [note] = notes(anon, ({"Content-Type": "application/json"}, {}, "POST", deep))
    assert note["subject"] == "body"


def test_only_the_echo_answers_notes(anon):
    for path in ("/lab/get", "/lab/post"):
        method = path.rpartition("/")[2].upper()
        answer = anon.request(path, method=method, headers={"Accept": "text/html"})
        assert "notes" not in answer.json
