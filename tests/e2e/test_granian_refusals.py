"""What Granian does with the requests gunicorn refuses itself (docs/operating.md,
"What Granian refuses itself"), pinned request by request, so that an upgrade of
Granian that changes any of it fails here: the hostile requests of
``tests/e2e/test_http.py`` (``REFUSED``, the limits, the versions) and
``tests/e2e/test_framing.py`` (``BROKEN``, ``STALLED``, ``Expect``), sent to
``refapi serve --server granian``.

Granian's own refusals are hyper's (its HTTP library): a status line and
``connection: close``, ``content-length: 0`` and ``date``, no body, the connection
closed; the app never sees the request (no request id, no log line). Of what
Granian lets through, refapi's layer around the app on Granian
(``serving/granian.Environ``) refuses what the app could not answer right, as
gunicorn's worker refuses it (the error object, a new request id, its line
logged): a body in a transfer coding, ``411 LENGTH_REQUIRED``, since Granian hands
the app a chunked body whose framing breaks as a whole body of the bytes before
the break (its ``wsgi.input`` reads hyper's error as the body's end), which would
be stored; an HTTP/1.1 request without exactly one ``Host``, ``400
MALFORMED_REQUEST``. The rest the app answers as it answers any request: the pins
say what it answers, what it logs and what it stores. One pins a fault as it is:
a body has no time-out, so a client that trickles one holds a thread of its worker
for as long as it likes, past every deadline.

Heads, on the other hand, are read off the app's threads: two hundred clients that
trickle theirs hold no thread, and ``/healthz`` answers meanwhile.

Two servers, each shared by the module's tests: two workers as configured by
default, and one worker (two threads) whose head deadline is 2 s
(``REFAPI_WORKER_TIMEOUT=4``) for the requests that stall.
"""

from __future__ import annotations

import contextlib
import gzip
import http.client
import json
import select
import socket
import threading
import time
import uuid
from dataclasses import dataclass

import pytest

from tests.e2e.conftest import shared
from tests.e2e.harness import as_admin, exchange, raw_request, wait_until
from tests.e2e.test_framing import (
    ARTICLE,
    BROKEN,
    DEADLINE,
    JSON,
    SHORT_TIMEOUT,
    STALLED,
    WORKER_TIMEOUT,
    continued_when_read,
    head_then_wait,
    trickle,
)
from tests.e2e.test_http import (
    FIELDS_LIMIT,
    HOSTS,
    REFUSED,
    answers_to_two_pipelined,
    field_of,
    fields_of,
    request_line_of,
    with_fields,
)

pytest.importorskip("granian", reason="Granian (the extra fast) is not installed")
pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def granian(tmp_path_factory, shared_servers):
    """Two workers, the default settings (a head's deadline of 15 s)."""
    yield from shared(tmp_path_factory, shared_servers, workers=2, server="granian")


@pytest.fixture(scope="module")
def short_timeout(tmp_path_factory, shared_servers):
    """One worker, so two threads (REFAPI_THREADS), and a head's deadline of 2 s."""
    yield from shared(
        tmp_path_factory, shared_servers, workers=1, env=SHORT_TIMEOUT,
        server="granian",
    )  # fmt: skip


# Who answers: Granian itself (hyper's empty refusal), refapi's layer around the
# app on Granian (its refusal: the code, a new request id), or the app (its error
# code, or None for a success).
GRANIAN = "Granian"
LENGTH_REQUIRED = "LENGTH_REQUIRED"  # refapi's layer: a body in a transfer coding
NO_ONE_HOST = "MALFORMED_REQUEST (Host)"  # refapi's layer: not exactly one Host
NO_HOST = "MALFORMED_REQUEST (not a host)"  # refapi's layer: Host no host[:port]
EXPECTATION = "EXPECTATION_FAILED"  # refapi's layer: an Expect but 100-continue
BY_THE_LAYER = {
    LENGTH_REQUIRED: "LENGTH_REQUIRED",
    NO_ONE_HOST: "MALFORMED_REQUEST",
    NO_HOST: "MALFORMED_REQUEST",
    EXPECTATION: "EXPECTATION_FAILED",
}
GRANIANS_HEADERS = ["connection", "content-length", "date"]  # all of them


