"""The two objects a handler deals in: ``Request`` in, ``Response`` out.

``Request`` is the environ read lazily, plus what the dispatcher prepared for the
handler (the validated body, the negotiated media type, the principal). ``Response``
is a deliberately small WSGI callable: a status, a header list and one body of bytes,
so that the cost of answering is one ``start_response`` call. Every JSON body is made by
``json_response``; every error body by ``error_response``.
"""

from __future__ import annotations

import errno
import json
import re
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl, quote

from werkzeug.datastructures import EnvironHeaders, MultiDict

from ..errors import ApiError, Unauthenticated, ValidationError
from .auth import ANONYMOUS, Authentication, Principal
from .body import OverlongNumber
from .environ import AUTH
from .statuses import STATUS_LINES

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIEnvironment

    from ..storage.base import Claim

JSON_TYPE = "application/json; charset=utf-8"


class Keyed(Protocol):
    """What a handler uses of a request's idempotency key: its claim on the key
    with the body as compared (``web/idempotency.py``'s ``Keyed``, which imports
    this module: a Protocol here keeps the two out of a circle)."""

    def claim(self, body: object) -> Claim: ...


class Limits(Protocol):
    """What a handler uses of the app's rate limits: one more bucket passed, for a
    need only the handler can tell (a password change), before it hashes anything
    (``middleware/rate_limit/policy.py``'s ``RateLimits``; a handler imports
    nothing of the middleware)."""

    def take(self, request: Request, *names: str) -> None: ...


class Request:
    """What a handler sees of the request: the WSGI environ, read lazily, the
    validated body and the media type negotiated for the answer (None when the
    answer does not depend on Accept). What the handler works with besides (the
    store, the settings, the clock) it receives as arguments of its own, bound by
    the router at start-up (``router.py``, ``bind``).

    Werkzeug's full ``Request`` parses more up front than a handler here ever uses;
    this keeps its lower-level pieces (``MultiDict``, ``EnvironHeaders``) and builds
    each only when asked for.
    """

    def __init__(self, environ: WSGIEnvironment) -> None:
        self.environ = environ
        self.payload: Any = None
        self.media_type: str | None = None
        # The route's body limit in bytes, set by the router for a route that reads
        # a body (routes.py, ``Route.body_limit``).
        self.body_limit: int | None = None
        # Who the credential speaks for, set by the router as the route allows:
        # None on a public route called without a Bearer token or API key.
        self.principal: Principal | None = None
        # The idempotency key of a create that takes one, with what it is scoped
        # by, set by the router (web/idempotency.py); None when none was sent.
        self.idempotency: Keyed | None = None
        # What the ``Authenticate`` middleware found (nothing, without it), read
        # once: it is written before anything makes a request's Request.
        # PERF: an attribute, not a property: 400 instructions a request, make
        # bench-instructions
        self.auth: Authentication = environ.get(AUTH, ANONYMOUS)

    def require_principal(self) -> Principal:
        """The principal of a route that needs one. The router sees to it; should a
        route table send a request here without one, it is refused all the same (an
        ``if``, not an ``assert``, so ``python -O`` changes nothing)."""
        if self.principal is None:
            raise Unauthenticated()
        return self.principal

    @cached_property
    def args(self) -> MultiDict[str, str]:
        """The query parameters (percent-decoded as UTF-8)."""
        query = self.environ.get("QUERY_STRING", "")
        return MultiDict(parse_qsl(query, keep_blank_values=True, errors="replace"))

    def arg(self, name: str) -> str | None:
        """The query parameter ``name``: its one value, None when absent, 400 when
        given twice (which one would be meant? docs/api.md, "Choices the
        specification leaves open")."""
        values = self.args.getlist(name)
        if len(values) > 1:
            raise ValidationError.one(name, "must be given at most once")
        return values[0] if values else None

    @cached_property
    def headers(self) -> EnvironHeaders:
        return EnvironHeaders(self.environ)

    @property
    def path(self) -> str:
        """The path inside the app, percent-encoded as on the wire."""
        return _url_path(self.environ.get("PATH_INFO", ""))

    @property
    def script_root(self) -> str:
        """The mount point (``SCRIPT_NAME``), percent-encoded, without a final /."""
        return _url_path(self.environ.get("SCRIPT_NAME", "")).rstrip("/")

    @property
    def cookie_scope(self) -> dict[str, Any]:
        """Where the session cookie applies: under the mount point (so ``/prod`` and
        ``/dev`` keep their own), and only over https when served over https."""
        return {
            "path": self.script_root + "/",
            "secure": self.environ.get("wsgi.url_scheme") == "https",
        }

    def link(self, path: str) -> str:
        """The URL of ``path`` (inside the app) for a client: the mount point first.

        It is always an absolute path (RFC 3986 section 4.2) and never starts with
        ``//``, which a client would read as a scheme-relative URL naming a host.
        """
        return "/" + f"{self.script_root}{path}".lstrip("/")


