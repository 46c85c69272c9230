"""Logs: one line per request, and every other record of the app, in one format.

The request log (the logger ``refapi.request``) has one line per request with the
fields docs/operating.md, "Logs", lists: ``time`` (RFC 3339, UTC), ``level``,
``requestId``, ``traceId``, ``method``, ``route`` (the route table's template),
``status``, ``durationMs``, ``bytes`` and ``caller``. The app's other records
(``refapi``: a storage outage, an uncaught error with its traceback) carry the
request's id as a field too, so one filter finds all of a request.

``REFAPI_LOG_FORMAT=json`` (the default) writes each record as one JSON object; a
traceback is a string field, so it never breaks the one-line rule. ``text`` is for
a person at a terminal (``make run``). Records are made JSON by python-json-logger
rather than by hand or by structlog: it is a plain ``logging.Formatter``, so the
records of the standard library's loggers (ours, gunicorn's, a host's) all go
through it and a host's ``dictConfig`` can name it; structlog would put a second
logging pipeline beside the one gunicorn and hosts already use.

A request's line is the exception, when refapi set logging up itself (``configure``:
the process had none, as under gunicorn): ``RequestLines`` joins the format's
texts, made of ``REQUEST_FIELDS`` as the record's fields are, and the request's
values, and writes the line in one ``write()``, with no ``LogRecord``, handler or
formatter: the same text ``JsonLines`` or ``TextLines`` would make of the record.
A process that configured logging itself gets the lines as records, as before.
What a line costs, counted by callgrind (``GET /v1/todos/1`` called in process, the
instructions a request with the log on less those with it off, the line written to
a pipe): JSON 131,000 through ``logging``, 20,000 written so; text 104,000 and
18,000. What is left is Python making a string of a dozen fields, and the write.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from datetime import UTC, datetime
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any

from pythonjsonlogger.json import JsonEncoder, JsonFormatter

from .metrics import process_metrics

if TYPE_CHECKING:
    from .metrics import Metrics

LOGGER = "refapi"
REQUEST_LOGGER = "refapi.request"
# A request line's fields after the format's own (time, level, message), in their
# order (docs/operating.md, "Logs"): the request's record has them as attributes,
# and ``RequestLines`` makes the texts of both formats of them.
REQUEST_FIELDS = (
    "requestId", "traceId", "method", "route", "status", "durationMs", "bytes",
    "caller",
)  # fmt: skip


def rfc3339(created: float) -> str:
    """A record's time as RFC 3339 in UTC, to the millisecond."""
    moment = datetime.fromtimestamp(created, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# What LogRecord.__init__ sets on every record, before any field of its own.
RECORD_ATTRIBUTES = frozenset(logging.makeLogRecord({}).__dict__)
# The longest path and method a line writes; longer ones are cut, ending "...". A
# line is written in one write(), which a pipe takes whole up to 4 KiB (PIPE_BUF):
# a path JSON escapes at most to twice its length, the rest of a line is under
# 700 bytes, so a line of the longest path fits, and the workers' lines sharing a
# pipe never tear (Granian serves paths of up to 64 KiB; gunicorn 4 KiB).
MOST_PATH, MOST_METHOD = 1500, 32
TEXTS = 1024  # the texts of methods, routes and statuses a writer keeps; of callers


class JsonLines(JsonFormatter):
    """One JSON object a record: time, level, message and pid, then its fields,
    then a traceback when it has one."""

    def __init__(self) -> None:
        super().__init__("{message}", style="{", json_ensure_ascii=False)
        # One encoder for every line: json.dumps(cls=...) makes one a call.
        self._encoder = JsonEncoder(ensure_ascii=False)

    def jsonify_log_record(self, log_data: dict[str, Any]) -> str:
        return self._encoder.encode(log_data)

    def add_fields(
        self,
        log_data: dict[str, Any],
        record: logging.LogRecord,
        message_dict: dict[str, Any],
    ) -> None:
        # python-json-logger's own add_fields renames each field and looks at every
        # attribute of the record, about thirty, through a call each. Its hook,
        # overridden, writes the same object. A record's own attributes are set
        # first (its __init__), so its fields (``extra``, a filter's) are the ones
        # after them.
        # PERF: a third of a request's line through logging, make bench-instructions
        log_data["time"] = rfc3339(record.created)
        log_data["level"] = record.levelname.lower()
        log_data["message"] = record.message
        log_data["pid"] = record.process
        skip, fields = self._skip_fields, []
        for name in reversed(record.__dict__):
            if name in RECORD_ATTRIBUTES:
                break
            if name not in skip:
                fields.append(name)
        for name in reversed(fields):
            log_data[name] = record.__dict__[name]
        # What format() made for this hook: the traceback, a stack, a dict message.
        for name, value in message_dict.items():
            log_data["traceback" if name == "exc_info" else name] = value


class TextLines(logging.Formatter):
    """For a person: time, level, message, then each field as ``name=value``."""

    SKIP = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}

    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(
            f"{name}={'-' if value is None else value}"
            for name, value in record.__dict__.items()
            if name not in self.SKIP
        )
        line = f"{rfc3339(record.created)} {record.levelname} {record.getMessage()}"
        line = f"{line} {fields}" if fields else line
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def formatter(log_format: str) -> logging.Formatter:
    return JsonLines() if log_format == "json" else TextLines()