@dataclass(frozen=True)
class Does:
    status: int
    code: str | None = GRANIAN
    kept: bool = False  # the connection serves a next request


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]  # the names in lower case
    body: bytes
    kept: bool


# Where gunicorn refuses itself (REFUSED, each the error object), what Granian does.
ON_GRANIAN = {
    # Granian's limits are others (test_granians_own_limits).
    "request-line-over-the-limit": Does(200, None),
    "too-many-fields": Does(431),
    "a-field-over-the-limit": Does(200, None, kept=True),
    "conflicting-content-length": Does(400),
    # The same length twice: one length, served (RFC 9112 section 6.3 allows it).
    "repeated-content-length": Does(200, None, kept=True),
    # A transfer coding (test_content_length_beside_chunked_...): refused before
    # the body is read.
    "content-length-and-chunked": Does(411, LENGTH_REQUIRED),
    "invalid-header-name": Does(400),
    "field-without-colon": Does(400),
    "obsolete-line-folding": Does(400),
    "garbage-request-line": Does(400),
    "unknown-http-version": Does(400),
    "transfer-coding-not-ending-in-chunked": Does(400),
    "unknown-coding-alone": Does(400),
    # A coding before chunked (test_a_coding_before_chunked_is_length_required).
    "unknown-transfer-coding": Does(411, LENGTH_REQUIRED),
    **{
        f"{coding}-then-chunked": Does(411, LENGTH_REQUIRED)
        for coding in ("gzip", "deflate", "compress", "identity")
    },
    # test_without_a_host_or_with_two_it_is_400.
    "no-host": Does(400, NO_ONE_HOST),
    "two-hosts": Does(400, NO_ONE_HOST),
    # refapi's layer, as gunicorn's worker: a Host that is no host.
    **{
        f"host-{name}": Does(400, NO_HOST)
        for name in (
            "with-a-space",
            "ip-literal-none",
            "ip-literal-unclosed",
            "with-userinfo",
            "with-a-path",
            "port-not-digits",
            "in-http-1.0",
        )
    },  # fmt: skip
    # Granian hands on the first alone: the app cannot see there were two.
    "two-content-types": Does(200, None, kept=True),
    # Lines and targets of no HTTP/1.1 request: Granian reads most as one.
    "bare-line-feeds": Does(200, None, kept=True),
    "lower-case-method": Does(200, None, kept=True),
    "long-method": Does(405, "METHOD_NOT_ALLOWED", kept=True),
    "target-without-slash": Does(200, None, kept=True),  # read as "/"
    "authority-target": Does(200, None, kept=True),  # read as "/"
    "chunked-in-http-1.0": Does(400),
    "unknown-expectation": Does(417, EXPECTATION),  # Granian would serve it
}

# BROKEN (gunicorn: 400 MALFORMED_REQUEST each): every chunked one refused before
# its body is read (Granian would hand the app the bytes before the break as the
# whole body, and four of them would be stored); a body shorter than its
# Content-Length, the app's 400.
BROKEN_ON_GRANIAN = {
    "chunk-size-not-hex": Does(411, LENGTH_REQUIRED),
    "chunk-without-crlf": Does(411, LENGTH_REQUIRED),
    "bad-chunk-extension": Does(411, LENGTH_REQUIRED),
    "chunk-cut-short": Does(411, LENGTH_REQUIRED),
    "no-last-chunk": Does(411, LENGTH_REQUIRED),
    "shorter-than-content-length": Does(400, "MALFORMED_REQUEST"),  # the app counts
}


def new_id() -> str:
    return f"granian-{uuid.uuid4().hex}"


def with_id(raw: bytes, request_id: str) -> bytes:
    """``raw`` with an ``X-Request-Id`` after its first line, ended as that line
    is (CRLF, or a bare LF)."""
    line, sep, rest = raw.partition(b"\n")
    ending = b"\r\n" if line.endswith(b"\r") else b"\n"
    return line + sep + b"X-Request-Id: %s" % request_id.encode() + ending + rest


