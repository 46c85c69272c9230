"""Prism, as a validating proxy in front of a live server, finds no violation of the
document in the README's tour and in the API guide's examples, nor of the lab's
document in the lab guide's, in either direction.

``prism proxy <document> <server>`` checks each request against the document
(its path and method, parameters, body and credential), forwards it to gunicorn,
and checks the answer against the document too (status, headers, body); each
violation is a line of its log, ``[VALIDATOR] ✖ error Violation: <where> <what>``
(or ``⚠ warning``), once the answer is in. The test reads that log, and allows only
the requests the examples get wrong on purpose (``DELIBERATE``: the document must
refuse each of them too) and the paths that are not operations
(``NOT_OPERATIONS``).

Prism runs without ``--errors``. With it, Prism answers a request it finds invalid
with a problem of its own (422; 401 for a credential, 404 or 405 for a path or
method the document lacks), which the server never sees, and an answer it finds
invalid with another (500), and logs only "Request terminated with error" and the
problem's type, not where and what (prism-http-server 5.16, ``dist/server.js``);
without it, every answer passes through and every violation is logged with its
place, so the examples go on as they would against the server, and the server's
answers to the examples' deliberate bad requests are checked as well.

The examples are the README's and the API guide's, run in order on one server as
``tests/e2e/test_doc_examples.py`` walks them (the README's server settings, a
working folder laid out like a checkout), each file through a Prism of its own, so
that a violation names its file, with ``$BASE`` pointing at Prism instead of the
server. What they print is not compared here: Prism rewrites the hop-by-hop headers
and writes every header name in lower case. Ids in paths are read as ``<id>``:
the examples read theirs from ``Location``.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import urllib3

from refapi import doc_examples
from tests.contract.conftest import node_tool
from tests.e2e.conftest import gunicorn  # noqa: F401  (the real server)
from tests.e2e.harness import ROOT, wait_until
from tests.e2e.test_doc_examples import (  # noqa: F401  (work: the checkout)
    PATH,
    start,
    work,
)

# Each guide walked, with the document its examples are checked against: the
# lab's examples against the lab's own (docs/lab.md).
WALKED = {
    "README.md": "/openapi.json",
    "docs/api.md": "/openapi.json",
    "docs/lab.md": "/lab/openapi.json",
}
# Prism's start-up: node loading its modules, the document read. Over 60 s with two
# suites at once on two slow cores (stop 44's first loaded round): a hang's guard.
START_SECONDS = 180.0
STOP_SECONDS = 10.0
# Prism's log: `[time] › [HTTP SERVER] get /path ℹ  info  Request received`, then
# `[PROXY] ℹ  info  The upstream call to /path has returned 200` once the server
# answered, then that request's violations, `[VALIDATOR] ✖  error  Violation: ...`
# (or ⚠ warning). Any other error or warning (a request Prism could not forward)
# counts too.
RECEIVED = re.compile(r"\[HTTP SERVER\] (\w+) (\S+) .*Request received")
RETURNED = re.compile(r"The upstream call to (\S+) has returned (\d+)")
PROBLEM = re.compile(r"› (.*?(?:✖|⚠)\s+(?:error|warning)\s+.*)")
# HTTP header names are case-insensitive (RFC 9110 section 5.1), and Prism writes
# them in lower case, so the examples that pick the ETag or the Location out of
# `curl -D -` would find none (an empty If-None-Match, a request to the root); GNU
# sed's I flag reads it in any case, so the examples take their course.
SED_A_HEADER = re.compile(r"(sed -n 's/\^[^']*/)p'")
THROUGH_PRISM = {
    # A walk that waits on an answer fails in bounded time rather than hanging.
    "curl ": "curl --max-time 30 ",
}
# Examples left out of the walk, each command with the lines it prints. A body over
# the route's limit is refused before it is read (docs/api.md, "Body limits"): the
# server answers 413 and closes, and Prism 5.16, still sending it, never answers
# the client. tests/e2e/test_doc_examples.py runs it against the server itself.
NOT_THROUGH_PRISM = ("head -c 20000 /dev/zero ",)
ID = re.compile(r"/[0-9]+(?=/|$)")  # an id in a path: the examples read theirs


def examples_through_prism(name: str) -> list[doc_examples.Example]:
    """``name``'s examples as they run through Prism, those it cannot relay aside."""
    text = (ROOT / name).read_text()
    for example, through_prism in THROUGH_PRISM.items():
        text = text.replace(example, through_prism)
    text = SED_A_HEADER.sub(r"\1Ip'", text)
    return [
        example
        for example in doc_examples.examples_of(text, name)
        if not example.commands.startswith(NOT_THROUGH_PRISM)
    ]


