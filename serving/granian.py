"""Serving on Granian (``refapi serve --server granian``, the extra ``fast``): a
Rust HTTP server with a WSGI interface, which reads requests and writes answers
off Python's threads, so a slow client holds a connection, not a worker.

Granian runs the app as it is; what this module adds (docs/operating.md, "Two
servers"):

- the settings from the same configuration as gunicorn's: ``REFAPI_BIND``,
  ``REFAPI_WORKERS``, ``REFAPI_THREADS`` (at least two: slow work always leaves a
  thread free in each worker) and, for a request's head, half of
  ``REFAPI_WORKER_TIMEOUT`` (Granian has no worker timeout: the app's own bounds,
  the lab's delays and the proxy's, hold the other half);
- the start's checks and lines, and the folders the workers share (the host's slots
  for slow work, the metrics' figures), made before any worker starts and removed
  when the server stops; the request id's per-process prefix is redrawn in each
  worker by the fork itself (``os.register_at_fork``), as on gunicorn;
- ``Environ``, a thin layer around the app: Granian starts every request's environ
  from a copy of the process's environment (``DATABASE_URL``, ``REFAPI_SECRET_KEY``
  and the rest would reach every handler and every echo), which it takes out
  again, and mounts the instance at ``SCRIPT_NAME`` as gunicorn does; variables
  named like a request's fields (``HTTP_*``, ``CONTENT_*``, httpoxy's lever) are
  dropped at start, so that what remains cannot be mistaken for a field. It also
  refuses, as gunicorn's worker does, what Granian hands on and the app could not
  answer right (``framing_refusal``): a body in a transfer coding, whose broken
  chunks Granian reads as its end, and an HTTP/1.1 request without one ``Host``;
- one log line per request, the app's: Granian's access log stays off, and its
  own lines go to standard error, as gunicorn's do;
- a master that stops and reloads when told, whichever of its threads the kernel
  hands the signal to (``hear_master_signals``), and a worker that stops when
  told, as gunicorn's do: when its master dies (``stop_with``), and on SIGINT or
  SIGTERM whichever of its threads takes it (``hear_stop_signals``).

It may import what ``serving/gunicorn.py`` may; granian itself is imported when a
server starts, so the package imports without the extra.
"""

from __future__ import annotations

import ctypes
import importlib
import ipaddress
import logging
import os
import secrets
import signal
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..config import Config
from ..errors import ApiError, MalformedRequest, NotFound
from ..logs import report_refusal
from ..startup import check_serving, start_lines
from ..web.origin import valid_host
from ..web.refusals import (
    EXPECTATION_FAILED,
    NOT_A_HOST,
    refusal_answer,
    server_refusal,
    unmet_expectation,
)
from ..web.statuses import STATUS_LINES
from ..web.wsgi import CutShort
from . import folder_lines, forget_release, prepare_folders, remove_folders, tell_ready

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

