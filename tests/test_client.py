"""client.py against live loopback servers: one that answers from a script, and
refapi itself.

Both are real HTTP in a thread (http.server; Werkzeug's server for refapi, with a
SQLite file under the test's folder); only the client's sleep is injected, so the
test checks the exact wait sequence without waiting. The command line is run as a
user runs it, ``python -m refapi.client``, in a subprocess.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import urllib3
from werkzeug.serving import WSGIRequestHandler, make_server

from refapi import create_app
from refapi.client import Client, MaxRetriesExceeded, RequestFailed
from refapi.storage import Store
from refapi.web.auth import new_secret, secret_hash
from tests.conftest import ADMIN, FakeClock


class ScriptedServer:
    """Answers each request with the next (status, headers) of its script."""

    def __init__(self, script: list[tuple[int, dict[str, str]]]) -> None:
        self.script = list(script)
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                outer.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        # The message itself: get_all() sees repeated fields.
                        "headers": self.headers,
                        "body": self.rfile.read(length),
                    }
                )
                status, headers = outer.script.pop(0)
                body = json.dumps({"status": status}).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = _answer

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, args=(0.05,), daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(script):
        server = ScriptedServer(script)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def test_503_then_429_retry_after_then_200(serve):
    server = serve([(503, {}), (429, {"Retry-After": "2"}), (200, {})])
    waits: list[float] = []
    client = Client(server.url, sleep=waits.append)
    response = client.request("GET", "/v1/todos/1")
    assert response.status == 200
    assert waits == [0.3, 2.0]
    assert len(server.requests) == 3


def test_exponential_waits_then_max_retries_exceeded(serve):
    server = serve([(500, {})] * 4)
    waits: list[float] = []
    client = Client(server.url, sleep=waits.append)
    with pytest.raises(MaxRetriesExceeded) as raised:
        client.request("GET", "/v1/todos/1")
    assert waits == [0.3, 0.6, 1.2]
    assert len(server.requests) == 4  # retries + 1 attempts
    assert raised.value.response.status == 500


def test_retries_and_base_delay_are_options(serve):
    server = serve([(502, {})] * 3)
    waits: list[float] = []
    client = Client(server.url, retries=2, base_delay=0.1, sleep=waits.append)
    with pytest.raises(MaxRetriesExceeded):
        client.request("GET", "/x")
    assert waits == [0.1, 0.2]
    assert len(server.requests) == 3


def test_statuses_not_to_retry_fail_at_once(serve):
    server = serve([(404, {})])
    client = Client(server.url, retry_on=lambda s: s >= 500, sleep=pytest.fail)
    with pytest.raises(RequestFailed) as raised:
        client.request("GET", "/v1/todos/999")
    assert not isinstance(raised.value, MaxRetriesExceeded)
    assert raised.value.response.status == 404


def test_payment_retries_keep_one_generated_key(serve):
    server = serve([(503, {}), (503, {}), (201, {})])
    client = Client(server.url, sleep=lambda s: None)
    client.request("POST", "/v1/payments", {"amount": 10, "currency": "EUR"})
    keys = {r["headers"]["Idempotency-Key"] for r in server.requests}
    assert len(keys) == 1 and len(next(iter(keys))) >= 16
    assert server.requests[0]["body"] == b'{"amount": 10, "currency": "EUR"}'


def test_callers_key_is_kept(serve):
    server = serve([(201, {})])
    client = Client(server.url, sleep=pytest.fail)
    client.request("POST", "/v1/payments", {"amount": 1, "currency": "EUR"},
                   headers={"Idempotency-Key": "mine"})  # fmt: skip
    assert server.requests[0]["headers"]["Idempotency-Key"] == "mine"


@pytest.mark.parametrize(
    "path", ["/v1/articles", "/api/demo.php?action=create", "/v1/payments/"]
)
def test_a_create_that_takes_a_key_keeps_one_generated_key(serve, path):
    # A create that takes a key is answered as the first when sent again with it
    # (docs/api.md, "Idempotent creates"): every attempt carries the same one.
    server = serve([(500, {}), (503, {}), (201, {})])
    client = Client(server.url, sleep=lambda s: None)
    client.request("POST", path, {"title": "t"})
    keys = [r["headers"].get_all("Idempotency-Key") for r in server.requests]
    assert len(keys) == 3 and keys[0] == keys[1] == keys[2] and len(keys[0]) == 1


@pytest.mark.parametrize("path", ["/api/keys", "/api/oauth-clients", "/api/users"])
@pytest.mark.parametrize(
    "status, headers",
    [(500, {}), (502, {}), (503, {}), (504, {}), (409, {"Retry-After": "1"})],
    ids=["500", "502", "503-without-retry-after", "504", "409"],
)
def test_another_post_is_not_sent_again_after_a_failure(serve, path, status, headers):
    # Made twice if the server acted on it: no key, so no second try, even one the
    # caller's own Idempotency-Key would not make safe (the route ignores it).
    server = serve([(status, headers)])
    client = Client(server.url, sleep=pytest.fail)
    with pytest.raises(RequestFailed) as raised:
        client.request("POST", path, {"name": "ci"},
                       headers={"Idempotency-Key": "mine"})  # fmt: skip
    assert not isinstance(raised.value, MaxRetriesExceeded)
    assert raised.value.response.status == status
    assert len(server.requests) == 1


def test_another_post_is_sent_again_when_the_server_did_not_act(serve):
    # 429, and 503 with Retry-After: the server says it did not act on it.
    server = serve([(429, {}), (429, {"Retry-After": "2"}),
                    (503, {"Retry-After": "1"}), (201, {})])  # fmt: skip
    waits: list[float] = []
    client = Client(server.url, sleep=waits.append)
    assert client.request("POST", "/api/keys", {"name": "ci"}).status == 201
    assert waits == [0.3, 2.0, 1.0]
    assert "Idempotency-Key" not in server.requests[0]["headers"]


def test_another_post_follows_retry_on_too(serve):
    server = serve([(429, {})])
    client = Client(server.url, retry_on=lambda s: s >= 500, sleep=pytest.fail)
    with pytest.raises(RequestFailed):
        client.request("POST", "/api/keys", {"name": "ci"})
    assert len(server.requests) == 1


class SilentServer:
    """Reads each request and closes the connection without a word: an answer
    lost on the way back, as far as the client can tell."""

    def __init__(self) -> None:
        self.requests = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            with conn:
                if conn.recv(65536):
                    self.requests += 1

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def silent():
    server = SilentServer()
    yield server
    server.close()


def test_another_post_is_not_sent_again_after_a_lost_answer(silent):
    client = Client(silent.url, sleep=pytest.fail)
    with pytest.raises(RequestFailed) as raised:
        client.request("POST", "/api/keys", {"name": "ci"})
    assert not isinstance(raised.value, MaxRetriesExceeded)
    assert raised.value.response is None and "no answer" in str(raised.value)
    assert silent.requests == 1


@pytest.mark.parametrize("method, path", [("POST", "/v1/articles"), ("GET", "/x")])
def test_a_create_with_a_key_or_a_get_is_sent_again_after_a_lost_answer(
    silent, method, path
):
    waits: list[float] = []
    client = Client(silent.url, sleep=waits.append)
    with pytest.raises(MaxRetriesExceeded):
        client.request(method, path, {"title": "t"} if method == "POST" else None)
    assert silent.requests == 4 and waits == [0.3, 0.6, 1.2]


def test_another_post_is_sent_again_when_no_connection_was_made():
    # Nothing was sent: the server cannot have acted on it.
    waits: list[float] = []
    client = Client("http://127.0.0.1:9", sleep=waits.append, timeout=1.0)
    with pytest.raises(MaxRetriesExceeded):
        client.request("POST", "/api/keys", {"name": "ci"})
    assert waits == [0.3, 0.6, 1.2]


def test_unreachable_server_counts_as_failed_attempts():
    waits: list[float] = []
    client = Client("http://127.0.0.1:9", sleep=waits.append, timeout=1.0)
    with pytest.raises(MaxRetriesExceeded) as raised:
        client.request("GET", "/healthz")
    assert raised.value.response is None
    assert waits == [0.3, 0.6, 1.2]


def test_a_callers_lower_case_key_replaces_the_generated_one(serve):
    # Header names are case-insensitive (RFC 9110 section 5.1): one key, the caller's,
    # so two calls with it make one payment.
    server = serve([(201, {}), (201, {})])
    client = Client(server.url, sleep=pytest.fail)
    for _ in range(2):
        client.request("POST", "/v1/payments", {"amount": 1, "currency": "EUR"},
                       headers={"idempotency-key": "order-777"})  # fmt: skip
    assert [r["headers"].get_all("Idempotency-Key") for r in server.requests] == [
        ["order-777"],
        ["order-777"],
    ]


@pytest.mark.parametrize(
    ("default", "given", "sent"),
    [
        ({}, {"content-type": "application/merge-patch+json"},
         ("Content-Type", "application/merge-patch+json")),
        ({"accept": "text/csv"}, {}, ("Accept", "text/csv")),
        ({"ACCEPT": "text/csv"}, {"accept": "application/xml"},
         ("Accept", "application/xml")),
    ],
    ids=["content-type-per-call", "accept-per-client", "call-over-client"],
)  # fmt: skip
def test_a_header_given_in_any_case_is_sent_once(serve, default, given, sent):
    server = serve([(200, {})])
    client = Client(server.url, sleep=pytest.fail, headers=default)
    client.request("PATCH", "/v1/articles/1", {"title": "t"}, headers=given)
    name, value = sent
    assert server.requests[0]["headers"].get_all(name) == [value]


def run_cli(
    *args: str, url: str = "http://127.0.0.1:9", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "refapi.client", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={"REFAPI_URL": url, "PATH": "", **(env or {})},
    )


@pytest.mark.parametrize("body", ["{bad", '{"amount": 10,}', ""])
def test_the_command_line_refuses_malformed_json_in_one_line(body):
    result = run_cli("POST", "/v1/payments", body)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "not valid JSON" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("lead", ["@", ":", "."])
def test_a_path_that_would_name_another_host_is_refused(serve, lead):
    # REFAPI_URL + "@elsewhere/json" is a URL of elsewhere: the token went there.
    elsewhere = serve([(200, {})])
    path = f"{lead}{elsewhere.url.split('//', 1)[1]}/json"
    base = "http://127.0.0.1:9"  # nothing is sent to either
    result = run_cli("GET", path, url=base, env={"REFAPI_TOKEN": "SECRET"})
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("refapi.client: PATH must start with '/'")
    with pytest.raises(ValueError, match="must start with '/'"):
        Client(base, token="SECRET").request("GET", path)
    assert elsewhere.requests == []


def test_the_command_line_prints_the_answer(serve):
    server = serve([(201, {})])
    result = run_cli("POST", "/v1/payments", '{"amount": 10, "currency": "EUR"}',
                     url=server.url)  # fmt: skip
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == '201 {"status": 201}\n'
    assert json.loads(server.requests[0]["body"]) == {"amount": 10, "currency": "EUR"}


# -- credentials, against refapi itself ------------------------------------------


class QuietHandler(WSGIRequestHandler):
    def log(self, *args) -> None:
        pass


@dataclass
class Refapi:
    url: str
    store: Store
    clock: FakeClock

    def credential(self, kind: str) -> str:
        """A new Bearer token (``token``) or API key (``api_key``) of the admin."""
        secret, admin = new_secret(), self.store.user_login(ADMIN["email"])[0]
        if kind == "token":
            hashes = {"bearer": secret_hash(secret)}
            expires = self.clock() + 3600
            self.store.create_tokens(new_secret(), hashes, expires, user_id=admin["id"])
        else:
            self.store.create_api_key("tests", admin["id"], secret_hash(secret), 0.0)
        return secret


@pytest.fixture
def refapi(config, store, clock):
    """refapi on a loopback port: Werkzeug's threaded server, the test's store."""
    app = create_app(config, store=store, clock=clock)
    httpd = make_server(
        "127.0.0.1", 0, app, threaded=True, request_handler=QuietHandler
    )
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield Refapi(f"http://127.0.0.1:{httpd.server_address[1]}", store, clock)
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("kind", ["token", "api_key"])
def test_a_credential_goes_with_every_request(refapi, kind):
    client = Client(refapi.url, sleep=pytest.fail, **{kind: refapi.credential(kind)})
    created = client.request("POST", "/v1/articles", {"title": "By the client"})
    assert created.status == 201
    assert created.json()["title"] == "By the client"
    me = client.request("GET", "/api/users/1")
    assert me.json()["email"] == ADMIN["email"]


def test_without_a_credential_a_write_is_401(refapi):
    client = Client(
        refapi.url, retry_on=lambda status: status >= 500, sleep=pytest.fail
    )
    with pytest.raises(RequestFailed) as raised:
        client.request("POST", "/v1/articles", {"title": "Anonymous"})
    response = raised.value.response
    assert response.status == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["code"] == "UNAUTHENTICATED"


def test_login_keeps_the_token_for_later_requests(refapi):
    # The stale token is not sent with the login, where it would be a 401.
    client = Client(refapi.url, token="stale", sleep=pytest.fail)
    token = client.login(ADMIN["email"], ADMIN["password"])
    created = client.request("POST", "/v1/articles", {"title": "After the login"})
    assert created.status == 201
    found = refapi.store.find_token("bearer", secret_hash(token), refapi.clock())
    assert found is not None and found["user"]["email"] == ADMIN["email"]


def test_a_wrong_password_is_sent_once(refapi):
    client = Client(refapi.url, sleep=pytest.fail)
    with pytest.raises(RequestFailed) as raised:
        client.login(ADMIN["email"], "not the password")
    assert not isinstance(raised.value, MaxRetriesExceeded)
    assert raised.value.response.status == 401
    assert raised.value.response.json()["code"] == "INVALID_CREDENTIALS"
    assert "not the password" not in str(raised.value)
    # One failure was counted: four more reach the address's limit of five.
    for _ in range(4):
        assert _login(refapi, "not the password").status == 401
    assert _login(refapi, ADMIN["password"]).status == 429


def _login(refapi: Refapi, password: str):
    """A login sent once, without the client's retries."""
    body = json.dumps({"email": ADMIN["email"], "password": password}).encode()
    with urllib3.PoolManager(retries=False) as pool:
        return pool.request(
            "POST", refapi.url + "/api/login", body=body,
            headers={"Content-Type": "application/json"},
        )  # fmt: skip


