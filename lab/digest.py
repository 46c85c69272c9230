"""httpbin's Digest challenge (RFC 7616): the lab's own, never the service's.

``/lab/digest-auth/{qop}/{user}/{passwd}``, and the same with ``/{algorithm}`` and
``/{algorithm}/{stale_after}`` after it, answers ``200 {"authenticated": true,
"user"}`` to ``Authorization: Digest`` credentials of the path's user and
password, else ``401 UNAUTHENTICATED`` with the challenge (section 3.3)::

    WWW-Authenticate: Digest realm="refapi lab", qop="auth", nonce="...",
        opaque="...", algorithm=MD5, charset=UTF-8

The password never crosses the wire. The client sends ``response``, a hash
(section 3.4.1) of A1, its user, the realm and the password (section 3.4.2; the
``-sess`` algorithms hash the nonces into it too), of A2, the method and ``uri``
(section 3.4.3; ``auth-int`` adds the body's hash), of the server's ``nonce`` and
of its own count ``nc`` and ``cnonce``; the lab works out the same hash and
compares the two in constant time (``hmac``). A ``uri`` that names another
resource than the request's is ``400`` (section 3.4.6).

The lab stores nothing and may run on several workers and hosts, so its nonce
carries its own state (sections 3.3 and 5.4): the time it was made and a random
salt, and an HMAC of both and the request's path under the service's signing key
(``web/keys.py``). A right response to a nonce that is not the lab's for this
path, is older than ``NONCE_LIFETIME``, or is used more than ``stale_after`` times
(its ``nc``, which the client counts), is refused with ``stale=true``: the client
knows the password and may answer the new nonce without asking the user again.

httpbin sets the cookie ``fake=fake_value`` on every answer, which clients' tests
look for; the lab does too, under its mount point (docs/lab.md, "Digest
authentication").
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import unquote_to_bytes, urlsplit

from ..errors import ValidationError
from ..web import Request, Response, json_response
from ..web.auth import parsed_authorization
from ..web.body import read_bytes
from ..web.keys import digest_nonce_key
from ..web.origin import authority, request_host
from .challenges import REALM
from .cookies import lab_cookie
from .errors import DigestChallenged

if TYPE_CHECKING:
    from wsgiref.types import WSGIEnvironment

    from ..config import Config
    from ..storage.base import MetaStore

# hashlib's name of each algorithm: RFC 7616's (section 6.1), and SHA-512, which
# httpbin and requests speak; each has its -sess form (section 3.4.2).
_HASHES = {"MD5": "md5", "SHA-256": "sha256", "SHA-512": "sha512",
           "SHA-512-256": "sha512_256"}  # fmt: skip
ALGORITHMS = tuple(name + sess for name in _HASHES for sess in ("", "-sess"))
# What the challenge offers: auth, auth-int (the body hashed too), or both.
QOPS = ("auth", "auth-int", "auth,auth-int")
NEVER = "never"  # httpbin's stale_after when the path names none
MAX_STALE_AFTER = 100
# What stale_after takes, as one pattern: the OpenAPI document gives it
# (lab/routes.py) and the handler matches it, so both admit the same text. Not an
# integer's schema: to JSON Schema 3.0 is the integer 3, which no path writes.
STALE_AFTER_PATTERN = f"^(?:{NEVER}|[1-9][0-9]?|{MAX_STALE_AFTER})$"
_STALE_AFTER = re.compile(STALE_AFTER_PATTERN)
NONCE_LIFETIME = 300  # seconds, as Apache's AuthDigestNonceLifetime
_SALT, _MAC = 8, 16  # bytes of a nonce, after its 8 of time
_NONCE = re.compile(f"[0-9a-f]{{{2 * (8 + _SALT + _MAC)}}}")
_NC = re.compile("[0-9a-fA-F]{8}")
# Sent back unchanged and never read: the nonce carries all the lab's state
# (section 3.3 recommends hexadecimal).
OPAQUE = REALM.encode().hex()
FAKE_COOKIE = ("fake", "fake_value")  # httpbin's, on every answer
SENT = ("username", "realm", "nonce", "uri", "response", "qop", "nc", "cnonce")
ASK = "Send this path's user and password (Digest)."
STALE = "The nonce is stale: answer the new one."


class Asked(NamedTuple):
    """What the path asks for: the qops offered, the algorithm, and how many
    requests a nonce serves (None: any number)."""

    qops: tuple[str, ...]
    algorithm: str
    uses: int | None


def digest_auth(
    request: Request,
    qop: str,
    user: str,
    passwd: str,
    config: Config,
    store: MetaStore,
    clock: Callable[[], float],
) -> Response:
    """``/lab/digest-auth/{qop}/{user}/{passwd}``: MD5, as httpbin."""
    asked = Asked(_qops(qop), "MD5", None)
    return _authenticate(request, asked, user, passwd, config, store, clock)


def digest_auth_algorithm(
    request: Request,
    qop: str,
    user: str,
    passwd: str,
    algorithm: str,
    config: Config,
    store: MetaStore,
    clock: Callable[[], float],
) -> Response:
    asked = Asked(_qops(qop), _algorithm(algorithm), None)
    return _authenticate(request, asked, user, passwd, config, store, clock)


def digest_auth_stale_after(
    request: Request,
    qop: str,
    user: str,
    passwd: str,
    algorithm: str,
    stale_after: str,
    config: Config,
    store: MetaStore,
    clock: Callable[[], float],
) -> Response:
    asked = Asked(_qops(qop), _algorithm(algorithm), _uses(stale_after))
    return _authenticate(request, asked, user, passwd, config, store, clock)


def _qops(qop: str) -> tuple[str, ...]:
    if qop not in QOPS:
        raise ValidationError.one("qop", "must be auth, auth-int or auth,auth-int")
    return tuple(qop.split(","))


def _algorithm(algorithm: str) -> str:
    if algorithm not in ALGORITHMS:
        raise ValidationError.one(
            "algorithm", "must be one of " + ", ".join(ALGORITHMS)
        )
    return algorithm


def _uses(stale_after: str) -> int | None:
    """``never`` (None), or 1 to ``MAX_STALE_AFTER``, written without a sign,
    point or leading zero."""
    if not _STALE_AFTER.fullmatch(stale_after):
        rule = f"must be {NEVER} or an integer from 1 to {MAX_STALE_AFTER}"
        raise ValidationError.one("stale_after", rule)
    return None if stale_after == NEVER else int(stale_after)


def _authenticate(
    request: Request,
    asked: Asked,
    user: str,
    passwd: str,
    config: Config,
    store: MetaStore,
    clock: Callable[[], float],
) -> Response:
    key, now = digest_nonce_key(config, store), int(clock())
    path = request.script_root + request.path  # what the nonce is for
    cookie = lab_cookie(request, *FAKE_COOKIE)

    def challenge(message: str, stale: bool = False) -> DigestChallenged:
        header = _challenge(asked, _nonce(key, now, path), stale)
        return DigestChallenged(header, message, cookie)

    sent = _credentials(request.environ, asked)
    if isinstance(sent, str):
        raise challenge(sent)
    if not _same_resource(sent["uri"], request.environ):
        raise ValidationError.one(
            "Authorization", "uri must be this request's path and query"
        )
    body = b""
    if sent["qop"] == "auth-int":  # the body is hashed into A2
        body = read_bytes(request.environ, config.max_body_bytes)
    expected = _response(sent, asked.algorithm, user, passwd, request, body)
    same_user = hmac.compare_digest(sent["username"].encode(), user.encode())
    same_response = hmac.compare_digest(sent["response"].lower(), expected)
    if not (same_user and same_response):
        raise challenge(ASK)
    used_up = asked.uses is not None and int(sent["nc"], 16) > asked.uses
    if used_up or not _fresh(key, sent["nonce"], path, now):
        raise challenge(STALE, stale=True)
    answer = json_response({"authenticated": True, "user": user})
    answer.headers.append(("Set-Cookie", cookie))
    return answer


def _challenge(asked: Asked, nonce: str, stale: bool) -> str:
    """``WWW-Authenticate``'s value (section 3.3): UTF-8 for the user and password
    (``charset``, section 4), ``stale=true`` for a nonce that was right once."""
    qop = ", ".join(asked.qops)
    header = (
        f'Digest realm="{REALM}", qop="{qop}", nonce="{nonce}", '
        f'opaque="{OPAQUE}", algorithm={asked.algorithm}, charset=UTF-8'
    )
    return header + (", stale=true" if stale else "")


def _credentials(environ: WSGIEnvironment, asked: Asked) -> dict[str, str] | str:
    """The Digest credentials sent, each parameter by name; or, when they cannot
    be the answer to this challenge, what is wrong (a 401 says it)."""
    header = environ.get("HTTP_AUTHORIZATION")
    if header is None:
        return ASK
    try:  # charset=UTF-8: the server hands the field over as latin-1 (PEP 3333)
        text = header.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return "Authorization must be UTF-8."
    found = parsed_authorization(text)
    if found is None or found.type != "digest":
        return ASK
    # username* (RFC 8187) is read as username; a name without a value is absent.
    sent = {name: value for name, value in found.parameters.items() if value}
    missing = [name for name in SENT if not sent.get(name)]
    if missing:
        return "The Digest credentials lack " + ", ".join(missing) + "."
    if sent["realm"] != REALM:
        return f'realm must be "{REALM}".'
    # Absent, it is MD5 (section 3.4); requests sends it quoted, in any case.
    if sent.get("algorithm", "MD5").lower() != asked.algorithm.lower():
        return f"algorithm must be {asked.algorithm}."
    if sent["qop"] not in asked.qops:
        return "qop must be " + " or ".join(asked.qops) + "."
    if not _NC.fullmatch(sent["nc"]) or int(sent["nc"], 16) == 0:
        return "nc must be 8 hexadecimal digits, from 00000001."
    size = len(_hex(asked.algorithm, b""))
    if not re.fullmatch(f"[0-9a-fA-F]{{{size}}}", sent["response"]):
        return f"response must be {size} hexadecimal digits."
    return sent


def _same_resource(uri: str, environ: WSGIEnvironment) -> bool:
    """Whether ``uri`` names the request's path and query, each as decoded (a
    client may encode a character the server did not), in origin or absolute form
    (section 3.4.6); in absolute form, of the request's scheme and host too. One
    that cannot be read as a URL (``http://[::1``) names none."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return False
    if parts.scheme or parts.netloc:
        # Both hosts read alike: lower case, the scheme's own port left out, so
        # http://Example:80/x names what Host: example asks; a netloc with a user
        # or no host names none.
        scheme = environ.get("wsgi.url_scheme", "http")
        named = authority(scheme, parts.netloc).lower()
        if (
            parts.scheme.lower() != scheme
            or not named
            or named != request_host(environ).lower()
        ):
            return False
    target = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
    query = environ.get("QUERY_STRING", "")
    return unquote_to_bytes(parts.path) == target.encode("latin-1") and (
        unquote_to_bytes(parts.query) == unquote_to_bytes(query.encode("latin-1"))
    )


def _response(
    sent: dict[str, str],
    algorithm: str,
    user: str,
    passwd: str,
    request: Request,
    body: bytes,
) -> str:
    """The ``response`` the path's user and password give (section 3.4.1)."""

    def h(data: str | bytes) -> str:
        raw = data.encode() if isinstance(data, str) else data
        return _hex(algorithm, raw)

    nonce, cnonce, qop = sent["nonce"], sent["cnonce"], sent["qop"]
    a1 = h(f"{user}:{REALM}:{passwd}")
    if algorithm.endswith("-sess"):
        a1 = h(f"{a1}:{nonce}:{cnonce}")
    a2 = f"{request.environ['REQUEST_METHOD']}:{sent['uri']}"
    if qop == "auth-int":
        a2 += ":" + h(body)
    return h(f"{a1}:{nonce}:{sent['nc']}:{cnonce}:{qop}:{h(a2)}")


def _hex(algorithm: str, data: bytes) -> str:
    """The hash of ``data`` by ``algorithm`` (its -sess form's is the same), in
    lower-case hexadecimal."""
    name = _HASHES[algorithm.removesuffix("-sess")]
    # A protocol's hash, not a secret's: FIPS builds refuse MD5 without the flag.
    return hashlib.new(name, data, usedforsecurity=False).hexdigest()


def _nonce(key: bytes, now: int, path: str) -> str:
    """A new nonce for ``path``: its time and salt, then their MAC, in hex."""
    stamp = now.to_bytes(8, "big") + secrets.token_bytes(_SALT)
    return (stamp + _mac(key, stamp, path)).hex()


def _mac(key: bytes, stamp: bytes, path: str) -> bytes:
    message = b"digest-nonce:" + stamp + b":" + path.encode()
    return hmac.new(key, message, hashlib.sha256).digest()[:_MAC]


def _fresh(key: bytes, nonce: str, path: str, now: int) -> bool:
    """Whether ``nonce`` is one the lab made for ``path``, ``NONCE_LIFETIME``
    seconds ago at most."""
    if not _NONCE.fullmatch(nonce):
        return False
    raw = bytes.fromhex(nonce)
    stamp, mac = raw[:-_MAC], raw[-_MAC:]
    if not hmac.compare_digest(mac, _mac(key, stamp, path)):
        return False
    return now - int.from_bytes(stamp[:8], "big") <= NONCE_LIFETIME