LOGGER = "refapi.server"
# What Granian's scope sets on every request: never the process's own, whatever
# its environment holds.
SET_BY_GRANIAN = frozenset({
    "REQUEST_METHOD", "PATH_INFO", "QUERY_STRING", "SERVER_NAME", "SERVER_PORT",
    "SERVER_PROTOCOL", "REMOTE_ADDR", "RAW_URI", "SCRIPT_NAME",
    "GATEWAY_INTERFACE", "SERVER_SOFTWARE",
})  # fmt: skip
# Granian's own lines on standard error (its defaults write them to standard
# output, where the app's request lines go), in gunicorn's error log's shape.
LOGGING = {
    "formatters": {
        "generic": {
            "()": "logging.Formatter",
            "fmt": "[%(asctime)s] [%(process)d] [%(levelname)s] %(message)s",
            "datefmt": "%Y-%m-%d %H:%M:%S %z",
        },
    },
    "filters": {"cut_on_purpose": {"()": "refapi.serving.granian.CutOnPurpose"}},
    "handlers": {
        "console": {
            "formatter": "generic",
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stderr",
            "filters": ["cut_on_purpose"],
        },
    },
    "loggers": {
        "_granian": {"handlers": ["console"], "level": "INFO", "propagate": False},
        LOGGER: {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}


class CutOnPurpose(logging.Filter):
    """Leaves out Granian's line for an answer the app cut short on purpose
    (``web.wsgi.CutShort``, the report card's dropped download): Granian logs any
    exception from an answer's iterable with its traceback, as it must a fault,
    and gunicorn's worker takes this one quietly (docs/lab.md)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return (
            not isinstance(error, CutShort) and "CutShort: " not in record.getMessage()
        )


def address(bind: str) -> tuple[str, int]:
    """``REFAPI_BIND``'s host and port: ``127.0.0.1:8000``, ``[::1]:8000``. Granian
    listens on an IP address, not a name, nor a Unix socket."""
    host, _, port = bind.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    try:
        ipaddress.ip_address(host)
        if not port.isdigit() or int(port) > 65535:
            raise ValueError(port)
    except ValueError:
        raise SystemExit(
            f"refapi: REFAPI_BIND must be HOST:PORT for Granian, HOST an IP address,"
            f" not {bind!r}"
        ) from None
    return host, int(port)


def refused_settings(config: Config) -> str | None:
    if config.threads < 2:
        return (
            f"REFAPI_THREADS must be at least 2 on Granian, not {config.threads}: slow"
            " work holds a thread, and one must stay free in each worker"
        )
    return None


class Environ:
    """The app, with the process's environment taken out of each environ Granian
    hands it and the instance mounted at ``SCRIPT_NAME`` (module docstring)."""

    def __init__(self, app: WSGIApplication, prefix: str, config: Config) -> None:
        self.app, self.prefix, self.config = app, prefix, config
        self.leaked = tuple(sorted(frozenset(os.environ) - SET_BY_GRANIAN))
        self.multiprocess = config.workers > 1

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        for name in self.leaked:
            environ.pop(name, None)
        environ["wsgi.multiprocess"] = self.multiprocess
        error = framing_refusal(environ)
        if error is None and self.prefix:
            path = environ.get("PATH_INFO", "")
            if path == self.prefix or path.startswith(self.prefix + "/"):
                environ["SCRIPT_NAME"] = self.prefix
                environ["PATH_INFO"] = path[len(self.prefix) :]
            else:
                # As gunicorn refuses a path outside its SCRIPT_NAME, but as what it
                # is: nothing is served there.
                error = NotFound()
        if error is not None:
            return self.refuse(error, environ, start_response)
        return self.app(environ, start_response)

    def refuse(
        self, error: ApiError, environ: WSGIEnvironment, start_response: StartResponse
    ) -> Iterable[bytes]:
        """Answer as gunicorn's worker answers what it refuses (serving/gunicorn.py):
        the error object, a new request id (nothing of the request is trusted),
        ``Connection: close``; its line written and counted as every request's."""
        started = time.perf_counter()
        request_id = secrets.token_hex(16)
        body, headers = refusal_answer(error, self.config, request_id)
        start_response(STATUS_LINES[error.status], headers)
        report_refusal(
            bool(self.config.metrics), request_id=request_id,
            method=environ.get("REQUEST_METHOD", ""),
            path=environ.get("PATH_INFO", ""), status=error.status,
            seconds=time.perf_counter() - started, size=len(body), mount=self.prefix,
        )  # fmt: skip
        return [body]


def framing_refusal(environ: WSGIEnvironment) -> ApiError | None:
    """What gunicorn refuses itself and Granian hands on, where the app could not
    answer it right (docs/operating.md, "What Granian refuses itself"):

    - a body in a transfer coding (chunked): Granian hands the app a chunked body
      cut short as if it were whole, so a write the client never finished would be
      stored; ``411 LENGTH_REQUIRED``, since with ``Content-Length`` a short body is
      seen for what it is (``400 MALFORMED_REQUEST``, the app's body reader);
    - an HTTP/1.1 request without exactly one ``Host`` (RFC 9112, section 3.2):
      Granian hands on none as empty and two joined by a comma; ``400
      MALFORMED_REQUEST``, as on gunicorn, and so is a ``Host`` that is no host
      and port, in any version;
    - an ``Expect`` other than ``100-continue`` (RFC 9110, section 10.1.1):
      Granian ignores it, and serves a request whose client waits for leave to
      send its body only once that body comes; ``417 EXPECTATION_FAILED``, as on
      gunicorn.
    """
    if "HTTP_TRANSFER_ENCODING" in environ:
        return server_refusal(
            411, "LENGTH_REQUIRED",
            "A body needs a Content-Length here: a transfer coding is not read.",
        )  # fmt: skip
    expect = environ.get("HTTP_EXPECT")
    # Each field's value, as gunicorn reads each field: Granian joins them.
    if expect is not None and any(map(unmet_expectation, expect.split(","))):
        return server_refusal(*EXPECTATION_FAILED)
    host = environ.get("HTTP_HOST", "")
    if environ.get("SERVER_PROTOCOL") == "HTTP/1.1" and (not host or "," in host):
        reason = "an HTTP/1.1 request needs one Host header field"
    elif host and not valid_host(host):
        reason = NOT_A_HOST
    else:
        return None
    return MalformedRequest(
        "The request could not be read as HTTP/1.1.", details={"reason": reason}
    )


STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})
# What Granian's master answers: a stop, and SIGHUP, a reload.
MASTER_SIGNALS = STOP_SIGNALS | {signal.SIGHUP}
RESTOP_S = 0.5  # how often a master asked to stop is asked again


