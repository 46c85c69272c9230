"""The explainer: ``POST /lab/explain`` runs a request through the service, in
process, as the caller, and answers the exchange with what each part of it means
(docs/explain.md).

The request is a form (method, path, header fields, body as text) made into a
WSGI environ and passed to the whole front door (the core and the lab, as the
front door mounts them: the lab's ``FrontDoor``), so it meets every layer a request
from the network meets: the request id, CORS, authentication, the same rate-limit
buckets, errors. It grants nothing the caller lacks (docs/explain.md, "Guards"):
it comes from the caller's own address, scheme, ``Host`` and mount point; the form
may not name another (``Host``, ``Forwarded``, ``X-Forwarded-*``, ``Via``) nor a
cookie; the session cookie goes along only when the caller's own request passed
the checks of one made on its authority, the CSRF token and the ``Origin``; the
explainer and the lab's slow work (the delay, the drip, the events) cannot be
explained, on their old paths or their new (a request that explains itself would go
round, and slow work would hold a second slot). What gunicorn refuses
before the app runs (its limits on the request line and the header fields) is
answered here as gunicorn would (``web/refusals.py``). The request it runs is slow
work, holding one of the host's share of slots while it runs (``503 BUSY`` when
the share is taken: ``slots.py``); a proxy fetch inside it takes no second.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from werkzeug.http import http_date, parse_options_header

from ..errors import ApiError, Busy, ValidationError
from ..middleware.authenticate import principal_of
from ..web import Request, Response, json_response
from ..web.auth import SESSION_COOKIE, csrf_refusal, request_cookie, secret_hash
from ..web.environ import ROUTE
from ..web.keys import csrf_key
from ..web.negotiation import JSON
from .annotations import Exchange, annotate, linked, lint
from .handlers import REDACTED  # how the lab shows a secret, the echo's too
from .request_notes import request_notes
from .slow import SLOW_PATHS

if TYPE_CHECKING:
    from wsgiref.types import WSGIApplication, WSGIEnvironment

    from ..config import Config
    from ..router.route import Route
    from ..slots import Slots
    from ..storage import Store
    from . import FrontDoor

PATH = "/lab/explain"
# What may not be explained, as a path or the start of one: the explainer, old path
# and new, and the lab's slow work (the delay, old and new, the drip, the events),
# which would hold a second slot while the explainer holds one.
REFUSED = ("/lab/explain", "/api/explain", *SLOW_PATHS, "/api/delay")
# Of the response's body: the rest is cut before it is annotated or linted, so
# a long body costs no more than its first 16 KiB (docs/explain.md, "Limits").
SHOWN_BYTES = 16 * 1024
# Set from the caller's own request, never by the form: who the request is from
# and what it is for; Content-Length and Transfer-Encoding are the body's framing.
FORBIDDEN = frozenset({"host", "cookie", "forwarded", "via"})
FRAMING = frozenset({"content-length", "transfer-encoding"})
# gunicorn's limits, as gunicorn.conf.py sets them (tests/lab/test_explain.py
# holds them to it): the request line in bytes, the header fields, one field.
LIMIT_REQUEST_LINE, LIMIT_REQUEST_FIELDS, LIMIT_REQUEST_FIELD_SIZE = 4094, 100, 8190
# Copied from the caller's request: the server, the connection, the mount point
# (and Host, the first of the fields sent).
INHERITED = (
    "SERVER_NAME", "SERVER_PORT", "SERVER_PROTOCOL", "REMOTE_ADDR", "SCRIPT_NAME",
    "wsgi.version", "wsgi.url_scheme", "wsgi.errors",
    "wsgi.multithread", "wsgi.multiprocess", "wsgi.run_once",
)  # fmt: skip

Headers = list[tuple[str, str]]


def explain_exchange(
    request: Request,
    front: FrontDoor,
    config: Config,
    store: Store,
    clock: Callable[[], float],
    slots: Slots,
) -> Response:
    form = request.payload
    method, target = form["method"], form["path"]
    fields = [(name, value) for name, value in form.get("headers", [])]
    body = form.get("body", "").encode()
    inner_path = _check(target, fields)
    sent = _sent_fields(request, fields, body, store, clock, csrf_key(config, store))
    refused = _server_refusal(method, target, sent, config)
    success: dict[str, bool] = {}  # the headers the answering row's success carries
    if refused is not None:
        status, headers, answer = refused
    else:
        inner = _environ(request, method, target, sent, body)
        if slots.take(inner, config.proxy_total_timeout):
            raise Busy()
        try:
            status, headers, answer = _run(front.wsgi_app, inner)
        finally:
            slots.release(inner)  # if the router did not: refused above it
        if status < 400:
            success = _success_headers(front.routes, method, inner.get(ROUTE))
        # What gunicorn's worker writes before the app's fields (a sync worker
        # closes each connection after its answer).
        server = [("Server", "gunicorn"), ("Date", http_date(clock()))]
        headers = [*server, ("Connection", "close"), *headers]
    # Notes on what the learner wrote (the form's fields and body), not on what the
    # explainer adds (Host, the framing, the caller's cookie), against the type
    # the answer came in.
    written = _environ(request, method, target, fields, body)
    if body:
        written["CONTENT_LENGTH"] = str(len(body))
    answered = next((v for n, v in headers if n.lower() == "content-type"), "")
    notes_on_request = request_notes(
        written, body, answers=parse_options_header(answered)[0] or JSON,
        max_depth=config.json_max_depth,
    )  # fmt: skip
    shown = [(n, REDACTED if n.lower() == "set-cookie" else v) for n, v in headers]
    shown_body = answer[:SHOWN_BYTES]  # what is shown, annotated and linted
    shown_request = [(n, REDACTED if n == "Cookie" else v) for n, v in sent]
    exchange = Exchange(method, target, sent, status, headers, shown_body)
    return json_response(linked(
        {
            "request": {
                "method": method, "path": target,
                "headers": [list(pair) for pair in shown_request],
                "body": body.decode(),
            },
            "response": {
                "status": status, "headers": [list(pair) for pair in shown],
                "body": shown_body.decode("utf-8", "replace"),
                "bodyTruncated": len(answer) > SHOWN_BYTES, "bodyBytes": len(answer),
            },
            "annotations": annotate(
                exchange, success=success, layers=front.layers_for(inner_path),
                refused=refused is not None,
            ),
            "notes": lint(
                request.environ.get("wsgi.url_scheme", "http"), exchange,
                whole=len(answer),
            ),
            "requestNotes": notes_on_request,
        }, request.link("/guides/"), front.guide
    ))  # fmt: skip


def _check(target: str, fields: Headers) -> str:
    """400 ``VALIDATION_ERROR`` for what the form may not ask (docs/explain.md,
    "Guards"): every such field is named, as the schema's errors are. The path to
    explain, decoded."""
    errors = []
    for index, (name, _) in enumerate(fields):
        lowered = name.lower()
        if lowered in FORBIDDEN or lowered.startswith("x-forwarded-"):
            errors.append((f"/headers/{index}/0", "is taken from your own request"))
        elif lowered in FRAMING:
            errors.append((f"/headers/{index}/0", "is set by the explainer"))
    path = unquote(target.partition("?")[0], "latin-1")
    if any(path == refused or path.startswith(refused + "/") for refused in REFUSED):
        errors.append(("/path", "may not be the explainer's or slow work's"))
    if errors:
        raise ValidationError([{"field": f, "message": m} for f, m in errors])
    return path


def _sent_fields(
    request: Request,
    fields: Headers,
    body: bytes,
    store: Store,
    clock: Callable[[], float],
    key: bytes,
) -> Headers:
    """The header fields the request arrives with: the caller's ``Host``, the
    form's, the body's length, and the session cookie when it counts."""
    environ = request.environ
    host = environ.get("HTTP_HOST") or environ.get("SERVER_NAME", "")
    sent = [("Host", host), *fields]
    if body:
        sent.append(("Content-Length", str(len(body))))
    # The lab reads no credential (no Authenticate): the explainer alone looks up
    # the caller's session, to pass it on. The cookie counts only if the caller's
    # own request passed the checks of one made on its authority (docs/explain.md,
    # "Guards"); else a page of another site could have the explainer act as its
    # visitor.
    value = request_cookie(environ, SESSION_COOKIE)
    if value:
        session = principal_of(store, "session", secret_hash(value), clock())
        if session is not None and csrf_refusal(environ, session, key) is None:
            sent.append(("Cookie", f"{SESSION_COOKIE}={value}"))
    return sent


def _server_refusal(
    method: str, target: str, sent: Headers, config: Config
) -> tuple[int, Headers, bytes] | None:
    """gunicorn's answer to a request over its limits, or to an ``Expect`` it
    cannot meet (Granian's, through refapi's layer, is the same), as its worker
    writes it; None for a request it passes to the app."""
    from ..errors import RequestHeaderFieldsTooLarge, UriTooLong
    from ..web.refusals import (
        EXPECTATION_FAILED,
        refusal_answer,
        server_refusal,
        unmet_expectation,
    )

    error: ApiError | None = None
    if len(f"{method} {target} HTTP/1.1") > LIMIT_REQUEST_LINE:
        error = UriTooLong(LIMIT_REQUEST_LINE)
    elif len(sent) > LIMIT_REQUEST_FIELDS or any(
        len(f"{name}: {value}\r\n".encode("latin-1")) > LIMIT_REQUEST_FIELD_SIZE
        for name, value in sent
    ):
        error = RequestHeaderFieldsTooLarge(
            LIMIT_REQUEST_FIELDS, LIMIT_REQUEST_FIELD_SIZE
        )
    elif any(
        name.lower() == "expect" and unmet_expectation(value) for name, value in sent
    ):
        error = server_refusal(*EXPECTATION_FAILED)
    if error is None:
        return None
    body, headers = refusal_answer(error, config)
    return error.status, headers, body


def _environ(
    request: Request, method: str, target: str, sent: Headers, body: bytes
) -> WSGIEnvironment:
    """The WSGI environ of the request, as a server would make it (PEP 3333)."""
    outer = request.environ
    path, _, query = target.partition("?")
    environ: dict[str, Any] = {key: outer[key] for key in INHERITED if key in outer}
    environ.update(
        REQUEST_METHOD=method,
        PATH_INFO=unquote(path, "latin-1"),
        QUERY_STRING=query,
        **{"wsgi.input": io.BytesIO(body)},
    )
    for name, value in sent:
        key = name.upper().replace("-", "_")
        if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            key = "HTTP_" + key
        # Fields of one name arrive joined, as gunicorn joins them (RFC 9110
        # section 5.3); the first is Host, the caller's.
        environ[key] = f"{environ[key]}, {value}" if key in environ else value
    return environ


def _success_headers(
    routes: Sequence[Route], method: str, template: str | None
) -> dict[str, bool]:
    """The headers a success of the row that answered carries, found by the route
    template the router left in the inner request's environ (``refapi.route``):
    the row of that path and method (HEAD's is GET's; the demo's actions share
    their path's headers)."""
    wanted = "GET" if method == "HEAD" else method
    for row in routes:
        if row.path == template and row.method == wanted:
            return dict(row.success_headers)
    return {}


def _run(app: WSGIApplication, environ: WSGIEnvironment) -> tuple[int, Headers, bytes]:
    """Call ``app`` as a server would: its status, headers and whole body."""
    started: dict[str, Any] = {}

    def start_response(status: str, headers: Headers, exc_info: Any = None) -> Any:
        started.update(status=int(status.split(" ", 1)[0]), headers=list(headers))
        return lambda data: None  # every layer returns its body; none writes

    result: Iterable[bytes] = app(environ, start_response)
    try:
        answer = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return started["status"], started["headers"], answer
