"""The middleware stack: small WSGI classes, each owning one cross-cutting concern.

Each takes the application it wraps and its options, precomputes what it can, and in
``__call__`` runs a short series of early returns. ``app.py`` assembles them.

Headers a layer adds to the answer go into one list, ``environ[RESPONSE_HEADERS]``,
which ``RequestId``, the outermost layer, creates and appends to whatever answer
comes back: a handler's, a rendered error's or a preflight's. So no layer needs to
wrap ``start_response`` or catch errors just to add its headers.
"""

from __future__ import annotations

from .authenticate import Authenticate
from .cors import Cors
from .errors import Errors
from .observe import Observe
from .rate_limit import RateLimit
from .request_id import RESPONSE_HEADERS, RequestId
from .trusted_proxy import TrustedProxy
from .versioning import Versioning

__all__ = [
    "RESPONSE_HEADERS",
    "Authenticate",
    "Cors",
    "Errors",
    "Observe",
    "RateLimit",
    "RequestId",
    "TrustedProxy",
    "Versioning",
]