def chunked(body: bytes) -> bytes:
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


def ask(server, raw: bytes, half_close: bool = False) -> Answer:
    """Send ``raw`` on a new connection (then stop sending, if ``half_close``) and
    read the answer; then, unless half-closed, ask the same connection for
    ``/healthz``: ``kept`` if it answers, not if the server has closed it."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        with contextlib.suppress(ConnectionError):  # refused before all was sent
            sock.sendall(raw)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        response = http.client.HTTPResponse(sock, method="GET")
        response.begin()
        body = response.read()
        kept = False
        if not half_close:
            try:
                sock.sendall(raw_request("GET", "/healthz"))
                following = http.client.HTTPResponse(sock, method="GET")
                following.begin()
                kept = following.status == 200
            except ConnectionError:  # closed (RemoteDisconnected is one) or reset
                pass
    headers = {name.lower(): value for name, value in response.getheaders()}
    return Answer(response.status, headers, body, kept)


def logged(server, request_id: str) -> list[dict]:
    return [line for line in server.requests() if line["requestId"] == request_id]


def lines_once_marked(server) -> int:
    """How many request lines the app has logged, once a request sent now has been
    (its line among them): what the app had seen before is logged by then."""
    marker = new_id()
    health = raw_request("GET", "/healthz", {"X-Request-Id": marker})
    assert exchange(server, health, admin=False).status == 200
    wait_until(lambda: logged(server, marker), 5, "the marker's request line")
    return len(server.requests())


def stored(server) -> set[tuple[int, str]]:
    """The articles stored: (id, title) each (the module stores fewer than 100)."""
    listed = exchange(server, raw_request("GET", "/v1/articles?limit=100"))
    page = json.loads(listed.body)
    assert listed.status == 200 and page["nextCursor"] is None
    return {(article["id"], article["title"]) for article in page["data"]}


def check_whose(
    server, answer: Answer, does: Does, request_id: str, lines: int
) -> None:
    """Granian's own empty refusal, the app never told (``lines``: how many request
    lines it had logged before, marked); or the app's answer, and its line."""
    if does.code == GRANIAN:
        assert (answer.body, sorted(answer.headers)) == (b"", GRANIANS_HEADERS)
        assert answer.headers["connection"] == "close"
        assert lines_once_marked(server) == lines + 1  # the marker's alone
        assert not logged(server, request_id)
        return
    if does.code in BY_THE_LAYER:
        # The error object, a request id of its own, the connection closed, a line
        # with no route: as gunicorn's worker refuses.
        assert json.loads(answer.body)["code"] == BY_THE_LAYER[does.code]
        assert answer.headers["connection"] == "close"
        own = answer.headers["x-request-id"]
        assert own != request_id
        wait_until(lambda: logged(server, own), 5, "the refusal's line")
        [line] = logged(server, own)
        assert (line["status"], line["route"]) == (does.status, None)
        return
    assert answer.headers["x-request-id"] == request_id
    if does.code is not None:
        assert json.loads(answer.body)["code"] == does.code
    wait_until(lambda: logged(server, request_id), 5, "the request line")
    [line] = logged(server, request_id)
    assert line["status"] == does.status


def test_every_refusal_of_gunicorn_is_pinned_on_granian():
    assert list(ON_GRANIAN) == [name for name, *_ in REFUSED]
    assert list(BROKEN_ON_GRANIAN) == [param.id for param in BROKEN]


@pytest.mark.parametrize(
    ("raw", "does"),
    [pytest.param(raw, ON_GRANIAN.get(name), id=name) for name, raw, *_ in REFUSED],
)
def test_what_gunicorn_refuses_granian_does_as_pinned(granian, raw, does):
    before, lines = stored(granian), lines_once_marked(granian)
    request_id = new_id()
    answer = ask(granian, with_id(as_admin(granian, raw), request_id))
    assert (answer.status, answer.kept) == (does.status, does.kept), answer
    check_whose(granian, answer, does, request_id, lines)
    assert stored(granian) == before


