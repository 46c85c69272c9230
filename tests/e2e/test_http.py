"""HTTP details only a real server shows: chunked bodies, early 413, HEAD, mounting,
and the requests gunicorn refuses before the application sees them."""

from __future__ import annotations

import contextlib
import json
import re
import socket

import pytest

from tests.conftest import ADMIN
from tests.e2e.harness import exchange, raw_request, wait_until

pytestmark = pytest.mark.e2e


def chunked(path: str, body: bytes) -> bytes:
    headers = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
    return raw_request(
        "POST", path, headers, b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    )


def test_a_chunked_body_is_read(server):
    response = exchange(server, chunked("/v1/articles", b'{"title": "chunked"}'))
    assert response.status == 201
    assert json.loads(response.body)["title"] == "chunked"


def test_a_chunked_body_over_the_limit_is_413(gunicorn):
    server = gunicorn(workers=1, env={"REFAPI_MAX_BODY_BYTES": "64"})
    body = json.dumps({"title": "x" * 100}).encode()
    response = exchange(server, chunked("/v1/articles", body))
    assert response.status == 413
    assert json.loads(response.body)["code"] == "PAYLOAD_TOO_LARGE"


def test_a_huge_declared_body_is_refused_before_it_is_sent(server):
    # Only the headers go out: the answer must come without the 50 MB body.
    headers = {"Content-Type": "application/json", "Content-Length": "52428800"}
    response = exchange(server, raw_request("POST", "/v1/articles", headers))
    assert response.status == 413
    assert json.loads(response.body)["details"] == {"limit": 16384}  # the row's


def test_a_chunked_body_over_the_routes_own_limit_is_413(server):
    """The login's limit (16 KiB) under the default REFAPI_MAX_BODY_BYTES (1 MiB)."""
    body = json.dumps({"email": "a@b", "password": "x" * 20_000}).encode()
    response = exchange(server, chunked("/api/login", body))
    assert response.status == 413
    assert json.loads(response.body)["details"] == {"limit": 16384}


def test_a_field_value_beyond_ascii_reaches_the_app_as_latin_1(server):
    """PEP 3333: gunicorn hands each byte on as a latin-1 character, so the lab
    echoes UTF-8 bytes read that way, and a cookie of such bytes stays a cookie
    (on Granian both arrive empty: test_granian_refusals.py)."""
    head = b"GET /lab/headers HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    answer = exchange(server, head + b"X-A: h\xc3\xa9llo\r\n\r\n", admin=False)
    assert json.loads(answer.body)["headers"]["X-A"] == "h\xc3\xa9llo"
    head = head.replace(b"/lab/headers", b"/lab/cookies")
    answer = exchange(server, head + b"Cookie: a=\xff\xfe; b=1\r\n\r\n", admin=False)
    assert json.loads(answer.body)["cookies"]["b"] == "1"


HOSTS = [b"my_service:8000", b"[::1]:8000", b"127.0.0.1", b"example.com:",
         b"xn--bcher-kva.example", b"%41.example", b"[v1.x]"]  # fmt: skip


@pytest.mark.parametrize("host", HOSTS)
def test_a_host_rfc_3986_allows_is_served(server, host):
    """Underscores, IP literals, an empty port, percent-escapes (RFC 3986 section
    3.2.2); those of test_what_gunicorn_refuses_... are 400."""
    raw = b"GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host
    assert exchange(server, raw, admin=False).status == 200


def answers_to_two_pipelined(port: int) -> bytes:
    """All a server sends back to two GETs written at once on one connection."""
    get = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(get + get)
        sock.settimeout(2)
        received = b""
        with contextlib.suppress(TimeoutError):
            while chunk := sock.recv(65536):
                received += chunk
    return received


def test_a_sync_worker_closes_the_connection_after_one_answer(server):
    """docs/operating.md, "Two servers": a second request pipelined behind the
    first goes unanswered (on Granian both are: test_granian_refusals.py)."""
    received = answers_to_two_pipelined(server.port)
    assert received.count(b"HTTP/1.1 200") == 1
    assert b"\r\nConnection: close\r\n" in received


