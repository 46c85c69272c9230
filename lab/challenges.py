"""httpbin's authentication challenges: the lab's own, never the service's.

- ``/lab/basic-auth/{user}/{passwd}`` answers ``200 {"authenticated": true,
  "user"}`` to ``Authorization: Basic`` with that user and password (RFC 7617),
  else ``401 UNAUTHENTICATED`` with ``WWW-Authenticate: Basic realm="refapi lab"``;
  ``/lab/hidden-basic-auth/...`` answers ``404`` instead, so a client that waits
  for a challenge never sends the credentials.
- ``/lab/bearer`` answers ``200 {"authenticated": true, "token"}`` to any
  ``Authorization: Bearer`` (RFC 6750), the token ``[redacted]`` as every
  credential the lab shows, else ``401`` with ``WWW-Authenticate: Bearer``.

The user and password are the path's: nothing here is the service's account, and
the service's ``Authenticate`` reads nothing under ``/lab/`` (docs/lab.md,
"Authentication"). Every answer is ``no-store``.
"""

from __future__ import annotations

import hmac

from ..errors import NotFound
from ..web import Request, Response, json_response
from ..web.auth import parsed_authorization
from .errors import Challenged
from .handlers import REDACTED

REALM = "refapi lab"


def basic_auth(request: Request, user: str, passwd: str) -> Response:
    if not _presents(request, user, passwd):
        raise Challenged(
            f'Basic realm="{REALM}"', "Send this path's user and password (Basic)."
        )
    return json_response({"authenticated": True, "user": user})


def hidden_basic_auth(request: Request, user: str, passwd: str) -> Response:
    if not _presents(request, user, passwd):
        raise NotFound()
    return json_response({"authenticated": True, "user": user})


def bearer(request: Request) -> Response:
    scheme, _, token = request.environ.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Challenged("Bearer", "Send a Bearer token, any one.")
    return json_response({"authenticated": True, "token": REDACTED})


def _presents(request: Request, user: str, passwd: str) -> bool:
    """Whether the request sends Basic credentials of ``user`` and ``passwd``
    (compared in constant time, as any password: ``hmac``)."""
    sent = parsed_authorization(request.environ.get("HTTP_AUTHORIZATION"))
    if sent is None or sent.type != "basic":
        return False
    same_user = hmac.compare_digest((sent.username or "").encode(), user.encode())
    same_password = hmac.compare_digest((sent.password or "").encode(), passwd.encode())
    return same_user and same_password
