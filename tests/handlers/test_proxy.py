"""GET /api/proxy.php: real upstream servers on loopback, allow-listed with
``+private``, and the SSRF guard refusing every way of naming a private address."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import pytest
import webtest

from refapi import create_app
from tests.helpers import JSON_TYPE, assert_error, fresh_interpreter

BIG = 1_048_576 + 1


TRICKLE_SECONDS = 15.0  # how long a trickling upstream goes on if nobody stops it
TRICKLE_GAP = 0.1  # seconds between its bytes: far below any read time-out


class UpstreamServer(ThreadingHTTPServer):
    """A server of ``Upstream`` answers, with a ``release`` of its own: set, its
    slow answers end. Its own, so a module that ends its upstream never hurries
    another module's in the same process (a class attribute once did)."""

    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.release = threading.Event()


class Upstream(BaseHTTPRequestHandler):
    """One answer per path; HTTP/1.0, so a body without Content-Length ends at close."""

    server: UpstreamServer

    @property
    def release(self) -> threading.Event:
        return self.server.release

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = self.path.split("?")[0]
        if path == "/ok":
            self._send(200, {"hello": "world", "host": self.headers["Host"],
                             "target": self.path})  # fmt: skip
        elif path == "/via":  # what the proxy names itself as (RFC 9110 7.6.3)
            self._send(200, {"via": self.headers["Via"]})
        elif path == "/missing":
            self._send(404, {"error": "no such thing"})
        elif path == "/boom":
            self._send(500, {"error": "upstream broke"})
        elif path == "/reset":  # content a 205 may not carry (RFC 9110 15.3.6)
            self._send(205, {"reset": "the form"})
        elif path == "/nothing":
            self.send_response(204)
            self.end_headers()
        elif path == "/text":
            self._send_raw(200, b"plain words", "text/plain")
        elif path == "/surrogate":  # valid JSON text, but no UTF-8 can carry it
            self._send_raw(200, b'["\\ud800"]', "application/json")
        elif path == "/infinite":  # a number no JSON we write can carry
            self._send_raw(200, b"[1e999]", "application/json")
        elif path == "/lie":
            self._send_raw(200, b"<html></html>", "application/json")
        elif path == "/big":  # no Content-Length: only counting while reading sees it
            self._send_raw(200, b'"' + b"a" * BIG + b'"', "application/json", False)
        elif path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/ok")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/slow":
            self.release.wait(5)
            self._send(200, {"late": True})
        elif path == "/trickle":  # the headers, then a JSON string a byte at a time
            self.wfile.write(
                b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"
            )
            self._trickle(b'"' + b"a" * 1000, b'"')
        elif path == "/trickle-head":  # even the status line a byte at a time
            self._trickle(
                b"HTTP/1.0 200 OK\r\nX-Padding: " + b"a" * 1000, b"\r\n\r\n[]"
            )

    def _trickle(self, slowly: bytes, end: bytes) -> None:
        """Send ``slowly`` a byte every TRICKLE_GAP until TRICKLE_SECONDS have gone
        by, then ``end``; stop when the client has gone."""
        stop = time.monotonic() + TRICKLE_SECONDS
        try:
            for byte in slowly:
                if time.monotonic() > stop or self.release.wait(TRICKLE_GAP):
                    break
                self.wfile.write(bytes([byte]))
            self.wfile.write(end)
        except OSError:  # the proxy hung up: what the deadline is for
            pass

    def _send(self, status: int, body: object) -> None:
        self._send_raw(status, json.dumps(body).encode(), "application/json")

    def _send_raw(
        self, status: int, body: bytes, kind: str, length: bool = True
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        if length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def upstream() -> Iterator[int]:
    server = UpstreamServer(Upstream)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.release.set()
    server.shutdown()
    server.server_close()


def resolver(host: str, port: int) -> list[str]:
    """Names the tests make up; anything else goes to the system resolver."""
    names = {
        "public.example": ["93.184.215.14"],
        "inside.example": ["10.0.0.7"],
        "both.example": ["93.184.215.14", "192.168.1.20"],
        "up.example": ["127.0.0.1"],
        "metadata.example": ["169.254.169.254"],
        "metadata6.example": ["fd00:ec2::254"],
        "link.example": ["fe80::1"],
        "nat64.example": ["64:ff9b:1::a9fe:a9fe"],
        "mapped.example": ["::ffff:0:a9fe:a9fe"],
    }
    if host in names:
        return names[host]
    return [info[4][0] for info in socket.getaddrinfo(host, port)]


@pytest.fixture
def proxy_app(config, store, clock):
    def make(*allowed: str, **overrides) -> webtest.TestApp:
        configured = replace(config, proxy_allowed_hosts=allowed, **overrides)
        app = create_app(configured, store=store, clock=clock, resolve=resolver)
        return webtest.TestApp(app)

    return make


def fetch(app: webtest.TestApp, url: str):
    return app.get(f"/api/proxy.php?url={quote(url, safe='')}", expect_errors=True)


@pytest.mark.parametrize(
    ("path", "status", "body"),
    [
        ("/missing", 404, {"error": "no such thing"}),
        ("/boom", 500, {"error": "upstream broke"}),
    ],
)
def test_upstream_status_and_json_are_passed_on(
    proxy_app, upstream, path, status, body
):
    app = proxy_app("127.0.0.1+private")
    response = fetch(app, f"http://127.0.0.1:{upstream}{path}")
    assert response.status_int == status
    assert response.headers["Content-Type"] == JSON_TYPE
    assert response.json == body


@pytest.mark.parametrize(("path", "status"), [("/nothing", 204), ("/reset", 205)])
def test_a_status_without_content_is_passed_on_without_any(
    proxy_app, upstream, path, status
):
    # RFC 9110 15.3.5 and 15.3.6: neither a 204 nor a 205 carries content, whatever
    # the upstream sent with it.
    app = proxy_app("127.0.0.1+private")
    response = fetch(app, f"http://127.0.0.1:{upstream}{path}")
    assert (response.status_int, response.body) == (status, b"")
    assert "Content-Type" not in response.headers
    assert response.headers["Cache-Control"] == "no-store"


def test_json_passes_through_connected_to_the_checked_address(proxy_app, upstream):
    # up.example resolves (through the injected resolver only) to 127.0.0.1: the
    # connection goes to that address, with the name in Host.
    app = proxy_app(f"up.example:{upstream}+private")
    response = fetch(app, f"http://up.example:{upstream}/ok?q=1&r=two")
    assert response.status_int == 200
    assert response.headers["Content-Type"] == JSON_TYPE
    assert response.json == {
        "hello": "world",
        "host": f"up.example:{upstream}",
        "target": "/ok?q=1&r=two",
    }


@pytest.mark.parametrize(
    "path", ["/text", "/lie", "/big", "/redirect", "/surrogate", "/infinite"]
)
def test_not_json_oversize_or_redirect_is_502(proxy_app, upstream, path):
    response = fetch(
        proxy_app("127.0.0.1+private"), f"http://127.0.0.1:{upstream}{path}"
    )
    assert_error(response, 502, "UPSTREAM_ERROR")


def test_refused_connection_is_502(proxy_app):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    response = fetch(proxy_app("127.0.0.1+private"), f"http://127.0.0.1:{port}/")
    assert_error(response, 502, "UPSTREAM_ERROR")


def test_slow_upstream_is_504(proxy_app, upstream):
    app = proxy_app("127.0.0.1+private", proxy_read_timeout=0.2)
    response = fetch(app, f"http://127.0.0.1:{upstream}/slow")
    assert_error(response, 504, "UPSTREAM_TIMEOUT")


@pytest.mark.parametrize("path", ["/trickle", "/trickle-head"])
def test_a_trickling_upstream_is_504_at_the_total_deadline(proxy_app, upstream, path):
    # A byte every 0.1 s never trips a 10 s read time-out; only the deadline over
    # the whole fetch ends it.
    app = proxy_app("127.0.0.1+private", proxy_total_timeout=0.5)
    started = time.monotonic()
    response = fetch(app, f"http://127.0.0.1:{upstream}{path}")
    assert_error(response, 504, "UPSTREAM_TIMEOUT")
    assert 0.5 <= time.monotonic() - started < 2.0


def test_host_off_the_list_is_403(proxy_app, upstream):
    app = proxy_app("public.example", f"127.0.0.1:{upstream + 1}+private")
    for url in ("http://other.example/", f"http://127.0.0.1:{upstream}/ok"):
        response = fetch(app, url)
        assert_error(response, 403, "HOST_NOT_ALLOWED")


@pytest.mark.parametrize(
    ("entry", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1/"),
        ("localhost", "http://localhost/"),
        ("2130706433", "http://2130706433/"),
        ("0177.0.0.1", "http://0177.0.0.1/"),
        ("0x7f000001", "http://0x7f000001/"),
        ("127.1", "http://127.1/"),
        ("[::1]", "http://[::1]/"),
        ("[::ffff:127.0.0.1]", "http://[::ffff:127.0.0.1]/"),
        ("169.254.169.254", "http://169.254.169.254/latest/meta-data/"),
        ("[fd00::1]", "http://[fd00::1]/"),
        ("inside.example", "http://inside.example/"),
        ("both.example", "https://both.example/"),
        ("[64:ff9b::a00:1]", "http://[64:ff9b::a00:1]/"),
        ("100.64.0.1", "http://100.64.0.1/"),
    ],
)
def test_listed_host_at_a_forbidden_address_is_403(proxy_app, entry, url):
    response = fetch(proxy_app(entry), url)
    assert_error(response, 403, "HOST_NOT_ALLOWED")


@pytest.mark.parametrize(
    "host",
    [
        "169.254.169.254",
        "metadata.example",
        "metadata6.example",
        "link.example",
        "nat64.example",
        "mapped.example",
    ],
)
def test_metadata_and_link_local_are_refused_even_opted_in(proxy_app, host):
    response = fetch(proxy_app(f"{host}+private"), f"http://{host}/")
    assert_error(response, 403, "HOST_NOT_ALLOWED")


@pytest.mark.parametrize(
    "url",
    [
        "http://allowed.example@127.0.0.1/",
        "http://allowed.example:pw@allowed.example/",
        "file:///etc/passwd",
        "gopher://allowed.example/",
        "http:///nohost",
        "http://allowed.example:99999/",
        "http://allowed.example/ a",
        "",
    ],
)
def test_bad_url_is_400_on_field_url(proxy_app, url):
    response = fetch(proxy_app("allowed.example", "127.0.0.1+private"), url)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in response.json["details"]["errors"]] == ["url"]


