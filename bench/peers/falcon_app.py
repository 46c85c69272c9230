"""The same endpoints as Falcon 4 resources doing the work refapi's stack does (a
peer, benchmark only).

Around the same storage work as the bare app (``common``), Falcon's middleware does
what refapi's layers do on these requests, the way a Falcon app would write it:

- a request id (an inbound ``X-Request-Id`` kept when valid, else a prefix and a
  counter), echoed with ``X-Content-Type-Options: nosniff``;
- CORS, by Falcon's own ``CORSMiddleware`` (``cors_enable``), any origin as refapi's
  default;
- an ``ETag`` on a 200 to a GET (the same hash of the same bytes as refapi's), and a
  304 to a matching ``If-None-Match``;
- the Bearer token's check: its SHA-256 looked up by refapi's store
  (``find_token``, with the credentials it remembers), 401 when unknown;
- a token from the caller's bucket in refapi's shared bucket file (the principal's,
  else the address's), its ``RateLimit`` fields, 429 when empty;
- one request log line, by ``logging`` in the format ``REFAPI_LOG_FORMAT`` names
  (refapi's formatter, so the line is the same), to standard output;
- with ``REFAPI_METRICS``, prometheus-client's counter and histogram, labelled as
  refapi's, in its multiprocess mode, as a gunicorn app sums its workers' figures:
  in the folder ``PROMETHEUS_MULTIPROC_DIR`` names (``run.py`` names one for the
  server's workers), else one of the process's own.

The buckets and credentials are refapi's storage capabilities on purpose: the
comparison is of the HTTP layers, as the SQL is shared with the bare app.
"""

from __future__ import annotations

import atexit
import hashlib
import itertools
import logging
import math
import os
import re
import secrets
import shutil
import sys
import tempfile
import time

import baseline
import common
import falcon

from refapi.logs import formatter
from refapi.storage.sqlite import SqliteStore
from refapi.web.auth import secret_hash

CONTENT_TYPE = baseline.CONTENT_TYPE
CAPACITY = int(os.environ.get("REFAPI_RATE_LIMIT_CAPACITY", "100"))
REFILL = float(os.environ.get("REFAPI_RATE_LIMIT_REFILL", "10"))
POLICY = f'"default";q={CAPACITY};w={math.ceil(CAPACITY / REFILL)}'
_VALID_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
_BEARER = re.compile(r"Bearer ([A-Za-z0-9._~+/-]+=*)")
_store: SqliteStore | None = None


def store() -> SqliteStore:
    """refapi's store on the benchmark's database, opened after the fork."""
    global _store
    if _store is None:
        _store = SqliteStore(os.environ["BENCH_DB"])
    return _store


class RequestId:
    def __init__(self) -> None:
        self.prefix, self.counter = secrets.token_hex(10), itertools.count()

    def process_request(self, req, resp):
        request_id = req.get_header("X-Request-Id") or ""
        if not _VALID_ID.fullmatch(request_id):
            request_id = f"{self.prefix}{next(self.counter):012x}"
        req.context.request_id = request_id
        resp.set_header("X-Request-Id", request_id)
        resp.set_header("X-Content-Type-Options", "nosniff")


class Observe:
    """One log line and the metrics, once the response is made."""

    def __init__(self) -> None:
        self.log = logging.getLogger("peer.request")
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(formatter(os.environ.get("REFAPI_LOG_FORMAT", "json")))
        self.log.addHandler(handler)
        self.log.setLevel(logging.INFO)
        self.log.propagate = False
        self.metrics = None
        if os.environ.get("REFAPI_METRICS"):
            if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # before the import
                folder = tempfile.mkdtemp(prefix="refapi-bench-peer-")
                atexit.register(shutil.rmtree, folder, True)
                os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder
            from prometheus_client import Counter, Histogram

            labels = ("mount", "route", "method")
            self.metrics = (
                Counter("peer_requests_total", "Requests.", (*labels, "status")),
                Histogram("peer_request_duration_seconds", "Seconds.", labels),
            )

    def process_request(self, req, resp):
        req.context.started = time.perf_counter()
        req.context.caller = None

    def process_response(self, req, resp, resource, req_succeeded):
        seconds = time.perf_counter() - req.context.started
        status = resp.status_code
        route = req.uri_template
        self.log.info(
            "%s %s %d", req.method, req.path, status,
            extra={"requestId": req.context.request_id, "traceId": None,
                   "method": req.method, "route": route, "status": status,
                   "durationMs": round(seconds * 1000, 3),
                   "bytes": len(resp.data or b""), "caller": req.context.caller},
        )  # fmt: skip
        if self.metrics is not None:
            requests, duration = self.metrics
            mount = req.root_path
            requests.labels(mount, route, req.method, str(status)).inc()
            duration.labels(mount, route, req.method).observe(seconds)


