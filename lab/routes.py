"""The lab's route table: what ``/lab/`` answers, one row per operation.

The rows are the router's own (``router.route.Route``), so the front door serves
them with the same router as the core's, and the same generator makes the lab's
OpenAPI document from them (``/lab/openapi.json``). Every row is public and reads
no credential (decisions of the lab: docs/lab.md, "Conventions"), and answers
whatever ``Accept`` says (``negotiated=False``): JSON, or the one type its row
``produces`` (the bodies' pages, texts and bytes). The old paths under ``/api/``
answer ``308`` to their new ones, with ``Deprecation`` and ``Sunset``
(docs/lab.md, "Moved").
"""

from __future__ import annotations

from .. import schemas
from ..errors import (
    Busy,
    LoopDetected,
    MalformedRequest,
    NotFound,
    PayloadTooLarge,
    PreconditionFailed,
    ValidationError,
)
from ..router.route import ANY_BODY, Answer, Param, Route
from ..web.negotiation import HTML, XML
from . import (
    bodies,
    caching,
    challenges,
    cookies,
    digest,
    explain,
    grade,
    handlers,
    ranges,
    redirects,
    reflect,
    response_headers,
    slow,
)
from .errors import (
    Challenged,
    DigestChallenged,
    RangeNotSatisfiable,
    RedirectHostNotAllowed,
    Simulated,
)
from .params import (
    ABSOLUTE,
    ALGORITHM,
    ANY_ETAG,
    BYTES,
    CHUNK_SIZE,
    CODES,
    COUNT,
    DELETE_COOKIES,
    DRIP,
    ETAG,
    EVENTS,
    FIELDS,
    LINES,
    LINKS,
    MAX_AGE,
    OCTETS,
    OFFSET,
    PASSWD,
    PLAIN,
    QOP,
    RANGE_SIZE,
    REDIRECT_STATUS,
    REST,
    SECONDS,
    SEED,
    SET_COOKIES,
    STALE_AFTER,
    URL,
    USER,
    VALUE,
)

# What the front door hands to the lab: its own paths, and the old ones
# (handlers.MOVED): these prefixes, and the exact OLD_PATHS.
MOUNTED = ("/lab/", *(old for old in handlers.MOVED if old.endswith("/")))
OLD_PATHS = frozenset(old for old in handlers.MOVED if not old.endswith("/"))
# Handed over as they are: the old paths, and /lab (the lab's front).
EXACT = OLD_PATHS | {"/lab"}

# The status answers any status asked (docs/lab.md, "Statuses").
_SIMULATED = (
    Answer("204", None, "Asked for: no body."),
    Answer("2XX", "lab-status", "The status asked for (no body on 204); 201 with "
           "Location."),
    Answer("304", None, "Asked for: no body."),
    Answer("3XX", "lab-status", "The redirect asked for, to /lab/anything "
           "(Location); 304 without a body."),
    Answer("4XX", "error", "The status asked for, code SIMULATED (401 with "
           "WWW-Authenticate, 405 with Allow, 429 with Retry-After)."),
    Answer("5XX", "error", "The status asked for, code SIMULATED (503 with "
           "Retry-After)."),
)  # fmt: skip
_MOVED = (Answer("308", None, "Moved to /lab/: Location, Deprecation, Sunset.",
                 ("Location", "Deprecation", "Sunset")),)  # fmt: skip
KiB = 1024
_PARTIAL = (Answer("206", None, "The one range asked (Range), If-Range naming "
                   "the body's ETag or absent: those bytes alone.",
                   ("Content-Range", "Accept-Ranges", "ETag"),
                   produces=(OCTETS,)),)  # fmt: skip
_SLOW = (
    "slow work, as a delay is: `429` beyond the host's share, `508` through "
    "this service's proxy"
)