def hear_master_signals() -> None:
    """Take SIGINT, SIGTERM and SIGHUP in a thread of the master's own, which runs
    Granian's handler for each.

    Granian's master waits for a stop or a reload in its main thread, on an event
    its handlers set, and Python runs a handler only in the main thread. But the
    kernel hands a signal sent to a process to any of its threads that does not
    block it, and Granian's master has one more thread for each worker (each waits
    for its worker to end): a signal one of them took left the main thread asleep,
    and the master neither stopped nor reloaded (a SIGHUP and a SIGTERM on the
    heels of a start: 9 masters in 60). So, called in the main thread once
    Granian's handlers are set and before its threads start (Granian's startup
    hooks run then; each thread starts with the mask of the thread that starts
    it), every thread blocks the three, and this one waits for them. Its handlers
    only set a flag and the event, so they may run in any thread. Each worker
    forks with the three blocked too: a SIGTERM that comes while it starts waits
    for it (``hear_stop_signals``).

    A stop is asked again every ``RESTOP_S`` until the master ends: a reload
    clears the event when it begins, so a stop that set it just before was lost
    (a SIGTERM on a SIGHUP's heels: 2 masters in 60 once the rest was mended)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, MASTER_SIGNALS)

    def hear() -> None:
        stop = None  # the stop signal heard, once one is
        while True:
            if stop is None:
                number = signal.sigwait(MASTER_SIGNALS)
            else:
                heard = signal.sigtimedwait(MASTER_SIGNALS, RESTOP_S)
                number = stop if heard is None else heard.si_signo
            if number in STOP_SIGNALS:
                stop = number
            handled(number, signal.getsignal(number))

    threading.Thread(target=hear, name="refapi-master-signals", daemon=True).start()


def handled(number: int, handler: Any) -> bool:
    """Run ``handler``, Python's for signal ``number``, from a thread that heard it
    (``hear_master_signals``, ``hear_stop_signals``): whether it ran. One that
    fails is logged, since the next signal must still be heard."""
    try:
        if callable(handler):
            handler(number, None)
    except BaseException:
        logging.getLogger(LOGGER).exception("handling signal %d", number)
        return False
    return True


def hear_stop_signals() -> None:
    """Take SIGINT and SIGTERM in a thread of this worker's own, which runs there
    the handler Granian sets for them.

    Granian's worker waits for its stop in its main thread, on an event that only
    its handler, run by that thread, sets. But the kernel hands a signal sent to a
    process to any of its threads that does not block it, and Granian's own
    threads do not: one that takes it leaves the main thread asleep, and the
    worker served on until its master killed it, at the worker timeout (a
    terminal's Ctrl-C, which signals every process of the group, and the master's
    SIGTERM after it, lost on one worker in about five stops). So, called before
    those threads start (each starts with the mask of the thread that starts
    it), every thread blocks both, and this one waits for them and runs the
    handler once: Granian's, run again while it runs (a second signal in the main
    thread), deadlocks, and so does a third run anywhere (it hands the stop to a
    queue of one, read once). A master killed with -9 sends more than one: Linux
    hands its workers from each of its threads to the next as they end, with a
    parent-death signal (``stop_with``) at each. A process the worker starts with
    ``subprocess`` starts with both blocked too (refapi starts none;
    docs/operating.md, "Two servers"). SIGINT is the master's alone: a worker
    stops when its master tells it (SIGTERM), as Granian's master does at each
    stop, reload and on Ctrl-C."""
    inherited = {int(number): signal.getsignal(number) for number in STOP_SIGNALS}
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)

    def hear() -> None:
        stopping = False
        while True:
            number = signal.sigwait(STOP_SIGNALS)
            if number == signal.SIGINT or stopping:
                # Ctrl-C signals the whole group, so the master has it too, and it
                # stops each worker with SIGTERM. A worker that stopped on its own
                # first would count as one that died: the server would exit 1.
                # And once the stop is under way, another SIGTERM asks for it again.
                continue
            # Until the worker sets its own, the handler is its master's, copied
            # by the fork, which would stop nothing here.
            while (handler := signal.getsignal(number)) is inherited[number]:
                time.sleep(0.05)
            stopping = handled(number, handler)

    threading.Thread(target=hear, name="refapi-stop-signals", daemon=True).start()

    # A process this worker forks starts with the mask of the thread that forks it:
    # unblocked there, as it would have been (refapi starts none; exec keeps it).
    # SIGHUP too, which the worker has blocked since its master forked it.
    def unblock() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, MASTER_SIGNALS)

    os.register_at_fork(after_in_child=unblock)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def stop_with(master: int) -> None:
    """Have this worker told to stop (SIGTERM: it finishes what it has begun) when
    ``master`` dies, as gunicorn's workers stop when theirs does: Granian's go on
    serving, holding the port, with nobody left to stop them or replace them
    (docs/operating.md, "Two servers"). Linux's ``prctl``, through ctypes: the
    standard library has no call for it. Elsewhere, nothing."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != master:  # it died before the call
        os.kill(os.getpid(), signal.SIGTERM)


