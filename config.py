"""Configuration: one frozen object, read from the environment in one place.

Deployments set environment variables (docs/configuration.md lists every one);
tests build a ``Config`` directly instead of editing ``os.environ``.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from werkzeug.http import parse_date

from . import settings
from .hosts import is_host, parse_allow_list
from .storage import Store, open_store

VERSION = "1.0.0"

LOG_FORMATS = ("json", "text")
# The servers `refapi serve` runs the app on, and the threads a worker of each runs
# unless REFAPI_THREADS says (docs/operating.md, "Two servers"): gunicorn's sync
# worker serves one request at a time; Granian runs at least two threads a worker,
# so that slow work always leaves one free in each.
SERVER_THREADS = {"gunicorn": 1, "granian": 2}
# The longest REFAPI_WORKER_TIMEOUT, in seconds (docs/configuration.md).
MAX_WORKER_TIMEOUT = 86_400
# The most workers a CPU, and threads a worker: far past any use (the default is 2
# workers a CPU), short of a typo that forks until the host runs out of memory
# (REFAPI_WORKERS=100000 did).
MAX_WORKERS_A_CPU = 32
MAX_THREADS = 128
# The longest REFAPI_TOKEN_TTL: ten years. Far longer overflowed the expiry's
# timestamp, and every login was a 500 (an API key is the credential that lasts).
MAX_TOKEN_TTL = 10 * 365 * 86_400
# The shortest REFAPI_SECRET_KEY: it signs cursors and CSRF tokens, and a key of a
# few characters is guessed (the generated one is 32 random bytes).
MIN_SECRET_KEY = 32

# The depth check compiles a pattern that many groups deep, and no legitimate body
# nests anywhere near it.
MAX_JSON_DEPTH = 100
# An origin (RFC 6454): a scheme, a host (a name, an IPv4 address or a bracketed
# IPv6 one) and an optional port, nothing after (REFAPI_LAB_GRADE_ORIGIN).
_ORIGIN = re.compile(r"https?://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?")
# A currency is an ISO 4217 code, three upper-case letters (docs/configuration.md).
_CURRENCY = re.compile(r"[A-Z]{3}")


def _secret_key(secret: str) -> bytes | None:
    """REFAPI_SECRET_KEY's bytes, None when unset; a short key weakens every check
    it signs, so it is refused."""
    if secret and len(secret) < MIN_SECRET_KEY:
        raise ValueError(
            f"REFAPI_SECRET_KEY must be at least {MIN_SECRET_KEY} characters, got"
            f" {len(secret)}: e.g. python3 -c 'import secrets;"
            " print(secrets.token_hex(32))'"
        )
    return secret.encode() if secret else None


def _positive(*numbers: float) -> bool:
    """Whether every one of ``numbers`` is a positive, finite number."""
    return all(0 < number < math.inf for number in numbers)


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@functools.lru_cache(maxsize=16)
def networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    """Addresses and networks (``127.0.0.1``, ``10.0.0.0/8``) as networks."""
    try:
        return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)
    except ValueError as exc:
        raise ValueError(f"REFAPI_METRICS: {exc}") from None


@dataclass(frozen=True)
class Config:
    database_url: str = "sqlite:///data/refapi.db"
    # None: generated on first start and kept with the data (cursors survive restarts).
    secret_key: bytes | None = None
    rate_limit_capacity: int = 100
    rate_limit_refill: float = 10.0
    cors_origins: tuple[str, ...] = ("*",)
    max_body_bytes: int = 1_048_576
    json_max_depth: int = 32
    currencies: tuple[str, ...] = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD")
    trust_proxy: int = 0
    page_size_default: int = 20
    page_size_max: int = 100
    # RFC 9745 / RFC 8594 values; empty means the version is not deprecated.
    deprecation: str = ""
    sunset: str = ""
    version: str = VERSION
    # The proxy: "host[:port]" entries, "+private" opting one in to loopback and
    # private-use addresses; time-outs in seconds (each operation, and the whole
    # fetch); the CA bundle for https (None: the system's).
    proxy_allowed_hosts: tuple[str, ...] = ()
    proxy_connect_timeout: float = 3.0
    proxy_read_timeout: float = 10.0
    proxy_total_timeout: float = 10.0
    proxy_ca_file: str | None = None
    proxy_max_body_bytes: int = 1_048_576
    # The public demo keeps this many notes, the newest (the oldest goes first).
    demo_max_notes: int = 1000
    # Users: the first admin (when unset, admin@localhost with a random password
    # written to a file in the data folder), how long a token or session lives, how
    # many failed logins a minute an address may make (an account ten times that),
    # and werkzeug.security's hash method for passwords (a cheaper one for tests).
    admin_email: str = ""
    admin_password: str = ""
    token_ttl: int = 3600
    login_max_failures: int = 5
    password_hash: str = "scrypt"
    # Where the service writes files of its own beside its database (the first
    # admin's password file), whatever the backend: one folder per instance.
    data_dir: str = "data"
    # What may hash a password, per client address: logins and password changes a
    # minute (bucket "auth"), registrations an hour (bucket "register").
    auth_rate_limit: int = 10
    register_rate_limit: int = 5
    # PostgreSQL only: connections per worker (a sync worker needs one), seconds to
    # wait for one before answering 503, and seconds any one statement may run.
    db_pool_max: int = 2
    db_pool_timeout: float = 5.0
    db_statement_timeout: float = 5.0
    # The request log's format ("json": one object a line; "text": for a person at a
    # terminal), and who may read /metrics: addresses or networks; empty, it is off.
    log_format: str = "json"
    metrics: tuple[str, ...] = ()
    # The learner's lab, mounted at /lab/: on unless REFAPI_LAB is 0; the longest
    # delay it takes, in seconds; its own bucket, requests a minute per address.
    lab: bool = True
    lab_max_delay: float = 5.0
    lab_rate_limit: int = 1000
    # Hosts an absolute URL of /lab/redirect-to may name besides the request's own
    # (docs/lab.md, "Redirects"): none by default, so it is no open redirect.
    lab_redirect_hosts: tuple[str, ...] = ()
    # A second origin of this service (scheme://host[:port], nothing after), where
    # the report card sends a redirect to see whether a client drops Authorization
    # (docs/lab.md, "A report card for clients"): empty, that check does not apply.
    lab_grade_origin: str = ""
    # The most bytes a body the lab makes may hold (/lab/bytes/{n}, /lab/range/{n}):
    # a larger n gets this many, as httpbin clamps (docs/lab.md, "Bodies").
    lab_max_bytes: int = 102_400
    # The server: which (REFAPI_SERVER), the address `refapi serve` listens on,
    # worker processes, threads a worker, and the seconds a request may take. A
    # host's slots are workers x threads, and slow work (the proxy, the explainer,
    # the lab's slow answers) holds at most all but one of them (docs/operating.md,
    # "Slow work shares the host"). One thread a worker on gunicorn
    # (serving/gunicorn.py says why), two on Granian unless said.
    server: str = "gunicorn"
    bind: str = "127.0.0.1:8000"
    workers: int = field(default_factory=lambda: 2 * (os.cpu_count() or 1))
    threads: int = 1
    worker_timeout: int = 30

    def __post_init__(self) -> None:
        for broken, message in self._checks():
            if broken:
                raise ValueError(message)

    def _checks(self) -> Iterator[tuple[bool, str]]:
        """Each check as (whether a setting is refused, why), in order: the first
        refused stops the start, so the lists are parsed only after those above."""
        # The whole numbers that must be 1 or more, each named as its variable.
        for name, value in (
            ("REFAPI_MAX_BODY_BYTES", self.max_body_bytes),
            ("REFAPI_LAB_RATE_LIMIT", self.lab_rate_limit),
            ("REFAPI_DEMO_MAX_NOTES", self.demo_max_notes),
            ("REFAPI_LAB_MAX_BYTES", self.lab_max_bytes),
            ("REFAPI_TOKEN_TTL", self.token_ttl),
            ("REFAPI_LOGIN_MAX_FAILURES", self.login_max_failures),
            ("REFAPI_AUTH_RATE_LIMIT", self.auth_rate_limit),
            ("REFAPI_REGISTER_RATE_LIMIT", self.register_rate_limit),
        ):
            yield value < 1, f"{name} must be positive, not {value}"
        yield (
            not 1 <= self.json_max_depth <= MAX_JSON_DEPTH,
            f"REFAPI_JSON_MAX_DEPTH must lie in 1..{MAX_JSON_DEPTH}, not"
            f" {self.json_max_depth}",
        )
        yield (
            not 1 <= self.page_size_default <= self.page_size_max,
            f"REFAPI_PAGE_SIZE_DEFAULT ({self.page_size_default}) must lie in 1.."
            f"REFAPI_PAGE_SIZE_MAX ({self.page_size_max})",
        )
        # Werkzeug reads -n as "n values from the left": the client's own.
        yield (
            self.trust_proxy < 0,
            "REFAPI_TRUST_PROXY must be 0 or a number of proxies",
        )
        yield (
            self.rate_limit_capacity < 1 or not _positive(self.rate_limit_refill),
            "REFAPI_RATE_LIMIT_CAPACITY and REFAPI_RATE_LIMIT_REFILL must be positive"
            " numbers",
        )
        yield (
            not _positive(
                self.proxy_connect_timeout,
                self.proxy_read_timeout,
                self.proxy_total_timeout,
            ),
            "REFAPI_PROXY_CONNECT_TIMEOUT, REFAPI_PROXY_READ_TIMEOUT and"
            " REFAPI_PROXY_TOTAL_TIMEOUT must be positive numbers",
        )
        parse_allow_list(self.proxy_allowed_hosts)  # a malformed entry fails at start
        codes = [code for code in self.currencies if not _CURRENCY.fullmatch(code)]
        yield (
            bool(codes) or not self.currencies,
            "REFAPI_CURRENCIES must list ISO 4217 codes, three upper-case letters"
            f" (USD,EUR), not {','.join(codes or self.currencies)!r}",
        )
        yield (
            not _positive(self.lab_max_delay),
            "REFAPI_LAB_MAX_DELAY must be a positive number",
        )
        yield (
            bool(self.lab_grade_origin)
            and not _ORIGIN.fullmatch(self.lab_grade_origin),
            "REFAPI_LAB_GRADE_ORIGIN must be an origin, http(s)://host[:port] with"
            f" nothing after, not {self.lab_grade_origin!r}",
        )
        origins = [
            o for o in self.cors_origins if o != "*" and not _ORIGIN.fullmatch(o)
        ]
        yield (
            bool(origins),
            "REFAPI_CORS_ORIGINS must list origins, http(s)://host[:port] with"
            f" nothing after, or *; not {', '.join(origins)!r}",
        )
        hosts = [h for h in self.lab_redirect_hosts if not is_host(h.lower())]
        yield (
            bool(hosts),
            "REFAPI_LAB_REDIRECT_HOSTS must list host names or addresses, not"
            f" {', '.join(hosts)!r}",
        )
        yield (
            bool(self.deprecation)
            and not re.fullmatch(r"@-?\d{1,15}", self.deprecation),
            "REFAPI_DEPRECATION must be a date as RFC 9745 writes it, @ and the seconds"
            f" since 1970 (@1798761600), not {self.deprecation!r}",
        )
        yield (
            bool(self.sunset) and parse_date(self.sunset) is None,
            "REFAPI_SUNSET must be an HTTP date (RFC 8594), e.g. Fri, 01 Jan 2027"
            f" 00:00:00 GMT, not {self.sunset!r}",
        )
        yield (
            self.server not in SERVER_THREADS,
            f"REFAPI_SERVER must be gunicorn or granian, got {self.server!r}",
        )
        yield (
            self.workers < 1 or self.threads < 1 or self.worker_timeout < 1,
            "REFAPI_WORKERS, REFAPI_THREADS and REFAPI_WORKER_TIMEOUT must be"
            " positive whole numbers",
        )
        most = MAX_WORKERS_A_CPU * (os.cpu_count() or 1)
        yield (
            self.workers > most,
            f"REFAPI_WORKERS ({self.workers}) must be at most {most}"
            f" ({MAX_WORKERS_A_CPU} a CPU on this host)",
        )
        yield (
            self.threads > MAX_THREADS,
            f"REFAPI_THREADS ({self.threads}) must be at most {MAX_THREADS}",
        )
        # Granian refuses a timeout past about 24 days only when it stops: a traceback.
        yield (
            self.worker_timeout > MAX_WORKER_TIMEOUT,
            f"REFAPI_WORKER_TIMEOUT ({self.worker_timeout}) must be at most"
            f" {MAX_WORKER_TIMEOUT} (a day)",
        )
        # A request has half the worker timeout to arrive (serving/gunicorn.py) and the
        # other half to be answered: a longer delay gets its worker killed.
        yield (
            self.lab and self.lab_max_delay >= self.worker_timeout / 2,
            f"REFAPI_LAB_MAX_DELAY ({self.lab_max_delay:g}) must be under half"
            f" REFAPI_WORKER_TIMEOUT ({self.worker_timeout}), or a delay would"
            " outlast its worker: lower the one or raise the other",
        )
        yield (
            self.proxy_total_timeout >= self.worker_timeout / 2,
            f"REFAPI_PROXY_TOTAL_TIMEOUT ({self.proxy_total_timeout:g}) must be under"
            f" half REFAPI_WORKER_TIMEOUT ({self.worker_timeout}), or a slow upstream"
            " would outlast its worker: lower the one or raise the other",
        )
        yield (
            self.token_ttl > MAX_TOKEN_TTL,
            f"REFAPI_TOKEN_TTL ({self.token_ttl}) must be at most {MAX_TOKEN_TTL}"
            " (ten years)",
        )
        yield self.db_pool_max < 1, "REFAPI_DB_POOL_MAX must be at least 1"
        yield (
            not _positive(self.db_pool_timeout, self.db_statement_timeout),
            "REFAPI_DB_POOL_TIMEOUT and REFAPI_DB_STATEMENT_TIMEOUT must be positive"
            " numbers",
        )
        yield (
            self.log_format not in LOG_FORMATS,
            f"REFAPI_LOG_FORMAT must be json or text, got {self.log_format!r}",
        )
        networks(self.metrics)  # a malformed address or network fails at start
        yield (
            bool(self.admin_email) != bool(self.admin_password),
            "set both REFAPI_ADMIN_EMAIL and REFAPI_ADMIN_PASSWORD",
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Config:
        """Build the configuration from ``REFAPI_*`` and ``DATABASE_URL`` variables."""
        env = os.environ if environ is None else environ
        defaults = cls()

        number = functools.partial(settings.number, env)
        integer = functools.partial(settings.integer, env)

        def names(name: str, default: tuple[str, ...]) -> tuple[str, ...]:
            if name not in env:
                return default
            return tuple(part.strip() for part in env[name].split(",") if part.strip())

        server = env.get("REFAPI_SERVER", "").strip() or defaults.server
        return cls(
            database_url=env.get("DATABASE_URL") or defaults.database_url,
            secret_key=_secret_key(env.get("REFAPI_SECRET_KEY", "")),
            rate_limit_capacity=integer(
                "REFAPI_RATE_LIMIT_CAPACITY", defaults.rate_limit_capacity
            ),
            rate_limit_refill=number(
                "REFAPI_RATE_LIMIT_REFILL", defaults.rate_limit_refill
            ),
            cors_origins=names("REFAPI_CORS_ORIGINS", defaults.cors_origins),
            currencies=names("REFAPI_CURRENCIES", defaults.currencies),
            max_body_bytes=integer("REFAPI_MAX_BODY_BYTES", defaults.max_body_bytes),
            json_max_depth=integer("REFAPI_JSON_MAX_DEPTH", defaults.json_max_depth),
            trust_proxy=integer("REFAPI_TRUST_PROXY", 0),
            page_size_default=integer(
                "REFAPI_PAGE_SIZE_DEFAULT", defaults.page_size_default
            ),
            page_size_max=integer("REFAPI_PAGE_SIZE_MAX", defaults.page_size_max),
            deprecation=env.get("REFAPI_DEPRECATION", ""),
            sunset=env.get("REFAPI_SUNSET", ""),
            proxy_allowed_hosts=names("REFAPI_PROXY_ALLOWED_HOSTS", ()),
            proxy_connect_timeout=number(
                "REFAPI_PROXY_CONNECT_TIMEOUT", defaults.proxy_connect_timeout
            ),
            proxy_read_timeout=number(
                "REFAPI_PROXY_READ_TIMEOUT", defaults.proxy_read_timeout
            ),
            proxy_total_timeout=number(
                "REFAPI_PROXY_TOTAL_TIMEOUT", defaults.proxy_total_timeout
            ),
            proxy_ca_file=env.get("REFAPI_PROXY_CA_FILE") or None,
            demo_max_notes=integer("REFAPI_DEMO_MAX_NOTES", defaults.demo_max_notes),
            admin_email=env.get("REFAPI_ADMIN_EMAIL", ""),
            admin_password=env.get("REFAPI_ADMIN_PASSWORD", ""),
            token_ttl=integer("REFAPI_TOKEN_TTL", defaults.token_ttl),
            login_max_failures=integer(
                "REFAPI_LOGIN_MAX_FAILURES", defaults.login_max_failures
            ),
            password_hash=env.get("REFAPI_PASSWORD_HASH") or defaults.password_hash,
            data_dir=env.get("REFAPI_DATA_DIR") or defaults.data_dir,
            auth_rate_limit=integer("REFAPI_AUTH_RATE_LIMIT", defaults.auth_rate_limit),
            register_rate_limit=integer(
                "REFAPI_REGISTER_RATE_LIMIT", defaults.register_rate_limit
            ),
            db_pool_max=integer("REFAPI_DB_POOL_MAX", defaults.db_pool_max),
            db_pool_timeout=number("REFAPI_DB_POOL_TIMEOUT", defaults.db_pool_timeout),
            db_statement_timeout=number(
                "REFAPI_DB_STATEMENT_TIMEOUT", defaults.db_statement_timeout
            ),
            log_format=env.get("REFAPI_LOG_FORMAT", "").strip() or defaults.log_format,
            metrics=names("REFAPI_METRICS", ()),
            lab=settings.switch(env, "REFAPI_LAB", defaults.lab),
            lab_max_delay=number("REFAPI_LAB_MAX_DELAY", defaults.lab_max_delay),
            lab_rate_limit=integer("REFAPI_LAB_RATE_LIMIT", defaults.lab_rate_limit),
            lab_redirect_hosts=names("REFAPI_LAB_REDIRECT_HOSTS", ()),
            lab_max_bytes=integer("REFAPI_LAB_MAX_BYTES", defaults.lab_max_bytes),
            lab_grade_origin=env.get("REFAPI_LAB_GRADE_ORIGIN", "").strip(),
            server=server,
            bind=env.get("REFAPI_BIND", "").strip() or defaults.bind,
            workers=integer("REFAPI_WORKERS", defaults.workers),
            threads=integer("REFAPI_THREADS", SERVER_THREADS.get(server, 1)),
            worker_timeout=integer("REFAPI_WORKER_TIMEOUT", defaults.worker_timeout),
        )

    @property
    def slots(self) -> int:
        """Requests a serving host works on at once: its workers x their threads
        (docs/operating.md, "Slow work shares the host")."""
        return self.workers * self.threads

    def open_store(self) -> Store:
        """The store ``database_url`` names, with this configuration's pool settings:
        at least a connection a thread, so no thread of a worker waits on another's
        (docs/configuration.md, REFAPI_DB_POOL_MAX)."""
        return open_store(
            self.database_url,
            pool_max=max(self.db_pool_max, self.threads),
            pool_timeout=self.db_pool_timeout,
            statement_timeout=self.db_statement_timeout,
        )


# A password in a URL's user information, or a libpq ``password=`` parameter.
_PASSWORDS = re.compile(r"(?<=://)([^/@:]*):[^/]*@|(?<=[?&]password=)[^&]*")


def shown_url(url: str) -> str:
    """``url`` as a command or a log line may show it: any password replaced by
    ``***`` (docs/operating.md, "Reset")."""
    return _PASSWORDS.sub(
        lambda found: f"{found[1]}:***@" if found[1] is not None else "***", url
    )
