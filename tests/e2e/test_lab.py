"""The lab over gunicorn (/lab/): delays are slow work, which holds at most all but
one of the host's slots, across its workers; the echo shows what gunicorn handed
over; an old path answers 308 to its new one; a Digest nonce one worker made is
good on every other (these three on the module's shared server, ``server``). The
slow work and the streams run on Granian too (the streams' tests on a host they
share, ``slow_host``).

``simultaneous`` puts a delay more than the host has slots in flight at once
(four on gunicorn's three sync workers): all but one slot hold the host's share of
slow work and wait; the others are refused at once, without a worker tied up for
them (docs/lab.md, "Delays").
"""

from __future__ import annotations

import http.client
import itertools
import json
import socket
import time
from typing import Any

import pytest

from tests.e2e.conftest import shared
from tests.e2e.harness import (
    SERVERS,
    exchange,
    http_pool,
    raw_request,
    simultaneous,
    wait_until,
    workers_that_served,
)
from tests.lab.test_digest import PARAMETER, credentials

pytestmark = pytest.mark.e2e


# A host's workers for slow work, on each server: three sync workers on gunicorn,
# so three slots; two workers of two threads on Granian (its default,
# docs/operating.md, "Two servers"), so four. Slow work holds all but one of them
# on either, and on Granian one thread of each worker at most: the counts below
# follow ``server.slow_share``.
SLOW_HOST = {"gunicorn": 3, "granian": 2}
SLOW_ENV = {"REFAPI_LAB_MAX_DELAY": "2"}
# The streams' host: a stream lasts at most this (docs/lab.md, "Streams"), long
# enough to hold a slot while Granian is tried until it deals one to each worker.
STREAMS_ENV = {"REFAPI_LAB_MAX_DELAY": "8"}


@pytest.fixture(scope="module", params=SERVERS)
def slow_host(request, tmp_path_factory, shared_servers):
    """A host for the streams' tests (each asks the lab's delay bucket, ten a
    minute from an address, for four slow answers at most)."""
    yield from shared(
        tmp_path_factory, shared_servers, server=request.param,
        workers=SLOW_HOST[request.param], env=STREAMS_ENV,
    )  # fmt: skip


def test_delays_beyond_the_hosts_share_are_refused_at_once_across_workers(
    gunicorn, server_name
):
    server = gunicorn(workers=SLOW_HOST[server_name], env=SLOW_ENV, server=server_name)
    request = raw_request("GET", "/lab/delay/2")
    answers = simultaneous(server, [request] * (server.slots + 1), admin=False)
    statuses = sorted(answer.status for answer in answers)
    if server.threads == 1:
        # One queue for the host (gunicorn's): the share is taken, the rest refused.
        assert statuses == [200] * server.slow_share + [429, 429]
    else:
        # Each worker answers what the kernel dealt it: the first delay dealt to a
        # worker takes its thread to spare, the rest dealt there are refused,
        # whichever worker they were dealt to (Granian). A delay's line is written
        # once the server closes its answer, which Granian may do after the client
        # has read it all (once, in a loaded CI run, a worker's 200 was not logged
        # yet): wait for a line for each.
        def delay_lines() -> list[dict]:
            return [line for line in server.requests()
                    if line["route"] == "/lab/delay/{seconds}"]  # fmt: skip

        wait_until(lambda: len(delay_lines()) == len(answers), 5, "each delay's line")
        served = delay_lines()
        by_worker = {line["pid"]: [] for line in served}
        for line in served:
            by_worker[line["pid"]].append(line["status"])
        assert all(sorted(got)[0] == 200 for got in by_worker.values())
        assert all(got.count(200) == server.threads - 1 for got in by_worker.values())
        assert statuses.count(200) == len(by_worker) <= server.slow_share
    for answer in answers:
        body = json.loads(answer.body)
        if answer.status == 200:
            assert body["seconds"] == 2
            continue
        assert body["code"] == "RATE_LIMITED"
        retry_after = int(answer.getheader("Retry-After"))
        assert 1 <= retry_after <= 2 and body["details"]["retry_after"] == retry_after
    # The slots were let go when the delays ended: the next one is served.
    again = exchange(server, raw_request("GET", "/lab/delay/0"), admin=False)
    assert again.status == 200