@pytest.mark.parametrize(
    ("headers", "body", "half_close", "does"),
    [pytest.param(*p.values, BROKEN_ON_GRANIAN.get(p.id), id=p.id) for p in BROKEN],
)
def test_broken_framing_reaches_the_app_as_pinned(
    granian, headers, body, half_close, does
):
    before, lines = stored(granian), lines_once_marked(granian)
    request_id = new_id()
    head = raw_request("POST", "/v1/articles", {**headers, "X-Request-Id": request_id})
    answer = ask(granian, as_admin(granian, head) + body, half_close)
    assert (answer.status, answer.kept) == (does.status, does.kept), answer
    check_whose(granian, answer, does, request_id, lines)
    added = stored(granian) - before
    if does.status == 201:
        assert added == {(json.loads(answer.body)["id"], "framed")}
    else:
        assert added == set()


def test_a_chunked_body_cut_short_is_refused_not_read_as_whole(granian):
    """The chunk says 52 bytes, 37 arrive and the client stops sending: Granian
    would hand the app the 37 as the whole body, a form of other values (gunicorn:
    400 MALFORMED_REQUEST). Refused before the body is read: 411."""
    sent = b"grant_type=client_credentials&scope=read+write+admin"
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "Transfer-Encoding": "chunked",
    }
    cut = b"%x\r\n%s" % (len(sent), sent[: sent.index(b"+")])
    answer = ask(granian, raw_request("POST", "/lab/anything", headers) + cut, True)
    assert answer.status == 411
    assert json.loads(answer.body)["code"] == "LENGTH_REQUIRED"


def test_content_length_beside_chunked_is_411_and_the_connection_closes(
    granian,
):
    """gunicorn: 400. Granian would read the chunks and hand the app no
    Content-Length; refused before, and the connection is closed after the answer
    whichever field comes first, so what follows is never read as a request."""
    smuggled = b"GET /v1/todos/1 HTTP/1.1\r\nHost: x\r\n\r\n"
    for fields in (
        {"Content-Length": "5", "Transfer-Encoding": "chunked"},
        {"Transfer-Encoding": "chunked", "Content-Length": "5"},
    ):
        before = stored(granian)
        headers = {**JSON, **fields, "Connection": "keep-alive"}
        raw = raw_request("POST", "/v1/articles", headers) + chunked(ARTICLE)
        answer = ask(granian, as_admin(granian, raw) + smuggled)
        assert (answer.status, answer.kept) == (411, False)
        assert stored(granian) == before


def test_a_coding_before_chunked_is_length_required(granian):
    """gunicorn: 501 NOT_IMPLEMENTED. Granian would hand the app the body still
    coded; refused before it is read, and nothing stored."""
    zipped = gzip.compress(ARTICLE)
    before = stored(granian)
    for coding in ("gzip, chunked", "br, chunked", "identity, chunked"):
        headers = {**JSON, "Transfer-Encoding": coding}
        raw = raw_request("POST", "/v1/articles", headers, chunked(zipped))
        answer = ask(granian, as_admin(granian, raw))
        assert answer.status == 411
        assert json.loads(answer.body)["code"] == "LENGTH_REQUIRED"
    assert stored(granian) == before


def test_without_a_host_or_with_two_it_is_400(granian):
    """As on gunicorn: 400 MALFORMED_REQUEST (Granian hands on none as an empty
    Host, two joined by a comma). HTTP/1.0 needs none."""
    get = b"GET /lab/anything HTTP/1.1\r\n"
    none = ask(granian, get + b"Connection: close\r\n\r\n")
    two = ask(granian, get + b"Host: a.example\r\nHost: b.example\r\n\r\n")
    for answer in (none, two):
        assert answer.status == 400
        assert json.loads(answer.body)["details"]["reason"] == (
            "an HTTP/1.1 request needs one Host header field"
        )
    old = ask(granian, b"GET /lab/anything HTTP/1.0\r\n\r\n")
    assert old.status == 200