@dataclass(frozen=True)
class Explained:
    """Violations that are meant: ``request`` (``METHOD /path -> status``) and a
    piece of Prism's message, in the file ``doc``."""

    doc: str
    request: str
    message: str

    def explains(self, doc: str, violation: str) -> bool:
        request, _, said = violation.partition(": ")
        return doc == self.doc and request == self.request and self.message in said


# Requests the examples get wrong on purpose, to show the refusal: the document
# must call each of them invalid (so each must be seen), and the server's answer
# is still checked against it.
DELIBERATE = [
    # README.md, "A five-minute tour": a path id that is not an integer.
    Explained("README.md", "GET /v1/articles/abc -> 400", "id must be integer"),
    # docs/api.md, "Errors": one body, three failing fields.
    Explained("docs/api.md", "POST /v1/articles -> 400", "found 'colour'"),
    Explained("docs/api.md", "POST /v1/articles -> 400", "fewer than 1 characters"),
    Explained("docs/api.md", "POST /v1/articles -> 400", "must NOT have duplicate"),
    # "Pagination": limit=0.
    Explained("docs/api.md", "GET /v1/items -> 400", "limit must be >= 1"),
    # "Articles": a title removed, a DELETE without a credential, an author sent.
    Explained("docs/api.md", "PATCH /v1/articles/<id> -> 400", "title must be string"),
    Explained("docs/api.md", "DELETE /v1/articles/<id> -> 401", "Invalid security"),
    Explained("docs/api.md", "POST /v1/articles -> 400", "found 'author'"),
    # "Payments and idempotency": a payment without its key.
    Explained("docs/api.md", "POST /v1/payments -> 400", "'idempotency-key'"),
    # "The demo endpoint": an unknown action; the list action POSTed.
    Explained("docs/api.md", "GET /api/demo.php -> 400", "request.query.action"),
    Explained("docs/api.md", "POST /api/demo.php -> 405", "request.query.action"),
    Explained("docs/api.md", "POST /api/demo.php -> 405", "Body parameter is required"),
    # "The proxy": an ftp URL; the proxy's path spelled with %2F, which the
    # document has no path for and gunicorn routes to the proxy all the same.
    Explained("docs/api.md", "GET /api/proxy.php -> 400", "request.query.url"),
    Explained("docs/api.md", "GET /api%2Fproxy.php -> 508", "route not found"),
    # "Loops": the proxy asked for the lab's delay through itself; the lab's paths
    # are in the lab's own document (/lab/openapi.json), not in this one.
    Explained("docs/api.md", "GET /lab/delay/<id> -> 508", "route not found"),
    # docs/lab.md, "Delays": seconds that are no number.
    Explained("docs/lab.md", "GET /lab/delay/soon -> 400", "request.path.seconds"),
    # "Redirects": a scheme-relative url, refused.
    Explained("docs/lab.md", "GET /lab/redirect-to -> 400", "request.query.url"),
    # "Bodies": a value that is not URL-safe base64 (a +), refused.
    Explained("docs/lab.md", "GET /lab/base64/a+b -> 400", "request.path.value"),
]


