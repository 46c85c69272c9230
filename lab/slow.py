"""The lab's slow answers and those written as they are made: httpbin's delay,
streams and drip, and the lab's server-sent events.

- ``/lab/delay/{seconds}`` answers ``/lab/get``'s reflection and the ``seconds``
  it waited, after them;
- ``/lab/stream/{n}`` writes ``n`` JSON lines (at most ``MAX_ITEMS``, and as many
  as ``REFAPI_LAB_MAX_BYTES`` holds), each ``/lab/get``'s reflection with an ``id``
  from 0, as httpbin's, but as ``LINES_TYPE``;
- ``/lab/stream-bytes/{n}`` writes ``/lab/bytes/{n}``'s bytes in chunks of
  ``?chunk_size=`` (``STREAM_CHUNK`` unless asked), at most ``MAX_STEPS`` of them;
- ``/lab/drip?duration=&numbytes=&code=&delay=`` waits ``delay`` seconds, then
  answers ``code`` with ``numbytes`` asterisks spread over ``duration`` seconds,
  its ``Content-Length`` said first, as httpbin's;
- ``/lab/sse?count=&delay=`` writes ``count`` server-sent events (at most
  ``MAX_ITEMS``), ``delay`` seconds apart, resuming after a ``Last-Event-ID``; one
  that asks for none beyond it is ``204``, which tells an ``EventSource`` to stop
  reconnecting (HTML's "Server-sent events").

Bounds clamp, as httpbin's do (docs/lab.md, "Delays" and "Streams"): a count to
``MAX_ITEMS``, bytes to ``REFAPI_LAB_MAX_BYTES``, and the time of a delay, a drip
or the events to ``REFAPI_LAB_MAX_DELAY`` in all. A worker that waits serves
nobody else meanwhile, so a delay, and a drip or events that wait, are slow work:
they pass the delay bucket, hold one of the host's share of slots (``slots.py``)
until the server closes the answer (the router lets go of it), and find it taken
as ``429`` at once instead of tying up another worker; and they are ``508`` when
they came through this service's own proxy, which would hold a slot waiting on
them. A reader slower than the bound is cut at it: the answer stops, short. The
sleep and the clock are passed in, so no test waits (docs/lab.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..config import Config
from ..errors import ValidationError
from ..middleware.rate_limit.policy import RateLimits
from ..web import Request, Response, Streamed, empty_response, json_response
from ..web.keys import refuse_loop
from ..web.wsgi import positive_int
from . import reflect
from .bodies import OCTETS, random_bytes
from .errors import SlowWorkLimited
from .handlers import SERVED

if TYPE_CHECKING:
    from ..slots import Slots
    from ..storage.base import MetaStore

MAX_ITEMS = 100  # lines or events: httpbin's bound
# The paths of slow work, each a path or the start of one (the explainer refuses them).
SLOW_PATHS = ("/lab/delay", "/lab/drip", "/lab/sse")
MAX_STEPS = 1000  # a drip's or a byte stream's writes at most, however many bytes
STREAM_CHUNK = 10 * 1024  # a byte stream's chunk, unless asked: httpbin's
# What a drip may answer: a 2xx with a body that needs nothing more (no Location,
# no range, not "reset content").
DRIP_CODES = tuple(
    c for c in sorted(SERVED) if 200 <= c < 300 and c not in (201, 204, 205)
)
EVENT_TYPE = "text/event-stream"
# JSON lines: many JSON texts, one a line, which is no one JSON text
# (application/json, as httpbin writes it, would tell a client to parse it whole).
LINES_TYPE = "application/x-ndjson"
RETRY_MS = 1000  # how long an EventSource waits before it reconnects
_DIGITS = re.compile("[0-9]*")  # an id this service sent, or none
# A number as JSON writes one (1, 0.5, 2e-1): what a generated client sends.
_SECONDS = re.compile(r"[0-9]{1,24}(?:\.[0-9]{1,24})?(?:[eE][-+]?[0-9]{1,3})?")


def delay_response(
    request: Request,
    seconds: str,
    config: Config,
    store: MetaStore,
    sleep: Callable[[float], None],
    limits: RateLimits,
    slots: Slots,
) -> Response:
    wait = seconds_clamped("seconds", seconds, config.lab_max_delay)
    slow_work(request, config, store, limits, slots, wait)
    sleep(wait)
    waited = int(wait) if wait.is_integer() else wait
    return json_response({**reflect.get_members(request), "seconds": waited})


def stream_lines(request: Request, config: Config, n: int) -> Response:
    """``/lab/stream/{n}``: the reflection, a JSON line each, ``id`` 0 to n-1; the
    lines stop before one that would take the answer past ``REFAPI_LAB_MAX_BYTES``
    (the first is always sent). Each line holds the whole request's head, so
    without it a large head bought an answer a hundred times its size, which a
    client that does not read held a server's thread with, for ever on Granian
    (docs/lab.md, "Streams")."""
    members = reflect.get_members(request)
    most = config.lab_max_bytes

    def lines() -> Iterator[bytes]:
        written = 0
        for number in range(min(n, MAX_ITEMS)):
            line = json.dumps({**members, "id": number}).encode() + b"\n"
            written += len(line)
            if number and written > most:
                return
            yield line

    return Streamed(lines(), headers=[("Content-Type", LINES_TYPE)])


def stream_bytes(request: Request, config: Config, n: int) -> Response:
    """``/lab/stream-bytes/{n}``: ``/lab/bytes/{n}``'s bytes (the same for the same
    ``?seed=``), written in chunks of ``?chunk_size=`` bytes, at most MAX_STEPS
    of them: a smaller chunk is made larger, so no client buys a write a byte."""
    size = min(n, config.lab_max_bytes)
    chunk = max(_count(request, "chunk_size", STREAM_CHUNK), -(-size // MAX_STEPS))
    body = random_bytes(request, size)

    def chunks() -> Iterator[bytes]:
        for start in range(0, size, chunk):
            yield body[start : start + chunk]

    return Streamed(chunks(), headers=[("Content-Type", OCTETS)])


def drip(
    request: Request,
    config: Config,
    store: MetaStore,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
    limits: RateLimits,
    slots: Slots,
) -> Response:
    most = config.lab_max_delay
    wait = _seconds(request, "delay", 0, most)
    duration = min(_seconds(request, "duration", 2, most), most - wait)
    size = min(_count(request, "numbytes", 10), config.lab_max_bytes)
    code = _count(request, "code", 200)
    if code not in DRIP_CODES:
        raise ValidationError.one(
            "code", "must be one of " + ", ".join(map(str, DRIP_CODES))
        )
    if wait + duration > 0:  # slow work only when it waits, as the events'
        slow_work(request, config, store, limits, slots, wait + duration)
    sleep(wait)
    steps = min(size, MAX_STEPS)

    def asterisks() -> Iterator[bytes]:
        begun = clock()
        deadline = begun + duration + 1  # a second for the writes themselves
        written = 0
        for step in range(1, steps + 1):
            if clock() > deadline:
                return  # a reader slower than the bound: cut, short
            upto = size * step // steps
            yield b"*" * (upto - written)
            written = upto
            if step < steps:
                # Until the next write is due, from the start: a sleep that
                # overshoots (a busy host) delays no write after it.
                sleep(max(0.0, begun + duration * step / steps - clock()))

    return Streamed(asterisks(), code, [("Content-Type", OCTETS)], size)


def events(
    request: Request,
    config: Config,
    store: MetaStore,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
    limits: RateLimits,
    slots: Slots,
) -> Response:
    count = min(_count(request, "count", 10), MAX_ITEMS)
    after = request.headers.get("Last-Event-ID", "")
    if not _DIGITS.fullmatch(after):
        raise ValidationError.one("Last-Event-ID", "must be an event's id: digits")
    digits = after.lstrip("0")
    if len(digits) > 3:  # past every id sent: none is left (and int() is bounded)
        first = MAX_ITEMS + 1
    else:
        first = int(digits or "0") + 1
    if first > count:
        return empty_response(204)  # nothing left: the EventSource stops
    most = config.lab_max_delay
    left = count - first + 1
    # Spread over at most the bound: the delay shrinks to fit every event in.
    pause = min(_seconds(request, "delay", 1, most), most / max(left - 1, 1))
    if pause and left > 1:
        slow_work(request, config, store, limits, slots, pause * (left - 1))

    def written() -> Iterator[bytes]:
        begun = clock()
        deadline = begun + pause * (left - 1) + 1
        yield f"retry: {RETRY_MS}\n\n".encode()
        for number in range(first, count + 1):
            if clock() > deadline:
                return
            data = json.dumps({"id": number, "count": count})
            yield f"id: {number}\nevent: tick\ndata: {data}\n\n".encode()
            if number < count:  # until the next is due, from the start
                sleep(max(0.0, begun + pause * (number - first + 1) - clock()))

    return Streamed(written(), headers=[("Content-Type", EVENT_TYPE)])


def slow_work(
    request: Request,
    config: Config,
    store: MetaStore,
    limits: RateLimits,
    slots: Slots,
    seconds: float,
) -> None:
    """As a delay: 508 through this service's proxy, the delay bucket, a slot."""
    refuse_loop(request, config, store)
    limits.take(request, "delay")
    busy_for = slots.take(request.environ, seconds)
    if busy_for:
        raise SlowWorkLimited(busy_for)


def seconds_clamped(name: str, text: str, most: float) -> float:
    """``text`` as seconds, at most ``most`` (clamped, as httpbin's); 400 when it is
    no number of seconds."""
    if not _SECONDS.fullmatch(text):
        raise ValidationError.one(name, "must be a number of seconds, 0 or more")
    return min(float(text), most)


def _seconds(request: Request, name: str, default: float, most: float) -> float:
    raw = request.arg(name)
    return default if raw is None else seconds_clamped(name, raw, most)


def _count(request: Request, name: str, default: int) -> int:
    raw = request.arg(name)
    return default if raw is None else positive_int(name, raw, 2**63 - 1)