def test_a_field_value_beyond_ascii_reaches_the_app_empty(granian):
    """gunicorn hands a value with bytes beyond ASCII (obs-text) on as latin-1 text
    (PEP 3333), which the lab echoes; Granian hands it on empty, so the app cannot
    tell it from an empty one, and a Cookie field so written carries no cookie."""
    head = b"GET /lab/headers HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    answer = ask(granian, head + b"X-A: h\xc3\xa9llo\r\nX-B: plain\r\n\r\n")
    echoed = json.loads(answer.body)["headers"]
    assert (echoed["X-A"], echoed["X-B"]) == ("", "plain")
    head = head.replace(b"/lab/headers", b"/lab/cookies")
    answer = ask(granian, head + b"Cookie: a=\xff\xfe; b=1\r\n\r\n")
    assert json.loads(answer.body) == {"cookies": {}}


@pytest.mark.parametrize("host", HOSTS)
def test_a_host_rfc_3986_allows_is_served(granian, host):
    raw = b"GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host
    assert ask(granian, raw).status == 200


def test_pipelined_requests_are_answered_in_order(granian):
    """docs/operating.md, "Two servers": Granian keeps the connection open."""
    received = answers_to_two_pipelined(granian.port)
    assert received.count(b"HTTP/1.1 200") == 2


def test_a_content_length_past_two_to_the_64_is_granians_own_400(granian):
    headers = {"Content-Type": "application/json", "Content-Length": str(2**64)}
    answer = ask(granian, raw_request("POST", "/v1/articles", headers))
    assert (answer.status, answer.body, answer.kept) == (400, b"", False)
    assert sorted(answer.headers) == GRANIANS_HEADERS


# The request target's limit (the http crate's): one byte more is 414.
TARGET_LIMIT = 65534
REQUEST_LINE_BESIDES = len(b"GET  HTTP/1.1")
# hyper's limit on a head (Granian's HTTP1Settings.max_buffer_size, 417792 bytes by
# default) is checked as the reads come: a head under it is always read, one of
# twice it never; between, it depends on how the bytes arrive.
HEAD_READ, HEAD_REFUSED = 400_000, 1 << 20


def test_granians_own_limits(granian):
    """gunicorn's (test_http.py): a request line of 4094 bytes, 100 fields of 8190.
    Granian's: a request target of 65534 bytes (414 past it), 100 fields (431
    past), and a field as long as the head may be."""

    def line(target: int) -> bytes:
        return request_line_of(target + REQUEST_LINE_BESIDES)

    def head_of(length: int) -> bytes:
        fields = [b"Host: x", b"Connection: close"]
        besides = len(with_fields([*fields, b""]))
        return with_fields([*fields, field_of(length - besides + 2)])

    assert len(head_of(HEAD_READ)) == HEAD_READ
    served = [
        line(TARGET_LIMIT), with_fields(fields_of(FIELDS_LIMIT)), head_of(HEAD_READ)
    ]  # fmt: skip
    assert [ask(granian, raw).status for raw in served] == [200] * 3
    over = [
        (line(TARGET_LIMIT + 1), 414),
        (with_fields(fields_of(FIELDS_LIMIT + 1)), 431),
        (head_of(HEAD_REFUSED), 431),
    ]
    for raw, status in over:
        answer = ask(granian, raw)
        assert (answer.status, answer.body, answer.kept) == (status, b"", False)
        assert sorted(answer.headers) == GRANIANS_HEADERS


@pytest.mark.parametrize(
    ("version", "status_line"),
    [(b"1.0", b"HTTP/1.0 200 OK"), (b"1.2", b"HTTP/1.1 400 Bad Request"),
     (b"1.9", b"HTTP/1.1 400 Bad Request")],
)  # fmt: skip
def test_a_later_http_1_x_is_refused(granian, version, status_line):
    """gunicorn answers HTTP/1.2 and 1.9 in HTTP/1.1 (test_http.py); Granian
    refuses them, its empty 400. HTTP/1.0 is answered in HTTP/1.0 by both."""
    host = b"" if version == b"1.0" else b"Host: x\r\n"
    request = b"GET /v1/todos/1 HTTP/%s\r\n%sConnection: close\r\n\r\n" % (
        version,
        host,
    )
    head, _, body = head_then_wait(granian, request).partition(b"\r\n\r\n")
    [line, *fields] = head.split(b"\r\n")
    assert line == status_line
    if b" 400 " in line:
        names = sorted(field.partition(b":")[0].decode() for field in fields)
        assert (names, body) == (GRANIANS_HEADERS, b"")


