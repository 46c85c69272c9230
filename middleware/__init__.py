"""The middleware stack: small WSGI classes, each owning one cross-cutting concern.

Each takes the application it wraps and its options, precomputes what it can, and in
``__call__`` runs a short series of early returns. ``app.py`` assembles them.

Headers a layer adds to the answer go into one list, ``environ[RESPONSE_HEADERS]``,
which the outermost layer that adds any starts and appends to whatever answer comes
back: a handler's, a rendered error's or a preflight's (``headers.py``). So no other
layer needs to wrap ``start_response`` or catch errors just to add its headers.

Each layer works alone, or in another order than ``app.py``'s: what it needs from
another layer it reads with a default, and its docstring says what it reads and
writes in the environ (docs/embedding.md, "The middleware on their own"); every
``refapi.*`` key is declared, with its writer and its readers, in ``web/environ.py``.

A layer may import the web helpers, the error family, the configuration, the logs
and the metrics, and the storage interface; never a handler, the route table, the
router or the lab: what a layer needs of the table, ``app.py`` hands it as an
option (``routes.credential_free_paths``, ``rate_limit_buckets``...).
"""

from __future__ import annotations

from .authenticate import Authenticate
from .cors import Cors
from .errors import Errors
from .observe import Observe
from .rate_limit import RateLimit
from .request_id import RequestId
from .trusted_proxy import TrustedProxy
from .versioning import Versioning

__all__ = [
    "Authenticate",
    "Cors",
    "Errors",
    "Observe",
    "RateLimit",
    "RequestId",
    "TrustedProxy",
    "Versioning",
]