ROUTES: tuple[Route, ...] = (
    # The lab's front (docs/lab.md): its document and its paths; /lab/ to it.
    Route("GET", "/lab", handlers.lab_index, response="lab-index",
          sample=schemas.sample("lab-index"), negotiated=False, status=200,
          description="The lab's document and every path it answers. Public."),
    Route("GET", "/lab/", handlers.to_lab_index, documented=False, negotiated=False,
          answers=(Answer("308", None, "To /lab.", ("Location",)),)),
    # The echo: httpbin's members and the method, at any path below it too.
    *(Route(method, path, handler, params=params, response="lab-request",
            sample=schemas.sample("lab-anything"), negotiated=False, sensitive=True,
            body_types=ANY_BODY,
            errors=(MalformedRequest, PayloadTooLarge, ValidationError), status=200,
            description=f"The request in httpbin's members{where}, with the method: "
            "its query, body (as data, form and files, and json), headers "
            "(credentials redacted), client address, URL and the kinds of "
            "credential sent, none checked. Public.")
      for method in handlers.METHODS
      for path, handler, params, where in (
          ("/lab/anything", reflect.reflect_anything, (), ""),
          ("/lab/anything/{path}", reflect.reflect_anything_at, (REST,),
           " (any path below /lab/anything/)"),
      )),
    # httpbin's request endpoints, each of one method (docs/lab.md, "Requests").
    Route("GET", "/lab/get", reflect.reflect_get, response="lab-request",
          sample=schemas.sample("lab-get"), negotiated=False, sensitive=True,
          status=200, description="The query, the headers (credentials redacted), "
          "the client address and the URL, in httpbin's members. Public."),
    *(Route(method, f"/lab/{method.lower()}", reflect.reflect_request,
            response="lab-request", sample=schemas.sample("lab-request"),
            negotiated=False, sensitive=True, body_types=ANY_BODY,
            errors=(MalformedRequest, PayloadTooLarge, ValidationError), status=200,
            description=f"The {method} request in httpbin's members: its query, "
            "body (as data, form and files, and json), headers (credentials "
            "redacted), client address and URL. Public.")
      for method in ("POST", "PUT", "PATCH", "DELETE")),
    # Each answer is the request's own (a UUID, new each time): no-store.
    *(Route("GET", f"/lab/{name}", handler, response=f"lab-{name}",
            sample=schemas.sample(f"lab-{name}"), negotiated=False,
            sensitive=True, status=200, description=f"{said} Public.")
      for name, handler, said in (
          ("headers", reflect.reflect_headers,
           "The request's header fields by name (credentials redacted)."),
          ("ip", reflect.reflect_ip, "The client address, after REFAPI_TRUST_PROXY."),
          ("user-agent", reflect.reflect_user_agent, "The request's User-Agent."),
          ("uuid", reflect.reflect_uuid, "A new UUID, version 4."),
      )),
    *(Route(method, "/lab/status/{codes}", handlers.answer_status,
            params=(CODES, SEED), response="lab-status",
            sample=schemas.sample("lab-status"), negotiated=False,
            errors=(Simulated,), answers=_SIMULATED, status=200,
            description="Answer with the status asked, or one picked by weight "
            "(`?seed=` repeats a pick), and what it requires. Public.")
      for method in handlers.METHODS),
    *(Route(method, "/lab/delay/{seconds}", slow.delay_response,
            params=(SECONDS,), response="delay", sample=schemas.sample("delay"),
            negotiated=False, sensitive=True, errors=(ValidationError, LoopDetected),
            status=200,
            description="/lab/get's members and the seconds waited, after that many "
            "(at most REFAPI_LAB_MAX_DELAY): slow work, which holds at "
            "most all but one of the host's slots with the proxy and the explainer "
            "(beyond that, `429`); `508` when it came through this service's "
            "proxy. Public.")
      for method in handlers.METHODS),
    # Written as they are made (docs/lab.md, "Streams").
    Route("GET", "/lab/stream/{n}", slow.stream_lines, params=(LINES,),
          produces=(slow.LINES_TYPE,), negotiated=False, sensitive=True,
          streamed=True, status=200,
          description="n JSON lines (at most 100), each /lab/get's members with an "
          "id from 0, written as made. Public."),
    Route("GET", "/lab/stream-bytes/{n}", slow.stream_bytes,
          params=(BYTES, SEED, CHUNK_SIZE), produces=(OCTETS,),
          negotiated=False, sensitive=True, streamed=True, status=200,
          description="/lab/bytes/{n}'s bytes (at most REFAPI_LAB_MAX_BYTES; the "
          "same for the same `?seed=`), written as made in chunks of chunk_size "
          f"bytes (at most {slow.MAX_STEPS} chunks). Public."),
    Route("GET", "/lab/drip", slow.drip, params=DRIP, produces=(OCTETS,),
          negotiated=False, streamed=True, status=200,
          errors=(ValidationError, LoopDetected),
          answers=(Answer("2XX", None, "The code asked, with its asterisks.",
                          produces=(OCTETS,)),),
          description="After delay seconds, numbytes asterisks spread over duration "
          f"seconds, Content-Length first: {_SLOW}. Public."),
    Route("GET", "/lab/sse", slow.events, params=EVENTS, response="lab-event",
          produces=(slow.EVENT_TYPE,), negotiated=False, sensitive=True,
          streamed=True, status=200, errors=(ValidationError, LoopDetected),
          answers=(Answer("204", None, "No event after Last-Event-ID: an "
                          "EventSource stops reconnecting."),),
          description="count server-sent events (at most 100), delay seconds "
          f"apart, after Last-Event-ID: {_SLOW}. Public."),
    # Redirects (docs/lab.md, "Redirects"): a chain of n, and one to a URL named.
    *(Route("GET", f"/lab/{name}/{{n}}", handler, params=(COUNT, *more),
            status=302, headers=("Location",), negotiated=False,
            errors=(ValidationError,),
            description=f"302 to the next of a chain of n ({said}); the last one to "
            "/lab/get. Public.")
      for name, handler, more, said in (
          ("redirect", redirects.redirect_n, (ABSOLUTE,),
           "relative-redirect, or absolute-redirect with ?absolute=true"),
          ("relative-redirect", redirects.relative_redirect, (),
           "Location a path"),
          ("absolute-redirect", redirects.absolute_redirect, (),
           "Location a URL of the request's own host"),
      )),
    *(Route(method, "/lab/redirect-to", redirects.redirect_to,
            params=(Param("url", "string", required=True, schema=URL),
                    Param("status_code", "integer", schema=REDIRECT_STATUS)),
            status=302, headers=("Location",), negotiated=False,
            body_types=ANY_BODY, errors=(ValidationError, RedirectHostNotAllowed),
            answers=(Answer("3XX", None, "The status_code asked for, to the url.",
                            ("Location",)),),
            description="302 (or status_code) to url: relative to this URL, a path "
            "from the lab's root, or an http(s) URL of this host or one of "
            "REFAPI_LAB_REDIRECT_HOSTS (another host is 403). Public.")
      for method in handlers.METHODS),
    # The lab's own challenges (docs/lab.md, "Authentication").
    *(Route("GET", f"/lab/{name}/{{user}}/{{passwd}}", handler,
            params=(USER, PASSWD), response="lab-authenticated",
            sample=schemas.sample("lab-authenticated"), negotiated=False,
            sensitive=True, errors=(error,),
            description=f"200 to Basic credentials of the path's user and "
            f"password (RFC 7617); else {said}. Public.")
      for name, handler, error, said in (
          ("basic-auth", challenges.basic_auth, Challenged,
           "401 with the lab's Basic challenge"),
          ("hidden-basic-auth", challenges.hidden_basic_auth, NotFound,
           "404, no challenge"),
      )),
    *(Route("GET", "/lab/digest-auth/{qop}/{user}/{passwd}" + more, handler,
            params=(QOP, USER, PASSWD, *params), response="lab-authenticated",
            sample=schemas.sample("lab-authenticated"), negotiated=False,
            sensitive=True, headers=("Set-Cookie",),
            errors=(ValidationError, DigestChallenged, PayloadTooLarge,
                    MalformedRequest),
            description="200 to Digest credentials of the path's user and "
            f"password (RFC 7616), {said}; else 401 with the lab's Digest "
            "challenge (stale=true for a right answer to a stale nonce). Public.")
      for more, handler, params, said in (
          ("", digest.digest_auth, (), "MD5"),
          ("/{algorithm}", digest.digest_auth_algorithm, (ALGORITHM,),
           "by the algorithm named"),
          ("/{algorithm}/{stale_after}", digest.digest_auth_stale_after,
           (ALGORITHM, STALE_AFTER),
           "by the algorithm named, a nonce serving stale_after requests"),
      )),
    Route("GET", "/lab/bearer", challenges.bearer, response="lab-bearer",
          sample=schemas.sample("lab-bearer"), negotiated=False, sensitive=True,
          errors=(Challenged,),
          description="200 to any Bearer token (RFC 6750), shown redacted; else "
          "401 with the lab's Bearer challenge. Public."),
    # Cookies, the lab's own only (docs/lab.md, "Cookies").
    Route("GET", "/lab/cookies", cookies.cookies, response="lab-cookies",
          sample=schemas.sample("lab-cookies"), negotiated=False, sensitive=True,
          status=200, description="The cookies sent, by name, but the service's own "
          "(refapi_...), which the lab never shows. Public."),
    Route("GET", "/lab/cookies/set", cookies.set_cookies,
          params=(SET_COOKIES,),
          status=302, headers=("Location",), negotiated=False, sensitive=True,
          errors=(ValidationError,),
          description="302 to /lab/cookies, setting each cookie of the query, kept "
          "to the lab's path, at most 10 of at most 256 bytes, for at most a day; "
          "a name starting refapi_, __Host- or __Secure- is 400. Public."),
    Route("GET", "/lab/cookies/delete", cookies.delete_cookies,
          params=(DELETE_COOKIES,),
          status=302, headers=("Location",), negotiated=False, sensitive=True,
          errors=(ValidationError,),
          description="302 to /lab/cookies, expiring each cookie the query names. "
          "Public."),
    # Header fields of the client's choosing, within the lab's rules.
    *(Route(method, "/lab/response-headers", response_headers.response_headers,
            params=(FIELDS,),
            response="lab-response-headers",
            sample=schemas.sample("lab-response-headers"), negotiated=False,
            produces=response_headers.CONTENT_TYPES,
            body_types=ANY_BODY,
            errors=(ValidationError,), status=200,
            description="200 with each header field of the query, and them as the "
            "body; the framing, hop-by-hop, CORS and security fields, and those the "
            "service writes itself, are 400; Set-Cookie follows /lab/cookies/set's "
            "rules. Public.")
      for method in ("GET", "POST")),
    # httpbin's bodies (docs/lab.md, "Bodies"): the reflection content-coded, no
    # more cacheable than /lab/get's; fixed documents; decoded, random, linked.
    *(Route("GET", f"/lab/{name}", handler, response="lab-encoded",
            sample=schemas.sample(f"lab-{name}"), negotiated=False, sensitive=True,
            status=200, headers=("Content-Encoding",),
            description=f"/lab/get's members and the method, with \"{said}\": "
            f"true, the body coded {coding} (Content-Encoding) whatever "
            "Accept-Encoding says. Public.")
      for name, handler, said, coding in (
          ("gzip", bodies.send_gzip, "gzipped", "gzip"),
          ("deflate", bodies.send_deflate, "deflated", "deflate (a zlib stream)"),
          ("brotli", bodies.send_brotli, "brotli", "br"),
      )),
    *(Route("GET", path, handler, produces=(kind,), negotiated=False, status=200,
            description=f"{said} Public.")
      for path, handler, kind, said in (
          ("/lab/html", bodies.send_html, HTML, "A fixed HTML page."),
          ("/lab/encoding/utf8", bodies.send_utf8, HTML,
           "A fixed HTML page of many scripts, in UTF-8."),
          ("/lab/xml", bodies.send_xml, XML, "A fixed XML document: /lab/json's "
           "slide show."),
          ("/lab/robots.txt", bodies.send_robots, PLAIN,
           "Rules for robots: not /lab/deny."),
          ("/lab/deny", bodies.send_deny, PLAIN,
           "What robots.txt keeps robots from: a text that says so."),
      )),
    Route("GET", "/lab/json", bodies.send_json, response="lab-slideshow",
          sample=schemas.sample("lab-json"), negotiated=False, status=200,
          description="A fixed JSON document: a slide show. Public."),
    Route("GET", "/lab/base64/{value}", bodies.decode_base64, params=(VALUE,),
          produces=(PLAIN,), negotiated=False, status=200, errors=(ValidationError,),
          description="The URL-safe base64 value decoded, as text/plain always "
          "(never HTML, whatever it holds). Public."),
    Route("GET", "/lab/bytes/{n}", bodies.send_bytes,
          params=(BYTES, SEED), produces=(OCTETS,),
          negotiated=False, sensitive=True, status=200,
          description="n random bytes (at most REFAPI_LAB_MAX_BYTES), new each time "
          "(no-store), or the same for the same `?seed=`. Public."),
    Route("GET", "/lab/links/{n}/{offset}", bodies.send_links,
          params=(LINKS, OFFSET), produces=(HTML,), negotiated=False, status=200,
          description="An HTML page of n links (at most "
          f"{bodies.MAX_LINKS}) to /lab/links/{{n}}/{{i}}, but the offset's. Public."),
    # A body in parts (docs/lab.md, "Ranges").
    Route("GET", "/lab/range/{n}", ranges.send_range, params=(RANGE_SIZE,),
          produces=(OCTETS,), negotiated=False, status=200,
          headers=("Accept-Ranges",), errors=(RangeNotSatisfiable,),
          answers=_PARTIAL,
          description="n bytes of the alphabet (at most REFAPI_LAB_MAX_BYTES), "
          "Accept-Ranges: bytes: one range in Range is 206 with Content-Range (416 "
          "when it holds no byte), unless If-Range names another entity tag; "
          "several ranges, or none, the whole. Public."),
    # Caching (docs/lab.md, "Caching"): kept by caches, so not no-store.
    Route("GET", "/lab/cache", caching.answer_cache, response="lab-request",
          sample=schemas.sample("lab-get"), negotiated=False, status=200,
          headers=("Last-Modified",),
          description="/lab/get's members with Last-Modified and ETag; 304 to any "
          "If-Modified-Since or If-None-Match. Public."),
    Route("GET", "/lab/cache/{n}", caching.answer_cache_for, params=(MAX_AGE,),
          response="lab-request", sample=schemas.sample("lab-get"),
          negotiated=False, status=200, headers=("Cache-Control",),
          description="/lab/get's members with Cache-Control: public, "
          "max-age=n. Public."),
    Route("GET", "/lab/etag/{etag}", caching.answer_etag, params=(ETAG,),
          response="lab-request", sample=schemas.sample("lab-get"),
          negotiated=False, status=200, errors=(ValidationError, PreconditionFailed),
          header_schemas={"ETag": ANY_ETAG},
          description="/lab/get's members with the path's entity tag: 412 to an "
          "If-Match that does not list it, then 304 to an If-None-Match that "
          "does. Public."),
    # The explainer runs a request through the service as the caller, so its
    # answer depends on the caller's credentials (no-store), and it passes a
    # bucket of its own (docs/explain.md).
    Route("POST", explain.PATH, explain.explain_exchange, schema="explain-form",
          body_limit=64 * KiB, body_depth=3, response="explain",
          sample=schemas.sample("explain"), status=200, sensitive=True,
          buckets=("explain",), errors=(Busy,), negotiated=False,
          description="Run a request through the service, in process, as the "
          "caller, and answer the exchange: the request as received, the "
          "response, what each status and header means (with its RFC section, and "
          "for refapi's own rules the layer that set it and the docs section that "
          "says why), and httplint's notes on the response. Public; off with "
          "REFAPI_LAB=0."),
    # The report card for clients (docs/lab.md, "A report card for clients").
    *grade.ROUTES,
    Route("GET", "/lab/openapi.json", handlers.get_lab_document, documented=False,
          negotiated=False),
    # The old paths: 308 to the new, every method kept (RFC 9110 section 15.4.9).
    *(Route(method, path, handler, documented=False, negotiated=False,
            answers=_MOVED)
      for method in handlers.METHODS
      for path, handler in (("/api/echo", handlers.moved),
                            ("/api/status/{code}", handlers.moved_status),
                            ("/api/delay/{seconds}", handlers.moved_delay))),
    Route("POST", "/api/explain", handlers.moved, documented=False,
          negotiated=False, answers=_MOVED),
)  # fmt: skip


def mounted(path: str) -> bool:
    """Whether the front door hands a request for ``path`` to the lab: under
    ``/lab/``, ``/lab`` itself, or one of the old paths that answer 308."""
    return path.startswith(MOUNTED) or path in EXACT