def test_the_echo_shows_the_headers_as_gunicorn_handed_them(server):
    raw = raw_request(
        "POST", "/lab/anything?x=1",
        {"x-lower-case": "kept", "X-API-Key": "never-shown", "Content-Type": "a/b"},
        b"body",
    )  # fmt: skip
    answer = exchange(server, raw, admin=False)
    assert answer.status == 200
    echo = json.loads(answer.body)
    assert echo["headers"]["X-Lower-Case"] == "kept"
    assert echo["headers"]["X-Api-Key"] == "[redacted]"
    assert b"never-shown" not in answer.body
    assert (echo["data"], echo["origin"], echo["credentials"]) == (
        "body", "127.0.0.1", ["api_key"],
    )  # fmt: skip


def test_the_echo_answers_a_path_below_it_as_sent_over_gunicorn(server):
    # The path as the client wrote it, UTF-8 and an encoded slash included: the
    # URL is the IRI httpbin's shows.
    raw = raw_request("DELETE", "/lab/anything/caf%C3%A9/a%2Fb?q=%C3%A9")
    answer = exchange(server, raw, admin=False)
    assert answer.status == 200
    echo = json.loads(answer.body)
    assert echo["method"] == "DELETE" and echo["args"] == {"q": "é"}
    assert echo["url"] == "http://127.0.0.1/lab/anything/café/a/b?q=é"


def test_an_old_path_answers_308_over_gunicorn_and_reads_no_credential(server):
    bogus = {"Authorization": "Bearer nonsense"}
    moved = exchange(server, raw_request("PUT", "/api/echo?x=1", bogus, b"kept"),
                     admin=False)  # fmt: skip
    assert moved.status == 308  # never 401: the lab reads no credential
    assert moved.getheader("Location") == "/lab/anything?x=1"
    assert moved.getheader("Deprecation") == "@1795910400"
    assert moved.getheader("Sunset") == "Sun, 31 May 2027 00:00:00 GMT"
    followed = raw_request("PUT", moved.getheader("Location"), bogus, b"kept")
    answer = exchange(server, followed, admin=False)
    assert answer.status == 200
    echo = json.loads(answer.body)
    assert (echo["method"], echo["data"], echo["credentials"]) == (
        "PUT", "kept", ["bearer"],
    )  # fmt: skip


def test_a_digest_nonce_one_worker_made_is_good_on_every_worker(server):
    # The lab stores no nonce: each worker checks one by its signature, under the
    # key every worker of the data shares (docs/lab.md, "Digest authentication").
    # The client's side is worked out with hashlib, as a client would. The
    # module's server has four workers.
    path = "/lab/digest-auth/auth-int/ada/s3cret/SHA-512-256-sess"
    with http_pool() as pool:
        first = pool.request("GET", server.url(path))
    assert first.status == 401
    assert first.headers["Set-Cookie"] == "fake=fake_value; Path=/lab/"
    asked = {
        name: quoted or token
        for name, quoted, token in PARAMETER.findall(first.headers["WWW-Authenticate"])
    }
    body = b'{"signed": true}'
    ids = [f"digest-{nc}" for nc in range(1, 13)]
    requests = [
        raw_request(
            "GET", path,
            {**credentials(asked, path, qop="auth-int", nc=nc, body=body),
             "X-Request-Id": f"digest-{nc}"},
            body,
        )
        for nc in range(1, 13)
    ]  # fmt: skip
    answers = simultaneous(server, requests, admin=False)
    assert [json.loads(a.body) for a in answers] == [
        {"authenticated": True, "user": "ada"}
    ] * 12
    assert len(workers_that_served(server, ids)) == 4
    assert server.log_failures() == []


def _opened(
    server, path: str, source: str = "127.0.0.1"
) -> tuple[http.client.HTTPConnection, Any]:
    """``path`` asked on a new connection from the loopback address ``source``."""
    connection = http.client.HTTPConnection(
        "127.0.0.1", server.port, timeout=10, source_address=(source, 0)
    )
    connection.request("GET", path)
    return connection, connection.getresponse()