def not_operations(doc: str, requests: list[tuple[str, str, int]]) -> list[Explained]:
    """What ``doc``'s examples request that is no operation of its document:
    Prism says it found no route for each ``(method, path, status)``."""
    return [
        Explained(doc, f"{method} {path} -> {status}", "Selected route not found")
        for method, path, status in requests
    ]


# What the document leaves out by design (docs/api.md, "The OpenAPI document": the
# document itself, the interactive docs and the guides are not operations, nor are
# the redirects to the pages, "The front page"). Prism's proxy follows a 308 itself,
# so it logs the page's 200 for /ui and /docs/.
NOT_OPERATIONS = not_operations("docs/api.md", [
    ("GET", "/openapi.json", 200),
    ("GET", "/docs", 200),
    ("HEAD", "/docs/swagger-ui-bundle.js", 200),
    ("GET", "/ui", 200),
    ("POST", "/ui", 405),
    ("GET", "/docs/", 200),
    # "The guides": pages for a person, not operations.
    ("GET", "/guides/api.md", 200),
    ("GET", "/guides/nothing.md", 404),
]) + not_operations("docs/lab.md", [
    # The documents themselves, and the old paths, which answer 308 ("Moved"): in
    # neither document, as the core's redirects are not.
    ("GET", "/openapi.json", 200),
    ("GET", "/lab/openapi.json", 200),
    ("POST", "/api/echo", 200),
    ("POST", "/api/status/<id>", 503),
])  # fmt: skip
# Where Prism 5 reads a request otherwise than the document says (docs/lab.md):
PRISM_READS_OTHERWISE = [
    # A comma in a path segment is an array's separator to it (style simple)
    # whatever the schema's type: the codes are one string, as the lab reads them.
    Explained("docs/lab.md", f"GET /lab/status/200:0.8,503:0.2 -> {status}",
              "request.path.codes Request path parameter codes must be string")
    for status in (200, 503)
] + [
    # Its proxy follows a redirect itself: the lab's 302 to /lab/anything is
    # logged as /lab/status's 200, with the echo's body.
    Explained("docs/lab.md", "POST /lab/status/<id> -> 200", f"response.body {said}")
    for said in ("Response body must have required property",
                 "Response body must NOT have additional properties")
] + [
    # The same for "Redirects" and "Cookies": each chain is logged as the 200 it
    # ends in (/lab/cookies/set's at /lab/cookies).
    Explained("docs/lab.md", request, "Unable to match the returned status code")
    for request in ("GET /lab/redirect/<id> -> 200", "POST /lab/redirect-to -> 200",
                    "GET /lab/cookies/set -> 200")
] + [
    # "Streams": it reads an event stream whole, as one body, where the schema is
    # each event's (as schemathesis reads it, and OpenAPI 3.2's itemSchema).
    Explained("docs/lab.md", "GET /lab/sse -> 200", "Response body must be object"),
] + [
    # "Bodies": its proxy decodes a coded body itself (node's fetch, which asks
    # Accept-Encoding: *) and checks the answer without its Content-Encoding.
    Explained("docs/lab.md", f"GET /lab/{path} -> 200",
              "must have required property 'content-encoding'")
    for path in ("gzip", "deflate", "brotli")
]  # fmt: skip


@dataclass
class Prism:
    process: subprocess.Popen
    port: int
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def violations(self) -> list[str]:
        """Each violation Prism logged, as ``METHOD /path -> status: message``.

        A violation follows its request's answer, and the proxy's example nests a
        request to Prism inside another, so an answer is paired with the latest
        request received for its path that has none yet.
        """
        found, waiting, request = [], [], "?"
        for line in self.log().splitlines():
            if (received := RECEIVED.search(line)) is not None:
                waiting.append((received.group(1).upper(), received.group(2)))
            elif (returned := RETURNED.search(line)) is not None:
                path, status = returned.groups()
                match = [n for n, (_, p) in enumerate(waiting) if p == path]
                method, path = waiting.pop(match[-1]) if match else ("?", path)
                request = f"{method} {ID.sub('/<id>', path)} -> {status}"
            elif (problem := PROBLEM.search(line)) is not None:
                said = re.sub(r"\s+", " ", problem.group(1)).strip()
                found.append(f"{request}: {said}")
        return found

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(STOP_SECONDS)