def test_a_content_length_past_two_to_the_64_is_413_from_its_head(server):
    """On gunicorn the app refuses it as any length over the row's limit (on
    Granian it is Granian's own empty 400: test_granian_refusals.py)."""
    headers = {"Content-Type": "application/json", "Content-Length": str(2**64)}
    response = exchange(server, raw_request("POST", "/v1/articles", headers))
    assert response.status == 413


def test_head_has_the_headers_of_get_and_no_body(server):
    get = exchange(server, raw_request("GET", "/v1/todos/1"))
    head = exchange(server, raw_request("HEAD", "/v1/todos/1"))
    assert head.status == 200 and head.body == b""
    assert head.getheader("Content-Length") == get.getheader("Content-Length")
    assert head.getheader("ETag") == get.getheader("ETag")


def test_mounted_under_a_prefix_every_url_carries_it(gunicorn):
    # gunicorn takes the mount point from SCRIPT_NAME, as a gateway mapping would.
    server = gunicorn(workers=1, env={"SCRIPT_NAME": "/prod"}, ready="listening")
    health = raw_request("GET", "/prod/healthz")
    wait_until(lambda: exchange(server, health).status == 200, 20, "/prod/healthz")
    headers = {"Content-Type": "application/json"}
    created = exchange(
        server, raw_request("POST", "/prod/v1/articles", headers, b'{"title": "a"}')
    )
    assert created.status == 201
    assert created.getheader("Location").startswith("/prod/v1/articles/")
    page = exchange(server, raw_request("GET", "/prod/v1/items?limit=1"))
    assert page.getheader("Link").startswith("</prod/v1/items?cursor=")


# gunicorn's limits as gunicorn.conf.py sets them (docs/operating.md, "What gunicorn
# refuses itself").
LINE_LIMIT, FIELDS_LIMIT, FIELD_BYTES_LIMIT = 4094, 100, 8190


def request_line_of(length: int) -> bytes:
    """A GET whose request line (without CRLF) is ``length`` bytes long."""
    line = b"GET /v1/todos/1?pad= HTTP/1.1"
    line = line.replace(b"pad=", b"pad=" + b"a" * (length - len(line)))
    return line + b"\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


def with_fields(fields: list[bytes]) -> bytes:
    """A GET carrying exactly these header fields."""
    return (
        b"GET /v1/todos/1 HTTP/1.1\r\n"
        + b"".join(f + b"\r\n" for f in fields)
        + (b"\r\n")
    )


def fields_of(count: int) -> list[bytes]:
    return [b"Host: 127.0.0.1", b"Connection: close"] + [
        b"X-Pad-%d: 1" % n for n in range(count - 2)
    ]


def field_of(length: int) -> bytes:
    """One header field of ``length`` bytes, CRLF included, as gunicorn counts it."""
    return b"X-Pad: " + b"a" * (length - len(b"X-Pad: \r\n"))