def test_streams_are_written_as_they_are_made(slow_host):
    """docs/lab.md, "Streams": chunked, each part when it is made."""
    server = slow_host
    connection, lines = _opened(server, "/lab/stream/3")
    assert lines.getheader("Transfer-Encoding") == "chunked"
    assert lines.getheader("Content-Type") == "application/x-ndjson"
    assert [json.loads(line)["id"] for line in lines.read().splitlines()] == [0, 1, 2]
    connection.close()
    # Bytes in the chunks asked: the framing's chunk sizes, read off the wire.
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        raw.sendall(b"GET /lab/stream-bytes/10?chunk_size=4&seed=1 HTTP/1.1\r\n"
                    b"Host: x\r\nConnection: close\r\n\r\n")  # fmt: skip
        wire = b"".join(iter(lambda: raw.recv(65536), b""))
    head, _, framed = wire.partition(b"\r\n\r\n")
    # A field's name in any case (RFC 9110, 5.1): Granian writes it in lower case.
    assert b"\r\ntransfer-encoding: chunked\r\n" in head.lower() + b"\r\n"
    sizes = []
    while framed:  # RFC 9112 section 7.1: size in hex, CRLF, the data, CRLF
        size, _, framed = framed.partition(b"\r\n")
        sizes.append(int(size, 16))
        framed = framed[sizes[-1] + 2 :]
    assert sizes == [4, 4, 2, 0]
    # Events a second apart, each due a second after the last from the moment the
    # answer began, which is after `started`: the last cannot come sooner than two
    # seconds after it. The first comes long before the last, as a buffered answer
    # would not; how long is two seconds less what a loaded machine takes to hand
    # the client its first line (0.14 s once, with two suites at once), so at least
    # one second.
    started = time.monotonic()
    connection, events = _opened(server, "/lab/sse?count=3&delay=1")
    assert events.readline() == b"retry: 1000\n"
    first = time.monotonic()
    rest = events.read().decode()
    last = time.monotonic()
    assert rest.count("event: tick") == 3
    assert last - started >= 2.0  # two pauses of a second
    assert last - first >= 1.0  # the first line written when it was made
    connection.close()
    # A drip says its length first, and sends every byte it says.
    connection, drip = _opened(server, "/lab/drip?duration=0.5&numbytes=5")
    assert drip.getheader("Content-Length") == "5" and drip.read() == b"*****"
    connection.close()


def test_the_rest_answers_while_slow_streams_hold_the_host_s_share(slow_host):
    """docs/lab.md, "Streams": all slots but one for slow work (two of three on
    gunicorn), on Granian one thread of each of its two workers; one more slow
    stream is refused at once, and a probe is answered before the streams end."""
    server = slow_host
    opened: list = []
    # Each from an address of its own: its delay bucket (ten a minute) full, so a
    # 429 is the host's share, never the bucket's.
    addresses = (f"127.0.0.{n}" for n in itertools.count(2))
    try:
        # Granian deals each connection to a worker, not in turn: one dealt to a
        # worker whose thread to spare is taken is refused at once, and another
        # tried, a little later. Loaded runs dealt six, then thirty, in a row to
        # the worker that was running while the other waited for a core; tries
        # go on for up to 5 s, which the streams (7 s) outlast.
        deadline = time.monotonic() + 5
        while len(opened) < server.slow_share and time.monotonic() < deadline:
            stream = "/lab/sse?count=8&delay=1"
            connection, events = _opened(server, stream, next(addresses))
            if events.status == 429:
                assert server.threads > 1, "refused with the host's share not taken"
                events.read()
                connection.close()
                time.sleep(0.1)
                continue
            assert events.status == 200 and events.readline() == b"retry: 1000\n"
            opened.append((connection, events))
        assert len(opened) == server.slow_share
        connection, drip = _opened(server, "/lab/drip?delay=1", next(addresses))
        drip.read()
        connection.close()
        assert drip.status == 429
        probe = exchange(server, raw_request("GET", "/healthz"), admin=False)
        assert probe.status == 200
        for _, events in opened:
            assert not events.isclosed()  # still streaming when the probe was answered
            assert events.read().decode().count("event: tick") == 8
    finally:  # a failure above leaves no connection open for the next test
        for connection, _ in opened:
            connection.close()