def test_missing_url_is_400(proxy_app):
    response = proxy_app("allowed.example").get("/api/proxy.php", expect_errors=True)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert response.json["details"]["errors"][0]["field"] == "url"


# The service names itself in Via as refapi- and 8 hex digits of an HMAC of its
# secret key: no host, no address (docs/api.md, "The proxy").
OUR_VIA = re.compile(r"1\.1 refapi-[0-9a-f]{8}")


def pseudonym(app: webtest.TestApp, upstream: int) -> str:
    """The pseudonym ``app`` sends in Via, as an upstream sees it."""
    via = fetch(app, f"http://127.0.0.1:{upstream}/via").json["via"]
    assert OUR_VIA.fullmatch(via), via
    return via.removeprefix("1.1 ")


def test_the_fetch_names_the_service_in_via_by_its_secret(proxy_app, upstream):
    ours = pseudonym(proxy_app("127.0.0.1+private"), upstream)
    assert pseudonym(proxy_app("127.0.0.1+private"), upstream) == ours
    other = proxy_app("127.0.0.1+private", secret_key=b"another secret")
    assert pseudonym(other, upstream) != ours


def test_only_the_pseudonyms_of_a_clients_via_are_passed_on(proxy_app, upstream):
    # Hosts named by the client's own proxies stay here; a refapi pseudonym goes
    # on, so a loop through two services is seen by the first one it comes back to.
    app = proxy_app("127.0.0.1+private")
    ours = pseudonym(app, upstream)
    url = quote(f"http://127.0.0.1:{upstream}/via", safe="")
    via = "1.1 squid.corp.example, HTTP/1.1 refapi-0a1b2c3d (edge), 1.0 10.0.0.7"
    response = app.get(f"/api/proxy.php?url={url}", headers={"Via": via})
    assert response.json == {"via": f"1.1 refapi-0a1b2c3d, 1.1 {ours}"}