EXPECTING = [
    pytest.param({**JSON, "Content-Length": str(2 << 20)}, 413, id="too-large"),
    pytest.param({"Content-Type": "text/plain", "Content-Length": "5"}, 415,
                 id="unsupported-type"),
    pytest.param({**JSON, "Content-Length": "5", "Authorization": "Bearer nope"}, 401,
                 id="bad-token"),
]  # fmt: skip


@pytest.mark.parametrize(("headers", "status"), EXPECTING)
def test_expect_100_continue_refused_from_the_head_gets_no_100(
    granian, headers, status
):
    """As on gunicorn (test_framing.py): the final answer, never an invitation."""
    fields = {**headers, "Expect": "100-continue"}
    head = as_admin(granian, raw_request("POST", "/v1/articles", fields))
    answer = head_then_wait(granian, head, 1)
    assert answer.startswith(b"HTTP/1.1 %d " % status), answer[:200]
    assert b"100 Continue" not in answer


def test_expect_100_continue_is_answered_when_the_body_is_read(granian):
    continued_when_read(granian)


HEADS = [param for param in STALLED if param.id.startswith("head-")]
BODIES = [param for param in STALLED if param.id.startswith("body-")]


@pytest.mark.parametrize(("parts", "pause"), HEADS)
def test_a_head_that_stalls_or_trickles_is_closed_at_the_deadline(
    short_timeout, parts, pause
):
    """gunicorn: 408 REQUEST_TIMEOUT at the deadline. Granian closes the connection
    then, saying nothing, and the app never sees the request."""
    server = short_timeout
    before = lines_once_marked(server)
    answer, seconds = trickle(server, list(parts), pause)
    assert answer == b""
    assert DEADLINE - 0.1 <= seconds < DEADLINE + 1.5
    assert lines_once_marked(server) == before + 1  # the marker's alone


@pytest.mark.parametrize(("parts", "pause"), BODIES)
def test_a_body_that_stalls_or_trickles_is_waited_for_past_the_deadline(
    short_timeout, parts, pause
):
    """gunicorn: 408 by the deadline. Granian puts no time-out on a body: nothing
    comes back while the client holds the connection; once it stops sending, the
    app finds the body short, 400 MALFORMED_REQUEST, and nothing is stored."""
    server = short_timeout
    [worker] = server.serving_pids()
    before = stored(server)
    request_id = new_id()
    parts = [as_admin(server, with_id(parts[0], request_id)), *parts[1:]]
    sent = b"".join(parts).partition(b"\r\n\r\n")[2]
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        began = time.monotonic()
        for part in parts:
            sock.sendall(part)
            assert not select.select([sock], [], [], pause)[0]
        # By when gunicorn has answered 408, Granian has said nothing.
        left = began + DEADLINE + 1.5 - time.monotonic()
        assert not select.select([sock], [], [], max(left, 0))[0]
        sock.shutdown(socket.SHUT_WR)
        response = http.client.HTTPResponse(sock, method="POST")
        response.begin()
        error = json.loads(response.read())
    assert response.status == 400 and error["code"] == "MALFORMED_REQUEST"
    assert error["details"] == {"reason": f"{len(sent)} of 100 bytes arrived"}
    wait_until(lambda: logged(server, request_id), 5, "the request line")
    [line] = logged(server, request_id)
    assert line["durationMs"] >= (DEADLINE + 1.5) * 1000 - 100
    assert stored(server) == before and server.serving_pids() == {worker}