class Authenticate:
    def process_request(self, req, resp):
        header = req.auth
        if header is None:
            return
        match = _BEARER.fullmatch(header)
        digest = secret_hash(match[1]) if match else ""
        found = match and store().find_token("bearer", digest, time.time())
        if not found:
            raise falcon.HTTPUnauthorized(title="The Bearer token is not valid.")
        req.context.caller = f"user:{found['user']['id']}"


class RateLimit:
    def process_request(self, req, resp):
        key = req.context.caller or f"addr:{req.remote_addr}"
        allowed, [level] = store().buckets.take(((key, CAPACITY, REFILL),), time.time())
        resp.set_header("RateLimit-Policy", POLICY)
        resp.set_header("RateLimit", f'"default";r={int(level)};t=0')
        if not allowed:
            raise falcon.HTTPTooManyRequests(retry_after=1)


class ETag:
    def process_response(self, req, resp, resource, req_succeeded):
        if req.method != "GET" or resp.status_code != 200 or resp.data is None:
            return
        digest = hashlib.blake2b(CONTENT_TYPE.encode(), digest_size=12)
        digest.update(b"\n")
        digest.update(resp.data)
        tag = resp.etag = f'"{digest.hexdigest()}"'
        if any(seen.dumps() == tag for seen in req.if_none_match or ()):
            resp.status, resp.data = falcon.HTTP_304, None


class Todo:
    def on_get(self, req, resp, todo_id):
        resp.data = common.dumps(common.get_todo(todo_id))


class Article:
    def on_get(self, req, resp, article_id):
        resp.data = common.dumps(common.get_article(article_id))


class Articles:
    def on_post(self, req, resp):
        article = common.create_article(req.get_media())
        resp.data = common.dumps(article)
        resp.status, resp.location = falcon.HTTP_201, f"/v1/articles/{article['id']}"
        resp.cache_control = ["no-store"]


class Items:
    def on_get(self, req, resp):
        limit = req.get_param_as_int("limit", default=20)
        page = common.list_items(req.get_param("cursor"), limit)
        if page["nextCursor"]:
            after = page["nextCursor"]
            resp.set_header("X-Next-Cursor", after)
            link = f'</v1/items?cursor={after}&limit={limit}>; rel="next"'
            resp.set_header("Link", link)
        resp.data = common.dumps(page)


class Payments:
    def on_post(self, req, resp):
        status, body, payment_id = common.create_payment(
            req.get_header("Idempotency-Key"), req.get_media()
        )
        resp.data, resp.status = body, falcon.code_to_http_status(status)
        resp.location, resp.cache_control = f"/v1/payments/{payment_id}", ["no-store"]


application = falcon.App(
    media_type=CONTENT_TYPE,
    cors_enable=True,
    # Outermost first, as refapi's stack: process_response runs in reverse.
    middleware=[RequestId(), Observe(), Authenticate(), RateLimit(), ETag()],
)
application.resp_options.default_media_type = CONTENT_TYPE
application.add_route("/v1/todos/{todo_id:int}", Todo())
application.add_route("/v1/articles/{article_id:int}", Article())
application.add_route("/v1/articles", Articles())
application.add_route("/v1/items", Items())
application.add_route("/v1/payments", Payments())