def free_port() -> int:
    """A port nothing listens on now. Prism takes a number, not a socket, so
    another process could take it first; then Prism exits, and the wait fails."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def listening(prism: Prism) -> bool:
    if prism.process.poll() is not None:
        pytest.fail(f"prism exited ({prism.process.returncode}):\n{prism.log()}")
    try:
        socket.create_connection(("127.0.0.1", prism.port), timeout=0.5).close()
    except OSError:
        return False
    return True


@pytest.fixture
def prism(tmp_path: Path) -> Iterator[Callable[[Path, str], Prism]]:
    """A factory: ``prism(document, upstream)``, a validating proxy, ready."""
    binary = node_tool("prism")
    started: list[Prism] = []

    def launch(document: Path, upstream: str) -> Prism:
        port = free_port()
        log_path = tmp_path / f"prism-{port}.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                [
                    str(binary), "proxy", str(document), upstream,
                    "--host", "127.0.0.1", "--port", str(port),
                    # Prism's own CORS would answer the preflights the API guide
                    # sends to refapi (docs/api.md, "CORS") in its place.
                    "--cors", "false",
                ],
                cwd=tmp_path,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        server = Prism(process, port, log_path)
        started.append(server)
        wait_until(lambda: listening(server), START_SECONDS, "Prism to listen")
        return server

    yield launch
    for server in started:
        server.stop()


def test_prism_finds_no_violation_in_the_docs_examples(
    documents,
    gunicorn,  # noqa: F811
    work,  # noqa: F811
    prism,
):
    server = start(gunicorn, work, "README.md")
    explained = DELIBERATE + NOT_OPERATIONS + PRISM_READS_OTHERWISE
    for name, document in WALKED.items():
        proxy = prism(documents[document], server.base_url)
        env = {"PATH": PATH, "HOME": str(work), "BASE": proxy.base_url}
        ran = doc_examples.run(examples_through_prism(name), cwd=work, env=env)
        diff = "\n".join(f"{r.example.name}: {r.difference()}" for r in ran)
        violations = proxy.violations()
        said = "\n".join(violations) + f"\n\nthe examples' differences:\n{diff}"
        unexplained = [
            v for v in violations if not any(e.explains(name, v) for e in explained)
        ]
        assert unexplained == [], "\n".join(unexplained) + "\n\nof all:\n" + said
        for meant in DELIBERATE:
            if meant.doc == name:
                seen = any(meant.explains(name, v) for v in violations)
                assert seen, f"the document accepts what {meant} sends:\n{said}"
    assert server.log_failures() == []


def test_prism_reports_an_answer_the_document_does_not_describe(
    openapi_file,
    gunicorn,  # noqa: F811
    prism,
    tmp_path,
):
    # The walk finds nothing in the server's answers today; this shows it would:
    # a document whose todo has a member the server never sends.
    document = json.loads(openapi_file.read_text())
    document["components"]["schemas"]["todo"]["required"].append("owner")
    stricter = tmp_path / "stricter.json"
    stricter.write_text(json.dumps(document))
    server = gunicorn(workers=1)
    proxy = prism(stricter, server.base_url)
    with urllib3.PoolManager(retries=False, timeout=30) as client:
        answer = client.request("GET", proxy.base_url + "/v1/todos/1")
    assert answer.status == 200
    assert proxy.violations() == [
        "GET /v1/todos/<id> -> 200: [VALIDATOR] ✖ error Violation: response.body "
        "Response body must have required property 'owner'"
    ]