def test_two_trickled_bodies_hold_both_threads_past_every_deadline(short_timeout):
    """No time-out on a body: two clients that trickle one each hold their
    worker's two threads until their last byte, past the head's deadline and the
    worker timeout, and ``/healthz`` waits for a thread meanwhile; each body
    arrives whole and is stored. (``100 Continue``, sent when the app starts
    reading a body, says when the threads are held.)"""
    server = short_timeout
    before = stored(server)
    headers = {**JSON, "Content-Length": str(len(ARTICLE)), "Expect": "100-continue"}
    head = as_admin(server, raw_request("POST", "/v1/articles", headers))
    address = ("127.0.0.1", server.port)
    with contextlib.ExitStack() as stack:
        began = time.monotonic()
        bodies = [
            stack.enter_context(socket.create_connection(address, timeout=10))
            for _ in range(2)
        ]
        for sock in bodies:
            sock.sendall(head)
            assert select.select([sock], [], [], 5)[0], "no 100 Continue"
            assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        probe = stack.enter_context(socket.create_connection(address, timeout=10))
        probe.sendall(raw_request("GET", "/healthz"))
        waiting = [probe, *bodies]
        assert not select.select(waiting, [], [], 1.5)[0]  # no thread for it
        pause = (WORKER_TIMEOUT + 0.5 - (time.monotonic() - began)) / len(ARTICLE)
        for byte in range(len(ARTICLE) - 1):
            for sock in bodies:
                sock.sendall(ARTICLE[byte : byte + 1])
            assert not select.select(waiting, [], [], max(pause, 0.05))[0]
        assert time.monotonic() - began > WORKER_TIMEOUT
        for sock in bodies:
            sock.sendall(ARTICLE[-1:])
        answers = []
        for sock in [*bodies, probe]:
            response = http.client.HTTPResponse(sock, method="POST")
            response.begin()
            answers.append((response.status, json.loads(response.read())))
    [first, second, health] = answers
    assert (first[0], second[0], health[0]) == (201, 201, 200)
    added = {(first[1]["id"], "framed"), (second[1]["id"], "framed")}
    assert stored(server) - before == added


CLIENTS, PROBES = 200, 10
PROBE_SECONDS = 3.0  # an answer's bound, generous: one comes in milliseconds


def test_two_hundred_trickled_heads_hold_no_thread(granian):
    """Two hundred clients trickle their heads, a byte at a time, on two workers of
    two threads each; ten probes of /healthz meanwhile are answered at once, and
    each trickled request too once its head is whole."""
    head = raw_request("GET", "/healthz")
    address = ("127.0.0.1", granian.port)
    answered: list[tuple[int, float]] = []

    def probe() -> None:
        for _ in range(PROBES):
            started = time.monotonic()
            with socket.create_connection(address, timeout=PROBE_SECONDS) as sock:
                sock.sendall(head)
                response = http.client.HTTPResponse(sock, method="GET")
                response.begin()
                response.read()
            answered.append((response.status, time.monotonic() - started))
            time.sleep(0.25)  # spread over the trickle, asserting nothing

    with contextlib.ExitStack() as stack:
        clients = [
            stack.enter_context(socket.create_connection(address, timeout=10))
            for _ in range(CLIENTS)
        ]
        prober = threading.Thread(target=probe)
        prober.start()
        for byte in range(len(head) - 1):
            for sock in clients:
                sock.sendall(head[byte : byte + 1])
            time.sleep(0.05)  # the pause between a client's bytes
        prober.join(PROBES * (PROBE_SECONDS + 0.5))
        assert not prober.is_alive()
        # Every head still lacks its last byte: the probes came meanwhile.
        assert [status for status, _ in answered] == [200] * PROBES
        assert max(seconds for _, seconds in answered) < PROBE_SECONDS
        statuses = []
        for sock in clients:
            sock.sendall(head[-1:])
        for sock in clients:
            response = http.client.HTTPResponse(sock, method="GET")
            response.begin()
            response.read()
            statuses.append(response.status)
    assert statuses == [200] * CLIENTS
