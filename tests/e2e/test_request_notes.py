"""The echo's notes over real servers (lab/request_notes.py; docs/lab.md, "Notes
on your request"): the ordinary requests of curl, requests and httpx earn none,
on gunicorn and on Granian, whatever each client adds of its own (User-Agent,
Accept, Accept-Encoding, Connection, a Content-Length and a Content-Type with a
body); and a field sent twice reaches the app as the notes read it, joined."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator

import httpx
import pytest
import requests

from tests.e2e.conftest import shared
from tests.e2e.harness import SERVERS, GunicornServer, exchange

pytestmark = pytest.mark.e2e

JSON_BODY = {"title": "Hello", "tags": ["a", "b"]}
FORM = {"a": "1", "b": "two words"}
BYTES = bytes(range(256))
OCTETS = {"Content-Type": "application/octet-stream"}


@pytest.fixture(scope="module", params=SERVERS)
def echo_host(request, tmp_path_factory, shared_servers) -> Iterator[GunicornServer]:
    yield from shared(tmp_path_factory, shared_servers, workers=1, server=request.param)


def _curl(*args: str, body: bytes | None = None) -> Callable[[str], bytes]:
    def send(url: str) -> bytes:
        done = subprocess.run(
            ["curl", "-sS", "--max-time", "10", *args, url],
            input=body, capture_output=True, timeout=20, check=True,
        )  # fmt: skip
        return done.stdout

    return send


# Each client's ordinary requests: a GET with a query, a JSON body, a form, bytes
# declared as such, a DELETE.
SENDS: dict[str, Callable[[str], bytes]] = {
    "requests GET": lambda url: requests.get(url + "?q=1", timeout=10).content,
    "requests JSON": lambda url: requests.post(url, json=JSON_BODY, timeout=10).content,
    "requests form": lambda url: requests.post(url, data=FORM, timeout=10).content,
    "requests bytes": lambda url: (
        requests.put(url, data=BYTES, headers=OCTETS, timeout=10).content
    ),
    "requests DELETE": lambda url: requests.delete(url, timeout=10).content,
    "httpx GET": lambda url: httpx.get(url, params={"q": "1"}, timeout=10).content,
    "httpx JSON": lambda url: httpx.post(url, json=JSON_BODY, timeout=10).content,
    "httpx form": lambda url: httpx.post(url, data=FORM, timeout=10).content,
    "httpx bytes": lambda url: (
        httpx.put(url, content=BYTES, headers=OCTETS, timeout=10).content
    ),
    "httpx DELETE": lambda url: httpx.delete(url, timeout=10).content,
    "curl GET": _curl(),
    "curl JSON": _curl(
        "-H",
        "Content-Type: application/json",
        "--data-binary",
        "@-",
        body=json.dumps(JSON_BODY).encode(),
    ),  # fmt: skip
    "curl form": _curl("-d", "a=1", "-d", "b=two+words"),
    "curl bytes": _curl(
        "-X",
        "PUT",
        "-H",
        "Content-Type: application/octet-stream",
        "--data-binary",
        "@-",
        body=BYTES,
    ),  # fmt: skip
    "curl DELETE": _curl("-X", "DELETE"),
}


@pytest.mark.parametrize("send", SENDS.values(), ids=SENDS)
def test_a_well_formed_request_of_a_real_client_earns_no_note(echo_host, send):
    echo = json.loads(send(echo_host.url("/lab/anything")))
    assert echo["notes"] == [], echo


def test_a_field_sent_twice_reaches_the_app_joined_and_is_noted(echo_host):
    twice = (
        b"GET /lab/anything HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        b"Max-Forwards: 1\r\nMax-Forwards: 2\r\n\r\n"
    )
    answer = exchange(echo_host, twice, admin=False)
    echo = json.loads(answer.body)
    assert answer.status == 200
    assert [note["subject"] for note in echo["notes"]] == ["Max-Forwards"]
