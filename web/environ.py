"""The keys refapi adds to the WSGI environ, each with who writes it and who reads it.

PEP 3333 leaves the environ open to a server's and a middleware's own keys, named
with a prefix of their own; ours start with ``refapi.``, as Werkzeug's ``ProxyFix``
keeps ``werkzeug.proxy_fix.orig``. A layer that reads another's key reads it with a
default (``environ.get``), so each layer works alone or in another order, and the
keys are the layers' only contract: what each writes is a plain value, for a host
to read too. Here, in ``web/``, every layer can import them: the middleware, the
router and the request object.
"""

from __future__ import annotations

from typing import Any

# RequestId writes the request's id; Errors and Observe log with it.
REQUEST_ID = "refapi.request_id"
# RequestId writes a valid traceparent's trace id, else None; Errors, Observe log it.
TRACE_ID = "refapi.trace_id"
# The outermost layer that adds a header starts the list; each such layer appends.
RESPONSE_HEADERS = "refapi.response_headers"
# That layer's start_response writes the status and headers the answer started
# with (the last, if it started twice); Observe logs and counts them.
ANSWER = "refapi.answer"
# Authenticate writes what it found (an Authentication); the router, Request.auth read.
AUTH = "refapi.auth"
# Authenticate writes the bucket key: the principal (user:7), else addr:<address>;
# RateLimit keys the default bucket on it; Observe logs it as the caller.
BUCKET_KEY = "refapi.bucket_key"
# RateLimit writes the buckets passed (name: key, tokens); RateLimits.take adds more.
BUCKETS = "refapi.buckets"
# The router writes the matched route's template; Observe logs and counts it.
ROUTE = "refapi.route"
# Errors writes True when it answers 503 for a storage fault, and so does the health
# check's 503; Observe counts it.
STORAGE_FAULT = "refapi.storage_fault"
# RateLimit (and RateLimits.take, for a handler) writes True when a bucket refuses
# the request; Observe counts the answer as a refusal. A 429 that no bucket gave
# (one the lab was asked for) is a request only (docs/operating.md, "Metrics").
RATE_LIMITED = "refapi.rate_limited"
# Slots.take writes the number of the host's slot a request's slow work holds
# (slots.py); the router lets go of it when the answer is closed, and the explainer
# writes it into the request it runs, which so takes no second.
SLOW_WORK = "refapi.slow_work"
# Where Werkzeug's ProxyFix (TrustedProxy) keeps the values it replaced.
PROXIED = "werkzeug.proxy_fix.orig"


def mount_of(environ: dict[str, Any]) -> str:
    """The instance's mount point as its host set it: ``SCRIPT_NAME``, before a
    trusted proxy's ``X-Forwarded-Prefix`` was put in front. The metrics' ``mount``
    label, so no request, whatever a proxy passes on, mints a series
    (docs/operating.md, "Metrics")."""
    proxied = environ.get(PROXIED)
    script: str | None = (
        proxied.get("SCRIPT_NAME")
        if proxied is not None
        else environ.get("SCRIPT_NAME")
    )
    return script or ""