def configure(log_format: str) -> None:
    """Write the app's records to standard output in ``log_format``, unless the
    process has configured logging itself (a host, a test runner): then its
    handlers get the records, and this changes nothing.

    Logging belongs to the process, as in ``logging.basicConfig``: the first
    instance to start decides, and a second instance in the process shares it.
    """
    logger = logging.getLogger(LOGGER)
    if logger.handlers or logging.getLogger().handlers:
        return
    handler = StandardOutput(log_format)
    logger.addHandler(handler)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    # The drivers' records in the same stream and format (psycopg's pool warns of
    # each connection it drops in an outage): without a handler they went to
    # standard error bare, by Python's last resort, a line in two.
    for name in DRIVERS:
        driver = logging.getLogger(name)
        if not driver.handlers:
            driver.addHandler(handler)
            driver.propagate = False


DRIVERS = ("psycopg",)


class StandardOutput(logging.StreamHandler):
    """The handler ``configure`` adds: the app's records on standard output, and
    ``lines``, the writer of the request lines to the same file (None when
    standard output is no file, a host's object: the lines are records then)."""

    def __init__(self, log_format: str) -> None:
        super().__init__(sys.stdout)
        self.setFormatter(formatter(log_format))
        self.lines: RequestLines | None = None
        try:
            fd = sys.stdout.fileno()
        except (AttributeError, OSError, ValueError):
            return
        self.lines = RequestLines(log_format, fd)
        os.register_at_fork(after_in_child=self.lines.forked)


def request_lines() -> RequestLines | None:
    """The process's writer of request lines, when ``configure`` set logging up;
    None when the process configured logging itself: the lines are records."""
    for handler in logging.getLogger(LOGGER).handlers:
        if isinstance(handler, StandardOutput):
            return handler.lines
    return None


