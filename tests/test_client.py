"""client.py against a live loopback server that answers from a script.

The server is real HTTP (http.server in a thread); only the client's sleep is
injected, so the test checks the exact wait sequence without waiting. The command
line is run as a user runs it, ``python -m refapi.client``, in a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from refapi.client import Client, MaxRetriesExceeded, RequestFailed


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


def run_cli(*args: str, url: str = "http://127.0.0.1:9") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "refapi.client", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={"REFAPI_URL": url, "PATH": ""},
    )


@pytest.mark.parametrize("body", ["{bad", '{"amount": 10,}', ""])
def test_the_command_line_refuses_malformed_json_in_one_line(body):
    result = run_cli("POST", "/v1/payments", body)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "not valid JSON" in result.stderr and "Traceback" not in result.stderr


def test_the_command_line_prints_the_answer(serve):
    server = serve([(201, {})])
    result = run_cli("POST", "/v1/payments", '{"amount": 10, "currency": "EUR"}',
                     url=server.url)  # fmt: skip
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == '201 {"status": 201}\n'
    assert json.loads(server.requests[0]["body"]) == {"amount": 10, "currency": "EUR"}
