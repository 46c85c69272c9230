"""Serving on gunicorn: its own refusals answered as the error object, a deadline
on each request, and the master's hooks (``on_starting`` and the others, at the
end), which ``gunicorn.conf.py`` hands to gunicorn.

gunicorn reads the request line and the header fields before the application runs,
and refuses what it cannot frame safely (RFC 9112) by itself, with an HTML page and
none of our headers. ``SyncWorker`` is gunicorn's sync worker with its one hook for
this, ``handle_error``, overridden (``worker_class`` in ``gunicorn.conf.py`` names
it), so those answers are the error object like every other:

    request line over ``limit_request_line``         414 URI_TOO_LONG
    more fields than ``limit_request_fields``, or
    one over ``limit_request_field_size``            431 REQUEST_HEADER_FIELDS_TOO_LARGE
    a transfer coding gunicorn does not know, or
    any other but chunked (gzip, identity...)        501 NOT_IMPLEMENTED
    an ``Expect`` other than ``100-continue``        417 EXPECTATION_FAILED
    a head not whole within the deadline (below)     408 REQUEST_TIMEOUT
    a PROXY line from an address not allowed         403 FORBIDDEN
    any other unreadable request: request line,      400 MALFORMED_REQUEST
    field syntax, an HTTP/1.1 request without
    exactly one ``Host``, two ``Content-Length`` fields,
    ``Content-Length`` with chunked, bad chunks
    the worker stopped by its master mid-request     503 UNAVAILABLE
    (past gunicorn's ``timeout``, or a quick quit)
    anything else (gunicorn caught an error)         500 INTERNAL_ERROR

A sync worker reads a request from one client at a time, with no time-out of its
own: a client that stalls or trickles its head or its body would hold the worker
until gunicorn's master kills it (``timeout``), and the request would end in a 500.
So the request, head and body, must arrive within half of ``timeout`` (15 s by
default), leaving the other half to answer it: past that, a head is refused here
with ``408 REQUEST_TIMEOUT``, and a body's read raises ``TimeoutError``, which the
app's body reader answers with the same (``web/body.py``). Over TLS each read waits
at most that long, without the deadline over the whole request. The same wrapper
sends ``100 Continue`` when the app first reads the body (``Deadlined``).

One thread a worker: with ``threads`` above 1 gunicorn would swap this worker for
its threaded one (it takes any class named ``SyncWorker`` for its own sync
worker), which puts no deadline on a request (a client that trickles holds a
thread for ever, and the worker's timeout bounds nothing, since its main thread
goes on reporting alive) and answers its refusals as HTML. So a start with more
than one thread a worker is refused (``served``); more workers serve more at once.

The statuses are gunicorn's, except that every unreadable request is a 400 (gunicorn
answers a bad PROXY header with a 500); each code is the status's name in RFC 9110
(RFC 6585 for 431) in upper snake case, as PAYLOAD_TOO_LARGE is. Nothing of a
request that could not be read is trusted: the answer gets a new ``X-Request-Id``
(logged with gunicorn's warning, and in the app's line for the request: ``route``
and ``caller`` null; counted in the metrics too), ``nosniff``, and
``Access-Control-Allow-Origin: *`` when every origin is allowed (with a list, none
is named). The connection is closed after the answer. TLS that fails (served by
gunicorn itself) read no request: a line at INFO, no answer, nothing counted.
"""

from __future__ import annotations

import dataclasses
import errno
import importlib
import os
import secrets
import socket
import time
from collections.abc import MutableMapping
from ssl import SSLError
from typing import Any

from gunicorn import util
from gunicorn.http import errors as refused
from gunicorn.http.message import Message
from gunicorn.workers import sync

from .. import metrics
from ..config import Config
from ..errors import (
    ApiError,
    MalformedRequest,
    RequestHeaderFieldsTooLarge,
    RequestTimeout,
    Unavailable,
    UriTooLong,
)
from ..logs import report_refusal
from ..startup import check_serving, start_lines
from ..web.origin import valid_host
from ..web.refusals import (
    EXPECTATION_FAILED,
    NOT_A_HOST,
    refusal_answer,
    server_refusal,
)
from ..web.statuses import STATUS_LINES
from . import folder_lines, forget_release, prepare_databases, remove_folders

REASON_CHARS = 200  # of gunicorn's reason, which may quote the request
# A worker's exit code, as gunicorn sets it.
STOPPED_BY: dict[str | int | None, str] = {0: "quit", 1: "timed out"}
APPLICATION_FAULTS = (refused.InvalidResponseHeader, refused.InvalidResponseHeaderName)