REFUSED = [
    ("request-line-over-the-limit", request_line_of(LINE_LIMIT + 1), 414,
     "URI_TOO_LONG"),
    ("too-many-fields", with_fields(fields_of(FIELDS_LIMIT + 1)), 431,
     "REQUEST_HEADER_FIELDS_TOO_LARGE"),
    ("a-field-over-the-limit",
     with_fields([b"Host: x", field_of(FIELD_BYTES_LIMIT + 1)]), 431,
     "REQUEST_HEADER_FIELDS_TOO_LARGE"),
    ("conflicting-content-length",
     b"POST /v1/articles HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
     b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400, "MALFORMED_REQUEST"),
    ("repeated-content-length",  # the same value twice: RFC 9112 6.3 lets either be
     b"POST /lab/anything HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
     b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", 400, "MALFORMED_REQUEST"),
    ("content-length-and-chunked",
     b"POST /v1/articles HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 400,
     "MALFORMED_REQUEST"),
    ("invalid-header-name", with_fields([b"Host: x", b"Bad Name: 1"]), 400,
     "MALFORMED_REQUEST"),
    ("field-without-colon", with_fields([b"Host: x", b"no colon here"]), 400,
     "MALFORMED_REQUEST"),
    ("obsolete-line-folding", with_fields([b"Host: x", b"X-A: 1", b" folded"]),
     400, "MALFORMED_REQUEST"),
    ("garbage-request-line", b"HELLO\r\n\r\n", 400, "MALFORMED_REQUEST"),
    ("unknown-http-version", b"GET / HTTP/7.1\r\nHost: x\r\n\r\n", 400,
     "MALFORMED_REQUEST"),
    ("transfer-coding-not-ending-in-chunked",
     b"POST /v1/articles HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
     400, "MALFORMED_REQUEST"),
    ("unknown-coding-alone",  # gunicorn knows gzip alone (400), not br: 501
     b"POST /v1/articles HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: br\r\n\r\n",
     501, "NOT_IMPLEMENTED"),
    ("unknown-transfer-coding",
     b"POST /v1/articles HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: br, chunked\r\n"
     b"\r\n0\r\n\r\n", 501, "NOT_IMPLEMENTED"),
    # gunicorn lets these through with the body still coded (the app would read
    # gzip as if it were JSON), or a coding RFC 9112 no longer defines (identity).
    *[(f"{coding}-then-chunked",
       b"POST /v1/articles HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
       b"\r\nTransfer-Encoding: %s, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
       % coding.encode(), 501, "NOT_IMPLEMENTED")
      for coding in ("gzip", "deflate", "compress", "identity")],
    # RFC 9112, section 3.2: an HTTP/1.1 request has exactly one Host.
    ("no-host", b"GET /v1/todos/1 HTTP/1.1\r\nConnection: close\r\n\r\n", 400,
     "MALFORMED_REQUEST"),
    ("two-hosts", b"GET /v1/todos/1 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400,
     "MALFORMED_REQUEST"),
    # RFC 9112, section 3.2: a Host that is no host[:port] (RFC 3986 section 3.2.2).
    *[(f"host-{name}", b"GET /lab/absolute-redirect/1 HTTP/%s\r\nHost: %s\r\n\r\n"
       % (version, host), 400, "MALFORMED_REQUEST")
      for name, host, version in (
          ("with-a-space", b"a b", b"1.1"), ("ip-literal-none", b"[zz]", b"1.1"),
          ("ip-literal-unclosed", b"[::1", b"1.1"), ("with-userinfo", b"u@a", b"1.1"),
          ("with-a-path", b"a/b", b"1.1"), ("port-not-digits", b"a:8x", b"1.1"),
          ("in-http-1.0", b"a b", b"1.0"))],
    # RFC 9110, section 5.3: a field of one member, sent twice, is ambiguous.
    ("two-content-types",
     b"POST /lab/anything HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
     b"\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}", 400,
     "MALFORMED_REQUEST"),
    # What a hostile client tried besides (stop 55): lines and targets of no
    # HTTP/1.1 request.
    ("bare-line-feeds", b"GET /healthz HTTP/1.1\nHost: x\n\n", 400,
     "MALFORMED_REQUEST"),
    ("lower-case-method", b"get /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 400,
     "MALFORMED_REQUEST"),
    ("long-method", b"A" * 200 + b" /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 400,
     "MALFORMED_REQUEST"),
    ("target-without-slash", b"GET healthz HTTP/1.1\r\nHost: x\r\n\r\n", 400,
     "MALFORMED_REQUEST"),
    ("authority-target", b"GET evil.example:443 HTTP/1.1\r\nHost: x\r\n\r\n",
     400, "MALFORMED_REQUEST"),
    ("chunked-in-http-1.0",
     b"POST /v1/articles HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
     b"\r\n0\r\n\r\n", 400, "MALFORMED_REQUEST"),
    # RFC 9110, section 10.1.1: an expectation the server cannot meet, 417.
    ("unknown-expectation",
     b"POST /lab/anything HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
     b"\r\nContent-Length: 2\r\nExpect: 200-ok\r\n\r\n{}", 417,
     "EXPECTATION_FAILED"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "status", "code"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED]
)
def test_what_gunicorn_refuses_is_the_error_object(server, raw, status, code):
    response = exchange(server, raw)

    assert response.status == status
    assert response.getheader("Content-Type") == "application/json; charset=utf-8"
    body = json.loads(response.body)
    assert set(body) == {"code", "message", "details"}
    assert body["code"] == code
    request_id = response.getheader("X-Request-Id")
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,128}", request_id)
    assert response.getheader("X-Content-Type-Options") == "nosniff"
    assert response.getheader("Access-Control-Allow-Origin") == "*"
    assert response.getheader("Connection") == "close"
    # The refusal is logged with the same id, in gunicorn's warning and in the
    # app's request line (one line a request, docs/operating.md), and the worker
    # goes on.
    wait_until(lambda: request_id in server.error_log(), 5, "gunicorn's warning")

    def logged() -> list[dict]:
        return [line for line in server.requests() if line["requestId"] == request_id]

    wait_until(logged, 5, "the refusal's request line")
    [line] = logged()
    assert (line["status"], line["route"], line["caller"]) == (status, None, None)
    assert exchange(server, raw_request("GET", "/healthz")).status == 200
    assert server.log_failures() == []