@pytest.mark.parametrize(
    ("status", "headers", "attempts"),
    [(400, {}, 1), (401, {}, 1), (403, {}, 1), (500, {}, 1), (502, {}, 1),
     (503, {}, 1), (504, {}, 1), (429, {}, 4), (503, {"Retry-After": "1"}, 4)],
)  # fmt: skip
def test_a_login_is_sent_again_only_when_the_server_did_not_act_on_it(
    serve, status, headers, attempts
):
    # A login is a POST that takes no key: a lost or failed one may have made a
    # token, so only a 429, or a 503 that says Retry-After, is sent again.
    server = serve([(status, headers)] * attempts)
    waits: list[float] = []
    client = Client(server.url, sleep=waits.append)
    with pytest.raises(RequestFailed) as raised:
        client.login("ada@example.com", "correct horse")
    assert len(server.requests) == attempts
    expected = [1.0] * 3 if headers else [0.3, 0.6, 1.2]
    assert waits == expected[: attempts - 1]
    assert isinstance(raised.value, MaxRetriesExceeded) == (attempts > 1)
    assert raised.value.response.status == status


def test_a_login_retries_when_no_answer_comes():
    waits: list[float] = []
    client = Client("http://127.0.0.1:9", sleep=waits.append, timeout=1.0)
    with pytest.raises(MaxRetriesExceeded):
        client.login("ada@example.com", "correct horse")
    assert waits == [0.3, 0.6, 1.2]


@pytest.mark.parametrize(
    ("variable", "kind"), [("REFAPI_TOKEN", "token"), ("REFAPI_API_KEY", "api_key")]
)
def test_the_command_line_takes_the_credential_from_the_environment(
    refapi, variable, kind
):
    secret = refapi.credential(kind)
    result = run_cli("POST", "/v1/articles", '{"title": "From the shell"}',
                     url=refapi.url, env={variable: secret})  # fmt: skip
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith('201 {"id":')
    assert secret not in result.stdout


def test_the_command_line_refuses_two_credentials():
    result = run_cli(
        "GET", "/v1/todos/1", env={"REFAPI_TOKEN": "t", "REFAPI_API_KEY": "k"}
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert (
        result.stderr == "refapi.client: set REFAPI_TOKEN or REFAPI_API_KEY, not both\n"
    )