# What a URL path may hold as it is (RFC 3986 pchar and "/"); the rest is encoded.
_PATH_CHARS = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*")


def _url_path(wsgi_text: str) -> str:
    # PEP 3333 strings carry the raw bytes as latin-1; URLs we emit carry them encoded,
    # and so are a backslash, a space or a control character (a browser reads "/\"
    # as "//", and a control character cannot go into a header at all).
    if _PATH_CHARS.fullmatch(wsgi_text):
        return wsgi_text
    return quote(wsgi_text.encode("latin-1"), safe="/!$&'()*+,;=:@-._~")


def permanent_redirect(request: Request, path: str) -> Response:
    """``308 Permanent Redirect`` to ``path`` inside the app, the query kept.

    308, not 301: a client repeats the method and body as they were (RFC 9110
    section 15.4.9). ``Location`` is built from the mount point like every URL
    the app writes (``Request.link``), never from ``Host`` (docs/api.md, "Choices
    the specification leaves open").
    """
    query = request.environ.get("QUERY_STRING", "")
    location = request.link(path) + (f"?{_url_query(query)}" if query else "")
    return Response(b"", 308, [("Location", location)])


def _url_query(wsgi_text: str) -> str:
    # As _url_path: the query as sent, with what a URL cannot carry encoded.
    return quote(wsgi_text.encode("latin-1"), safe="/?!$&'()*+,;=:@-._~%")


def positive_int(name: str, raw: str, maximum: int) -> int:
    """``raw`` (a path id, a ``limit``) as an integer from 1 to ``maximum``, else
    400 on ``name``."""
    return whole_number(name, raw, 1, maximum)


def whole_number(name: str, raw: str, minimum: int, maximum: int) -> int:
    """``raw`` as an integer from ``minimum`` to ``maximum``, else 400 on ``name``.
    Leading zeros name the same number; the length of the rest is checked before
    int(), which refuses strings of over 4,300 digits (19 digits hold any bound up
    to 2^63-1)."""
    digits = raw.lstrip("0") or raw[:1]  # "000" is 0
    if len(digits) <= 19 and digits.isascii() and digits.isdigit():
        number = int(digits)
        if minimum <= number <= maximum:
            return number
    raise ValidationError.one(name, f"must be an integer from {minimum} to {maximum}")


class Response:
    """A status, headers and a body of bytes; a WSGI application by itself."""

    __slots__ = ("status", "headers", "body", "data", "etag")

    def __init__(
        self,
        body: bytes = b"",
        status: int = 200,
        headers: list[tuple[str, str]] | None = None,
        data: Any = None,
    ) -> None:
        self.status = status
        self.headers = headers if headers is not None else []
        self.body = body
        # The Python value behind a JSON body, kept so it can be re-rendered as XML/CSV.
        self.data = data
        # The entity tag (unquoted) when the handler knows it already (a static
        # file's, made once); else the router hashes the body (web/conditional.py).
        self.etag: str | None = None

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key == name:  # as refapi writes it (PERF: 600 instructions a GET)
                return value
        lowered = name.lower()
        for key, value in self.headers:
            if key.lower() == lowered:
                return value
        return None

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        headers = self.headers
        if self.status in (204, 304):
            start_response(STATUS_LINES[self.status], headers)
            return []
        headers.append(("Content-Length", str(len(self.body))))
        start_response(STATUS_LINES[self.status], headers)
        # HEAD: the same headers as GET, no body (RFC 9110 section 9.3.2).
        if environ["REQUEST_METHOD"] == "HEAD":
            return []
        return [self.body]