@pytest.mark.parametrize(
    "via",
    ["1.1 {ours}", "1.0 squid, 1.1 {ours}", "HTTP/1.1 {ours} (refapi)"],
    ids=["alone", "last", "with-protocol-name"],
)
def test_a_request_carrying_our_own_via_is_508_before_any_fetch(
    proxy_app, upstream, via
):
    app = proxy_app("127.0.0.1+private")
    ours = pseudonym(app, upstream)
    url = quote(f"http://127.0.0.1:{upstream}/slow", safe="")
    response = app.get(
        f"/api/proxy.php?url={url}",
        headers={"Via": via.format(ours=ours)},
        expect_errors=True,
    )
    assert_error(response, 508, "LOOP_DETECTED")


def test_another_route_carrying_our_via_is_served(proxy_app, upstream):
    # The proxy may fetch the service itself (docs/api.md): only a second pass
    # through the proxy is a loop.
    app = proxy_app("127.0.0.1+private")
    ours = pseudonym(app, upstream)
    response = app.get("/v1/todos/3", headers={"Via": f"1.1 {ours}"})
    assert response.status_int == 200


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/api/proxy.php?url=http%3A%2F%2F127.0.0.1%2F",
        "http://any.alias.example:8080/api/proxy.php",
        "https://127.0.0.1/api/proxy%2Ephp?url=x",
        "http://127.0.0.1/%61pi/proxy.php#top",
    ],
    ids=["listed-host", "any-host", "escaped-dot", "escaped-letter"],
)
def test_a_url_naming_the_proxy_itself_is_400_on_field_url(proxy_app, url):
    response = fetch(proxy_app("127.0.0.1+private"), url)
    assert_error(response, 400, "VALIDATION_ERROR")
    assert response.json["details"]["errors"] == [
        {"field": "url", "message": "must not name this service's own proxy path"}
    ]