def served(config: Config, cfg: Any, environ: MutableMapping[str, str]) -> Config:
    """``config`` as gunicorn serves it (``cfg``): its workers and timeout, which
    its command line may set over the settings (``refapi serve --workers 4``),
    checked as the settings are and written in ``environ``, where the workers'
    apps read them; exit in one line for one it cannot serve."""
    try:
        if cfg.threads != 1:
            raise ValueError(
                f"REFAPI_THREADS must be 1 on gunicorn, not {cfg.threads}: its"
                " threaded worker puts no deadline on a request, so a slow client"
                " would hold a thread for ever; set REFAPI_WORKERS instead"
            )
        config = dataclasses.replace(
            config, workers=cfg.workers, threads=1, worker_timeout=cfg.timeout
        )
    except ValueError as exc:
        raise SystemExit(f"refapi: {exc}") from None
    environ.update(
        REFAPI_WORKERS=str(config.workers),
        REFAPI_THREADS=str(config.threads),
        REFAPI_WORKER_TIMEOUT=str(config.worker_timeout),
    )
    return config


def refusal(exc: BaseException, cfg: Any) -> ApiError | None:
    """The error object for a request gunicorn refused; None for any other error."""
    if isinstance(exc, HeadTimedOut):
        return RequestTimeout()
    if isinstance(exc, SystemExit):
        # The master stopped this worker mid-request (past its timeout, or told to
        # quit at once): nothing is wrong with the request, it was not served.
        return Unavailable("The server stopped before it could answer; try again.")
    if isinstance(exc, refused.LimitRequestLine):
        return UriTooLong(cfg.limit_request_line)
    if isinstance(exc, refused.LimitRequestHeaders):
        return RequestHeaderFieldsTooLarge(
            cfg.limit_request_fields, cfg.limit_request_field_size
        )
    if isinstance(exc, refused.UnsupportedTransferCoding):
        return server_refusal(
            501, "NOT_IMPLEMENTED", "The transfer coding is not supported.",
            supported=["chunked"],
        )  # fmt: skip
    if isinstance(exc, refused.ExpectationFailed):
        return server_refusal(*EXPECTATION_FAILED)
    if isinstance(exc, refused.ForbiddenProxyRequest):
        return server_refusal(403, "FORBIDDEN", "The connection is not allowed.")
    # A header the application tried to send is its own fault, not the request's.
    if isinstance(exc, APPLICATION_FAULTS):
        return None
    if isinstance(exc, refused.ParseException):
        return MalformedRequest(
            "The request could not be read as HTTP/1.1.",
            details={"reason": str(exc)[:REASON_CHARS]},
        )
    return None


class NoHost(refused.ParseException):
    def __init__(self, count: int) -> None:
        self.count = count

    def __str__(self) -> str:
        return f"an HTTP/1.1 request needs one Host header field, not {self.count}"


# The one transfer coding served: gunicorn decodes chunked alone, and lets others
# through (gzip, deflate, compress: the body still coded; identity, which RFC 9112
# no longer defines), so each of those is refused here as one it does not know.
SERVED_CODINGS = frozenset({"chunked"})


class NotAHost(refused.ParseException):
    def __str__(self) -> str:
        return NOT_A_HOST


def framed(req: Any) -> None:
    """What gunicorn lets through and RFC 9112 does not: an HTTP/1.1 request with no
    ``Host`` or two, a ``Host`` that is no host and port (section 3.2: 400), a body
    in any transfer coding but chunked (501, as for one it does not know); and it
    answers in the version it speaks, 1.1, a request of a later 1.x."""
    if req.version >= (1, 1):
        hosts = sum(name == "HOST" for name, _ in req.headers)
        if hosts != 1:
            raise NoHost(hosts)
    for name, value in req.headers:
        if name == "HOST" and not valid_host(value):
            raise NotAHost()
        if name == "TRANSFER-ENCODING":
            codings = {coding.strip().lower() for coding in value.split(",")}
            if codings - SERVED_CODINGS:
                raise refused.UnsupportedTransferCoding(value)
    if req.version > (1, 1):
        req.version = (1, 1)