def test_gunicorns_limits_are_the_documented_ones(server):
    at_the_limit = [
        request_line_of(LINE_LIMIT),
        with_fields(fields_of(FIELDS_LIMIT)),
        with_fields([b"Host: x", b"Connection: close", field_of(FIELD_BYTES_LIMIT)]),
    ]
    # Anonymous (admin=False): an Authorization field would push them over.
    answers = [exchange(server, raw, admin=False) for raw in at_the_limit]
    assert [answer.status for answer in answers] == [200] * 3
    over = exchange(server, request_line_of(LINE_LIMIT + 1), admin=False)
    assert json.loads(over.body)["details"] == {"maxBytes": LINE_LIMIT}
    fields = exchange(server, with_fields(fields_of(FIELDS_LIMIT + 1)), admin=False)
    assert json.loads(fields.body)["details"] == {
        "maxFields": FIELDS_LIMIT,
        "maxFieldBytes": FIELD_BYTES_LIMIT,
    }


def test_with_listed_origins_a_refusal_names_no_origin(gunicorn):
    # The request was not read, so which origin asked is unknown.
    server = gunicorn(workers=1, env={"REFAPI_CORS_ORIGINS": "https://a.example"})
    response = exchange(server, request_line_of(LINE_LIMIT + 1))
    assert response.status == 414
    assert response.getheader("Access-Control-Allow-Origin") is None
    assert json.loads(response.body)["code"] == "URI_TOO_LONG"


def test_forwarded_headers_from_a_local_client_are_not_believed(server):
    # Without REFAPI_TRUST_PROXY the app believes no X-Forwarded-*, and gunicorn,
    # whose defaults trust loopback, must not believe them on its own either.
    login = raw_request(
        "POST", "/api/login",
        {"Content-Type": "application/json", "X-Forwarded-Proto": "https"},
        json.dumps(ADMIN).encode(),
    )  # fmt: skip
    response = exchange(server, login, admin=False)
    assert response.status == 200, response.body
    assert "Secure" not in response.getheader("Set-Cookie")
    listed = exchange(
        server, raw_request("GET", "/v1/items?limit=1", {"SCRIPT_NAME": "/elsewhere"})
    )
    assert listed.status == 200
    assert "/elsewhere" not in listed.getheader("Link")


@pytest.mark.parametrize("version", [b"1.0", b"1.2", b"1.9"])
def test_the_answer_is_in_the_version_the_server_speaks(server, version):
    # A later 1.x is answered as 1.1, never in a version the server does not
    # speak; an HTTP/1.0 request needs no Host.
    host = b"" if version == b"1.0" else b"Host: x\r\n"
    request = b"GET /v1/todos/1 HTTP/%s\r\n%sConnection: close\r\n\r\n" % (
        version,
        host,
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    expected = b"HTTP/1.0 200 " if version == b"1.0" else b"HTTP/1.1 200 "
    assert answer.startswith(expected), answer[:100]
