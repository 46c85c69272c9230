"""Logs: one line per request, and every other record of the app, in one format.

The request log (the logger ``refapi.request``) has one line per request with the
fields docs/operating.md, "Logs", lists: ``time`` (RFC 3339, UTC), ``level``,
``requestId``, ``traceId``, ``method``, ``route`` (the route table's template),
``status``, ``durationMs``, ``bytes`` and ``caller``. The app's other records
(``refapi``: a storage outage, an uncaught error with its traceback) carry the
request's id as a field too, so one filter finds all of a request.

``REFAPI_LOG_FORMAT=json`` (the default) writes each record as one JSON object; a
traceback is a string field, so it never breaks the one-line rule. ``text`` is for
a person at a terminal (``make run``). JSON is made by python-json-logger rather
than by hand or by structlog: it is a plain ``logging.Formatter``, so the records of
the standard library's loggers (ours, gunicorn's, a host's) all go through it and a
host's ``dictConfig`` can name it; structlog would put a second logging pipeline
beside the one gunicorn and hosts already use.

What a line costs, measured in process on the 2-core machine of
docs/benchmarks.md (``GET /v1/todos/1`` called directly, the best of seven
interleaved runs of 3,000 calls): about 32 us a request, against 37 before
``JsonLines`` wrote its object itself (``add_fields`` and one encoder, below); most
of what is left is the standard library's record and handler, and the write.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pythonjsonlogger.json import JsonEncoder, JsonFormatter

if TYPE_CHECKING:
    from .metrics import Metrics

LOGGER = "refapi"
REQUEST_LOGGER = "refapi.request"


def rfc3339(created: float) -> str:
    """A record's time as RFC 3339 in UTC, to the millisecond."""
    moment = datetime.fromtimestamp(created, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# What LogRecord.__init__ sets on every record, before any field of its own.
RECORD_ATTRIBUTES = frozenset(logging.makeLogRecord({}).__dict__)


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
        # attribute of the record, about thirty, through a call each: a third of
        # what a request's line costs (docs/benchmarks.md). Its hook, overridden,
        # writes the same object. A record's own attributes are set first (its
        # __init__), so its fields (``extra``, a filter's) are the ones after them.
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
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(formatter(log_format))
    logger.addHandler(handler)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)


def printable_path(path: str) -> str:
    """A request path that cannot break a text line: control characters and
    non-ASCII text percent-encoded, as in a URL."""
    if path.isascii() and path.isprintable():
        return path
    raw = path.encode("latin-1", "replace")  # PEP 3333: the path's bytes as latin-1
    return "".join(chr(byte) if 0x20 < byte < 0x7F else f"%{byte:02X}" for byte in raw)


def report(
    log: logging.Logger,
    metrics: Metrics | None,
    *,
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
    replayed: bool = False,
    storage_fault: bool = False,
    failed: bool = False,
) -> None:
    """Write a request's line and, with ``metrics``, count it: for every request
    ``Observe`` (``middleware/observe.py``) sees, and for what gunicorn refuses
    itself (``web/gunicorn.py``), so those requests read like every other."""
    level = logging.ERROR if failed else logging.INFO  # failed: nothing logged why
    if log.isEnabledFor(level):
        fields = {
            "requestId": request_id,
            "traceId": trace_id,
            "method": method,
            "route": route,
            "status": status,
            "durationMs": round(seconds * 1000, 3),
            "bytes": size,
            "caller": caller,
        }
        message = "%s %s %d" if not failed else "%s %s %d: uncaught error"
        # The record factory and handle, not log() or makeRecord(): log() walks the
        # stack for a file and line no line shows (a quarter of a line's cost), and
        # makeRecord checks each field against the record's attributes, which these
        # names never are (2.7% of a logged GET: ``make bench-instructions``).
        record = logging.getLogRecordFactory()(
            log.name, level, "", 0, message, (method, printable_path(path), status),
            sys.exc_info() if failed else None,
        )  # fmt: skip
        record.__dict__.update(fields)
        log.handle(record)
    if metrics is not None:
        metrics.request(
            mount, route or "", method, status, seconds,
            replayed=replayed, storage_fault=storage_fault,
        )  # fmt: skip