class CutShort(ConnectionResetError):
    """Raised by a streamed answer's chunks to drop its connection part way, on
    purpose (the report card's cut download, docs/lab.md): a WSGI server ends the
    connection of an answer whose iterable raises once its head is out (PEP 3333),
    and gunicorn's sync worker takes a reset connection quietly, as a client's,
    where any other exception would be logged with its traceback."""

    def __init__(self) -> None:
        super().__init__(errno.ECONNRESET, "the answer is cut short on purpose")


class Streamed(Response):
    """An answer whose body is written as it is made (the lab's streams, drip and
    events): ``chunks`` goes to the server as it is, so it writes each chunk when
    it comes (chunked under HTTP/1.1, unless ``length`` says the size first). It
    has no ``body`` to hash, so no ``ETag`` (the router asks ``Route.streamed``)."""

    __slots__ = ("chunks", "length")

    def __init__(
        self,
        chunks: Iterator[bytes],
        status: int = 200,
        headers: list[tuple[str, str]] | None = None,
        length: int | None = None,
    ) -> None:
        super().__init__(b"", status, headers)
        self.chunks = chunks
        self.length = length

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        if self.length is not None:
            self.headers.append(("Content-Length", str(self.length)))
        start_response(STATUS_LINES[self.status], self.headers)
        if environ["REQUEST_METHOD"] == "HEAD":
            close = getattr(self.chunks, "close", None)
            if close is not None:
                close()
            return []
        return self.chunks


def _encode_extra(value: Any) -> Any:
    if isinstance(value, Decimal):
        # Amounts have at most 10 significant digits, so the float's shortest repr
        # is exactly the decimal; whole numbers stay integers (10, not 10.0).
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, OverlongNumber):
        # Its text, a string: converting it is what the parser refused to do (the
        # lab's echo of a body, docs/lab.md; every schema refuses one).
        return value.token
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


# Both encoders are made once. What they encode is a tree made for the request (a
# record, a page, a parsed body), never a cycle, so they skip the check for one,
# which keeps every object and array in a dictionary while it is written. The
# bytes are the same.
# PERF: a tenth of a 100-item page's encoding (1,915,000 instructions to
# 1,836,000), make bench-instructions
_encoder = json.JSONEncoder(
    ensure_ascii=False,
    separators=(",", ":"),
    check_circular=False,
    default=_encode_extra,
)


_canonical = json.JSONEncoder(
    ensure_ascii=False,
    separators=(",", ":"),
    sort_keys=True,
    check_circular=False,
    default=_encode_extra,
)


def _one_shot(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """``encoder.encode``, or, where CPython's C encoder is there, that encoder made
    once with ``encoder``'s settings: ``encode`` makes a new one at every call
    (with a closure and two Python calls around it), whose settings never change
    here. The text is the same: ``encode`` writes through that C encoder too.
    PERF: about 6,000 instructions a JSON answer, make bench-instructions"""
    make = json.encoder.c_make_encoder  # type: ignore[attr-defined]
    # Without the C accelerator, or with settings made per call (a cycle check's
    # markers) or the C encoder does not take (an indent), ``encode`` itself.
    if make is None or encoder.check_circular or encoder.indent is not None:
        return encoder.encode
    chunks = make(
        None, encoder.default,
        json.encoder.encode_basestring_ascii if encoder.ensure_ascii
        else json.encoder.encode_basestring,
        None, encoder.key_separator, encoder.item_separator, encoder.sort_keys,
        encoder.skipkeys, encoder.allow_nan,
    )  # fmt: skip
    return lambda data: "".join(chunks(data, 0))


_encode, _encode_canonical = _one_shot(_encoder), _one_shot(_canonical)


def json_bytes(data: Any) -> bytes:
    return _encode(data).encode()


def canonical_json(data: Any) -> bytes:
    """Sorted keys, no spaces, numbers in shortest form: equal JSON, equal bytes."""
    return _encode_canonical(data).encode()


def json_response(
    data: Any, status: int = 200, headers: list[tuple[str, str]] | None = None
) -> Response:
    """The one way a JSON body is made: compact UTF-8 with the JSON content type."""
    all_headers = [("Content-Type", JSON_TYPE)]
    if headers:
        all_headers.extend(headers)
    return Response(json_bytes(data), status, all_headers, data)


def empty_response(
    status: int = 204, headers: list[tuple[str, str]] | None = None
) -> Response:
    return Response(b"", status, headers or [])


def error_response(error: ApiError) -> Response:
    return json_response(error.body(), error.status, list(error.headers))