class HeadTimedOut(Exception):
    """The request's head was not whole by the deadline. Not an ``OSError``, which
    gunicorn would log as a socket's fault and answer with nothing."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the request's head did not arrive within {seconds} s")
        self.seconds = seconds


CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
# How long a silent client is waited for once answered, for its FIN (Deadlined).
LINGER_S = 0.1


class Deadlined:
    """A client's socket whose reads end at one deadline for the whole request.

    Each read waits at most what is left; past the deadline a read of the head
    raises ``HeadTimedOut`` and one of the body (``reading_body``, once gunicorn
    hands the request to the app) ``TimeoutError``. Once the request is answered
    (``done``), reads are the socket's own again: gunicorn drains what is left
    with time-outs of its own when it closes. Writes wait at most ``seconds``.

    A client that sent ``Expect: 100-continue`` (``invited`` False) gets its
    ``100 Continue`` when the app first reads past what arrived with the head, not
    before the app runs as gunicorn sends it: a request refused from its head
    (413, 415, 401...) gets its final status alone (RFC 9110, section 10.1.1), and
    its body is never invited. The sync worker closes every connection after its
    answer, so a body never sent frames nothing after it.
    """

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        self.sock, self.seconds = sock, seconds
        self.deadline = time.monotonic() + seconds
        self.reading_body = self.done = self.closing = False
        self.invited = True

    def shutdown(self, how: int) -> None:
        # gunicorn's close (RFC 9112 section 9.6): it half-closes, then reads what
        # the client still sends, up to 2 s and 64 KiB, until its FIN. Here a
        # silence of LINGER_S ends that wait, so a client that never closes holds
        # the worker that long, not 2 s (docs/operating.md, "Slow clients").
        self.closing = self.done = True
        self.sock.shutdown(how)

    def settimeout(self, seconds: float | None) -> None:
        if self.closing and seconds is not None:
            seconds = min(seconds, LINGER_S)
        self.sock.settimeout(seconds)

    def recv(self, size: int, *flags: int) -> bytes:
        if self.done:
            return self.sock.recv(size, *flags)
        if not self.invited and self.reading_body:
            self.invited = True
            self.sendall(CONTINUE)
        left = self.deadline - time.monotonic()
        if left > 0:
            self.sock.settimeout(left)
            try:
                return self.sock.recv(size, *flags)
            except TimeoutError:
                pass
        self.done = True  # one refusal; what follows is the socket's own
        if self.reading_body:
            raise TimeoutError(f"the body did not arrive within {self.seconds} s")
        raise HeadTimedOut(self.seconds)

    def sendall(self, data: bytes, *flags: int) -> None:
        self.sock.settimeout(self.seconds)
        try:
            self.sock.sendall(data, *flags)
        except TimeoutError:
            # A client that read nothing for that long is let go, its answer cut,
            # as one that reset its connection: gunicorn logs that in one line at
            # debug, a time-out as a traceback (docs/operating.md, "Slow clients").
            raise ConnectionResetError(
                errno.ECONNRESET, f"the client read nothing for {self.seconds} s"
            ) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


class SyncWorker(sync.SyncWorker):
    """gunicorn's sync worker, answering what gunicorn refuses as the error object,
    and a request that does not arrive in time too."""

    def handle(self, listener: Any, client: Any, addr: Any) -> None:
        seconds = self.cfg.timeout / 2  # 0: gunicorn waits for ever, and so does this
        if seconds > 0 and self.cfg.is_ssl:  # gunicorn wraps it: plain time-outs
            client.settimeout(seconds)
        elif seconds > 0:
            client = Deadlined(client, seconds)
        super().handle(listener, client, addr)

    def handle_request(self, listener: Any, req: Any, client: Any, addr: Any) -> Any:
        framed(req)
        if isinstance(client, Deadlined):
            client.reading_body = True
            if req._expected_100_continue:  # sent on the body's first read instead
                req._expected_100_continue, client.invited = False, False
        try:
            return super().handle_request(listener, req, client, addr)
        finally:
            if isinstance(client, Deadlined):
                client.done = True

    def _config(self) -> Config:
        # The instance's own configuration when gunicorn serves an App, else the
        # environment's, as create_app() would read it.
        config = getattr(self.wsgi, "config", None)
        return config if isinstance(config, Config) else Config.from_env()

    def handle_error(
        self, req: Any, client: Any, addr: Any, exc: BaseException
    ) -> None:
        started = time.perf_counter()
        if isinstance(client, Deadlined):
            client.done = True  # the answer is written, the rest drained, untimed
        addr = addr or ("", -1)  # a Unix socket has no address
        if isinstance(exc, SSLError):  # no request read; an answer would be lost
            self.log.info("TLS failed with ip=%s: %s", addr[0], exc)
            return
        request_id = secrets.token_hex(16)
        error = refusal(exc, self.cfg)
        if error is None:
            self.log.exception("Error handling request [request_id=%s]", request_id)
            error = ApiError()
        elif isinstance(exc, SystemExit):
            # Nothing wrong with the request: told to quit at once (gunicorn's 0),
            # an operator's doing; aborted past its timeout (gunicorn's 1), which
            # its master reports too; or an exit of someone else's (any other code).
            log = self.log.info if exc.code == 0 else self.log.warning
            log(
                "Stopped before answering the request from ip=%s (%s)"
                " [request_id=%s]",
                addr[0], STOPPED_BY.get(exc.code, f"exit {exc.code!r}"), request_id,
            )  # fmt: skip
        else:
            self.log.warning(
                "Invalid request from ip=%s: %s [request_id=%s]",
                addr[0], exc, request_id,
            )  # fmt: skip
        config = self._config()
        body, headers = refusal_answer(error, config, request_id)
        status = STATUS_LINES[error.status]
        if req is None and isinstance(getattr(exc, "req", None), Message):
            req = exc.req  # type: ignore[attr-defined]  # read up to a bad header
        # Every answer is a request's line and is counted, one whose request line
        # could not be read (a 414) too: with its method and path empty.
        report_refusal(
            bool(config.metrics), request_id=request_id,
            method=getattr(req, "method", None) or "",
            path=getattr(req, "path", None) or "", status=error.status,
            seconds=time.perf_counter() - started, size=len(body),
            mount=os.environ.get("SCRIPT_NAME", ""),
        )  # fmt: skip
        head = f"HTTP/1.1 {status}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers)
        try:
            util.write_nonblock(client, (head + "\r\n").encode("latin-1") + body)
        except Exception:
            self.log.debug("Failed to send the error answer.")


# What gunicorn.conf.py runs as it is first read, and the master's hooks, which it
# hands to gunicorn under these names:
# what a start checks and makes before any worker boots (docs/operating.md, "When a
# start fails"), and what the server leaves behind when it stops.


_settings_read = False


def first_read() -> bool:
    """Whether gunicorn reads its settings for the first time in this process: a
    reload (SIGHUP) reads them again in the same master, whose pid ``--daemon`` has
    changed since the first read. An upgrade (USR2) starts a new process. The first
    read makes the folders the workers share (``gunicorn.conf.py`` calls
    ``serving.prepare_folders``): with ``--preload`` the master makes the
    app before any hook runs, and the app finds its folders then; a reload keeps
    them, and its workers go on counting where the others did."""
    global _settings_read
    first, _settings_read = not _settings_read, True
    return first


def reloading() -> bool:
    """Whether this read of the settings is a reload (SIGHUP: ``first_read`` says),
    and if so, have the rest of the read, the master's hooks and every worker it
    starts from now on load the release installed now.

    Each worker forks from the master with what the master has imported, and for
    its hooks the master imports a quarter of refapi (the configuration, the
    start's checks, the folders, the logs...): without this, a reload's workers
    imported the rest of the new release beside those of the old one, and a
    release that changed one of them served a mix, or could not boot
    (docs/operating.md, "Upgrading"). So refapi's modules are forgotten, and its
    handler of the logs (``logs.configure``'s, which a ``--preload``'ed app adds
    here): the next import reads each from the files installed now. What the old
    ones made (the folders, their locks) stays; the new module is told it was
    read."""
    if first_read():
        return False
    forget_release()
    importlib.import_module(__name__).first_read()
    return True


def on_starting(server: Any, config: Config) -> None:
    """Check what gunicorn is about to serve, ``config`` as its command line leaves
    it, and say where the folders its workers share are (``first_read``)."""
    # gunicorn's command line wins over the settings (`refapi serve --workers 4`):
    # what it serves is checked as they are, and handed to the workers in the
    # environment their apps read.
    config = served(config, server.cfg, os.environ)
    # Addresses to bind, unless sockets are handed over (systemd's, or the old
    # master's to the new one on a USR2 upgrade, which still listens on them):
    # one that cannot work ends the start before it listens (docs/operating.md,
    # "When a start fails").
    handed = {"LISTEN_FDS", "GUNICORN_FD"} & set(os.environ)
    bound = server.LISTENERS or handed or server.cfg.reuse_port
    check_serving(config, () if bound else server.cfg.address)
    for line in folder_lines(config):
        server.log.info(line)
    # gunicorn's --reload (development) replaces a worker when a file of the code
    # changes, by a fork of this master: the code gunicorn.conf.py imported here
    # for the workers to share is forgotten, so each imports it as it is now.
    if server.cfg.reload:
        forget_release()


def when_ready(server: Any) -> None:
    """Mark the database served (before the first worker boots), and say where to
    look: the first start is someone's first contact (README)."""
    configs = {"": Config.from_env()}
    prepare_databases(configs.values())
    listeners = [str(listener) for listener in server.LISTENERS]
    for line in start_lines(listeners, configs):
        server.log.info(line)


def child_exit(server: Any, worker: Any) -> None:
    """Forget a dead worker's gauges (docs/operating.md, "Metrics")."""
    if os.environ.get("REFAPI_METRICS"):
        metrics.worker_exited(worker.pid)


def on_exit(server: Any) -> None:
    """Remove the folders ``prepare_folders`` made."""
    remove_folders()