def loaded(master: int, make_app: Callable[[], Any]) -> WSGIApplication:
    """The app a worker serves, made in it once it hears its stop signals and its
    master's death (``hear_stop_signals``, ``stop_with``). After a reload, the
    master has forgotten refapi's modules (``forget_release``): the worker imports
    the release installed now (or has, for Granian's logging settings, which name
    ``CutOnPurpose``), and serves what that makes."""
    fresh = importlib.import_module(__name__)
    if fresh.loaded is not loaded:
        made = importlib.import_module(make_app.__module__)
        found: WSGIApplication = fresh.loaded(
            master, getattr(made, make_app.__qualname__, make_app)
        )
        return found
    hear_stop_signals()
    stop_with(master)
    app = make_app()
    return Environ(app, os.environ.get("SCRIPT_NAME", ""), app.config)


def serve(config: Config, make_app: Callable[[], Any]) -> int:
    """Serve ``make_app()`` (``create_app``, which the command hands in: the app
    stands above this package) on Granian in this process, until a signal stops it
    (SIGTERM or SIGINT: each worker finishes what it has begun)."""

    master = os.getpid()

    def load(target: str) -> WSGIApplication:
        # In each worker, once it has started (Granian calls it there), before
        # Granian starts its threads.
        return loaded(master, make_app)

    try:
        from granian.constants import HTTPModes, Interfaces
        from granian.http import HTTP1Settings
        from granian.server import Server
    except ImportError:
        raise SystemExit(
            "refapi: Granian is not installed: pip install 'refapi[fast]'"
        ) from None
    problem = refused_settings(config)
    if problem:
        raise SystemExit(f"refapi: {problem}")
    host, port = address(config.bind)
    check_serving(config, [(host, port)])
    dropped = [name for name in os.environ if name.startswith(("HTTP_", "CONTENT_"))]
    for name in dropped:
        del os.environ[name]
    server = Server(
        "refapi",
        address=host,
        port=port,
        interface=Interfaces.WSGI,
        workers=config.workers,
        blocking_threads=config.threads,
        http=HTTPModes.http1,
        websockets=False,  # WSGI has none: said, it would log that it ignores them
        http1_settings=HTTP1Settings(
            header_read_timeout=config.worker_timeout * 500  # half of it, in ms
        ),
        log_dictconfig=LOGGING,
        log_access=False,
        respawn_failed_workers=True,
        workers_kill_timeout=config.worker_timeout,
    )
    log = logging.getLogger(LOGGER)

    @server.on_startup
    def started() -> None:
        hear_master_signals()  # first: before the workers and their threads start
        if dropped:
            log.warning("dropped from the environment: %s", ", ".join(dropped))
        prepare_folders([config])
        for line in folder_lines(config):
            log.info(line)
        shown = f"[{host}]" if ":" in host else host
        for line in start_lines([f"http://{shown}:{port}"], {"": config}):
            log.info(line)
        # Listening, as gunicorn says it, for systemd's Type=notify unit
        # (deploy/refapi.service): once a worker has bound the port (Linux's way).
        ready = f"READY=1\nSTATUS=refapi on Granian, {config.workers} workers"
        args = (port, ready, log)
        threading.Thread(target=tell_ready, args=args, daemon=True).start()

    @server.on_reload
    def forget() -> None:
        # Each worker forks from this master: a reload's would otherwise run the
        # release it started with (docs/operating.md, "Upgrading").
        forget_release()

    try:
        server.serve(target_loader=load)
    finally:
        remove_folders()
    return 0
