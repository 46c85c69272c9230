"""The keys the service signs with: one function for each thing it signs.

All come from one secret: ``REFAPI_SECRET_KEY`` when it is set, else the key made
on first start and kept in the database (docs/configuration.md, "Where the data
lives"), so every worker and host on the same data signs alike, and a cursor or a
session's CSRF token outlives a restart. What one signs cannot pass for another:
a cursor signs ``scope:last id:epoch``, a CSRF token ``csrf:<login id>``, a Digest
nonce of the lab ``digest-nonce:<time and salt>:<path>`` (docs/lab.md, "Digest
authentication"), and the proxy's pseudonym in ``Via`` is the HMAC of ``via``
alone, shown to every upstream (docs/api.md, "The proxy").
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import TYPE_CHECKING

from ..errors import LoopDetected

if TYPE_CHECKING:
    from ..config import Config
    from ..storage.base import MetaStore
    from .wsgi import Request

# A refapi service's name in Via, wherever it stands in an entry (a protocol
# before it, a comment after).
PSEUDONYM = re.compile(r"(?<![\w-])refapi-[0-9a-f]{8}(?![\w-])")


def cursor_key(config: Config, store: MetaStore) -> bytes:
    """The key that signs pagination cursors (``web/pagination.py``)."""
    return _secret(config, store)


def csrf_key(config: Config, store: MetaStore) -> bytes:
    """The key of a session's CSRF token (``web/auth.py``)."""
    return _secret(config, store)


def digest_nonce_key(config: Config, store: MetaStore) -> bytes:
    """The key of the lab's Digest nonces (``lab/digest.py``)."""
    return _secret(config, store)


def via_pseudonym(config: Config, store: MetaStore) -> str:
    """What the proxy calls this service in ``Via`` (``handlers/proxy/``)."""
    # Eight hex digits of an HMAC (RFC 2104): the same on every worker and host
    # sharing the data, naming no host or address, and no help in finding the key.
    digest = hmac.new(_secret(config, store), b"via", hashlib.sha256).hexdigest()
    return "refapi-" + digest[:8]


def refuse_loop(
    request: Request, config: Config, store: MetaStore
) -> tuple[str, list[str]]:
    """This service's pseudonym and the refapi services the request's ``Via``
    names; ``508 LOOP_DETECTED`` when it names this one: the request came through
    this service's proxy, which waits for it (the lab's slow routes ask too)."""
    ours = via_pseudonym(config, store)
    passed = PSEUDONYM.findall(request.headers.get("Via", ""))
    if ours in passed:
        raise LoopDetected()
    return ours, passed


def _secret(config: Config, store: MetaStore) -> bytes:
    # The store keeps the generated key once read; a configured one wins.
    return config.secret_key or store.secret_key()