def test_under_a_mount_the_proxy_path_is_the_mounted_one(proxy_app, upstream):
    app = proxy_app("127.0.0.1+private")
    mounted = {"SCRIPT_NAME": "/prod"}

    def under_mount(url: str):
        path = f"/api/proxy.php?url={quote(url, safe='')}"
        return app.get(path, extra_environ=mounted, expect_errors=True)

    refused = under_mount("http://127.0.0.1/prod/api/proxy.php?url=x")
    assert_error(refused, 400, "VALIDATION_ERROR")
    # Another mount's proxy path is not this one's: it is fetched (and the test's
    # upstream, which has no answer for that path, hangs up: 502).
    fetched = under_mount(f"http://127.0.0.1:{upstream}/api/proxy.php")
    assert_error(fetched, 502, "UPSTREAM_ERROR")


# A fresh interpreter (this one has urllib3 already): an app that has served a
# request, and refused a proxy request, holds no urllib3; its first fetch loads it.
LAZY_UPSTREAM = """
import sys, tempfile, webtest
from refapi import create_app
from refapi.config import Config
folder = tempfile.mkdtemp()
app = webtest.TestApp(create_app(Config(
    database_url=f"sqlite:///{folder}/db", data_dir=folder, secret_key=b"k",
    password_hash="pbkdf2:sha256:1", proxy_allowed_hosts=("127.0.0.1+private",),
)))
loaded = []
for path in ("/v1/todos/1", "/api/proxy.php?url=http://10.0.0.1/",
             "/api/proxy.php?url=http://127.0.0.1:9/"):  # 200, 403, refused: 502
    app.get(path, expect_errors=True)
    loaded.append(str("urllib3" in sys.modules))
print("loaded:", *loaded, file=sys.stderr)
"""


def test_a_worker_that_never_fetches_holds_no_urllib3():
    said = fresh_interpreter(LAZY_UPSTREAM)
    assert "loaded: False False True" in said, said