class RequestLines:
    """A request's line written by refapi itself: its format's texts and the
    request's values joined, and written to a file descriptor in one ``write()``,
    with no ``LogRecord``.

    The line is the one ``JsonLines`` or ``TextLines`` makes of the request's
    record, field for field: both formats' texts are made of ``REQUEST_FIELDS``,
    and a value goes through its format's ``quote`` (JSON's is the encoder's own
    ``encode_basestring``). One ``write()`` a line keeps the lines of gunicorn's
    workers whole on their shared standard output (a pipe takes ``PIPE_BUF``,
    4 KiB, at once).
    """

    def __init__(self, log_format: str, fd: int) -> None:
        self.json = log_format == "json"
        self.fd = fd
        # How the format writes a string, and a string that is None.
        self.quote, self.absent = (
            (encode_basestring, "null") if self.json else (str, "-")
        )
        self.forked()  # the texts, which hold the pid
        # A second and its RFC 3339 text, made once each, after the line's first
        # text; each millisecond's, ".974Z", made once, not f"{n:03d}" a line, and
        # the text after it (neither of the two holds the pid).
        # PERF: about 2,000 instructions, a tenth of a line, make bench-instructions
        self._second = (-1, "")
        self._millis = tuple(f".{n:03d}Z{self.texts[1]}" for n in range(1000))
        # A duration's thousandths as the float's repr ends: ".5" for 1.5 ms, ".0"
        # for 2.0, not the float formatted (dtoa): whole milliseconds and this
        # table write the same text, since a float of three decimals under 2**43
        # has no shorter repr than its digits.
        # PERF: 3,600 instructions a line, make bench-instructions
        self._thousandths = tuple(
            "." + (f"{n:03d}".rstrip("0") or "0") for n in range(1000)
        )
        # Each method, route and status the line has written: their texts from
        # "method" to "durationMs", and the status's digits for the message.
        # Routes are the table's templates, so few; a method is the client's token,
        # so the texts are forgotten past TEXTS (a miss costs the quoting only).
        # PERF: 1,600 instructions a line, make bench-instructions
        self._texts: dict[tuple[str, str | None, int], tuple[str, str]] = {}
        # Each caller's text, "user:7" quoted, kept as those texts are, from its
        # name to the line's end (which hold no pid); and that of no caller.
        self._callers: dict[str, str] = {}
        self._nobody = self._caller_text(None)

    def forked(self) -> None:
        """Make the texts around the line's values: before the time, the message,
        each of ``REQUEST_FIELDS`` (its name) and after the last; JSON's pid is in
        them, so a forked child makes its own."""
        if self.json:
            names = [f', "{name}": ' for name in REQUEST_FIELDS]
            names[0] = f', "pid": {os.getpid()}{names[0]}'
            self.texts = (
                '{"time": "',
                '", "level": "info", "message": ',
                *names,
                "}\n",
            )
        else:
            names = [f" {name}=" for name in REQUEST_FIELDS]
            self.texts = ("", " INFO ", *names, "\n")

    def _caller_text(self, caller: str | None) -> str:
        """The line's text from the caller's name to its end; a caller's is kept."""
        t = self.texts
        if caller is None:
            return t[9] + self.absent + t[10]
        if len(self._callers) >= TEXTS:
            self._callers.clear()
        text = self._callers[caller] = t[9] + self.quote(caller) + t[10]
        return text

    def _made_texts(
        self, method: str, route: str | None, status: int
    ) -> tuple[str, str]:
        """The line's texts of ``method``, ``route`` and ``status``, kept."""
        t, quote, absent = self.texts, self.quote, self.absent
        texts = (
            "".join((
                t[4], quote(method), t[5], absent if route is None else quote(route),
                t[6], f"{status}", t[7],
            )),
            f"{status}",
        )  # fmt: skip
        if len(self._texts) >= TEXTS:
            self._texts.clear()
        self._texts[method, route, status] = texts
        return texts

    def write(
        self,
        request_id: str | None,
        trace_id: str | None,
        method: str,
        path: str,
        route: str | None,
        status: int,
        microseconds: int,
        size: int,
        caller: str | None,
    ) -> None:
        """Write one request's line, at level info, its message "<method> <path>
        <status>"; its duration in microseconds."""
        milliseconds, thousandths = divmod(microseconds, 1000)
        second, millisecond = divmod(time.time_ns() // 1_000_000, 1000)
        made, moment = self._second
        t, quote, absent = self.texts, self.quote, self.absent
        if made != second:
            moment = t[0] + time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = second, moment
        texts = self._texts.get((method, route, status))
        if texts is None:
            texts = self._made_texts(method, route, status)
        # One join of texts and values, not % on a template of them.
        # PERF: about 3,000 instructions a JSON line, make bench-instructions
        line = "".join((
            moment, self._millis[millisecond], quote(f"{method} {path} {texts[1]}"),
            # REQUEST_FIELDS, each value after its name
            t[2], absent if request_id is None else quote(request_id),
            t[3], absent if trace_id is None else quote(trace_id),
            texts[0],  # method, route, status, and durationMs's name
            f"{milliseconds}", self._thousandths[thousandths],
            t[8], f"{size}",
            self._nobody if caller is None else (
                self._callers.get(caller) or self._caller_text(caller)
            ),  # the line's end
        ))  # fmt: skip
        try:
            data = line.encode()
            while data:  # at once, unless a signal cut a long line short
                data = data[os.write(self.fd, data) :]
        except (OSError, UnicodeError) as exc:  # as logging's handlers: say, serve on
            print(f"refapi: a request's line was not written: {exc!r}",
                  file=sys.stderr)  # fmt: skip


def printable_path(path: str) -> str:
    """A request path that cannot break a text line nor add a field to it: control
    characters, spaces and non-ASCII text percent-encoded, as in a URL; cut at
    ``MOST_PATH`` characters."""
    if not (path.isascii() and path.isprintable() and " " not in path):
        raw = path.encode("latin-1", "replace")  # PEP 3333: bytes as latin-1
        path = "".join(
            chr(byte) if 0x20 < byte < 0x7F else f"%{byte:02X}" for byte in raw
        )
    return path if len(path) <= MOST_PATH else path[:MOST_PATH] + "..."


def record(
    name: str, level: int, message: str, args: tuple[Any, ...], fields: dict[str, Any]
) -> logging.LogRecord:
    """A record for the logger ``name`` with ``fields`` as its attributes, and the
    exception being handled at ``ERROR``."""
    # The record factory, not Logger.log() or makeRecord(): log() walks the stack
    # for a file and line no line shows, and makeRecord checks each field against
    # the record's attributes, which these names never are.
    # PERF: log()'s walk a quarter of a line, makeRecord's checks 2.7% of a
    # logged GET, make bench-instructions
    made = logging.getLogRecordFactory()(
        name, level, "", 0, message, args,
        sys.exc_info() if level >= logging.ERROR else None,
    )  # fmt: skip
    made.__dict__.update(fields)
    return made


def report_refusal(
    counted: bool,
    *,
    request_id: str,
    method: str,
    path: str,
    status: int,
    seconds: float,
    size: int,
    mount: str,
) -> None:
    """``report`` for what a server refuses before the app (``serving/``: gunicorn's
    worker, the layer around the app on Granian): no route, no caller, no trace;
    counted in this process's metrics when they are on (``counted``)."""
    report(
        logging.getLogger(REQUEST_LOGGER),
        process_metrics() if counted else None,
        request_id=request_id, trace_id=None, method=method, path=path, route=None,
        status=status, seconds=seconds, size=size, caller=None, mount=mount,
        lines=request_lines(),
    )  # fmt: skip


def report(
    log: logging.Logger,
    metrics: Metrics | None,
    request_id: str | None,
    trace_id: str | None,
    method: str,
    path: str,
    route: str | None,
    status: int,
    seconds: float,
    size: int,
    caller: str | None,
    mount: str,
    counted_as: str = "",
    failed: bool = False,
    lines: RequestLines | None = None,
) -> None:
    """Write a request's line and, with ``metrics``, count it: for every request
    ``Observe`` (``middleware/observe.py``) sees, and for what gunicorn refuses
    itself (``serving/gunicorn.py``), so those requests read like every other.

    ``log``'s level says whether the line is written; ``lines`` writes it, else it
    is a record on ``log``, as is a failed request's (its traceback is logging's).
    ``Observe`` passes its arguments in this order, by position: a call by
    keyword matches each name (PERF: 1,000 instructions a request, make
    bench-instructions).
    """
    level = logging.ERROR if failed else logging.INFO  # failed: nothing logged why
    if log.isEnabledFor(level):
        path = printable_path(path)
        if len(method) > MOST_METHOD:  # a token of any length (RFC 9110 9.1)
            method = method[:MOST_METHOD] + "..."
        # Milliseconds to the microsecond, from a whole number of microseconds, not
        # round(ms, 3), a decimal conversion of its own.
        # PERF: about 2,000 instructions a line, make bench-instructions
        microseconds = round(seconds * 1_000_000)
        if lines is not None and not failed:
            lines.write(
                request_id, trace_id, method, path, route, status, microseconds,
                size, caller,
            )  # fmt: skip
        else:
            message = "%s %s %d" if not failed else "%s %s %d: uncaught error"
            fields = dict(zip(REQUEST_FIELDS, (
                request_id, trace_id, method, route, status, microseconds / 1000,
                size, caller,
            ), strict=True))  # fmt: skip
            log.handle(record(log.name, level, message, (method, path, status), fields))
    if metrics is not None:
        metrics.request(mount, route or "", method, status, seconds, counted_as)
