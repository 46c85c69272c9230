"""Slow work shares the host: it holds at most all but one of the host's slots.

A serving host answers ``REFAPI_WORKERS x REFAPI_THREADS`` requests at once, one a
slot. A request that waits on something slow holds its slot for as long as it
waits: the proxy's fetch, the request the explainer runs, the lab's delay. Enough
of them at once would hold every slot, and nothing else would be answered
(``/healthz`` included) until they ended, or until a deadline when they wait on
each other (the proxy fetching the service itself, twice at once on two workers).
So slow work, all of it together, holds at most ``slots - 1``, counted per host
over every instance the host serves (a gateway's ``/prod`` and ``/dev`` share one
count), and a request that finds that share taken is refused at once, never
queued: ``503 BUSY`` from the proxy and the explainer, ``429`` from the lab
(docs/operating.md, "Slow work shares the host").

The share is a row of ``slots - 1`` lock files in a folder of the host's, each
taken with a non-blocking ``flock``: one held is one slot at work. The kernel lets
go of a lock when the descriptor holding it is closed, so a worker that dies
(killed, out of memory) frees its slot with it, with nothing to clean up. Each file
says when the work holding it should end, for the lab's ``Retry-After``.

The folder is the host's: the server's master makes a new one at each start and
names it in the environment its workers inherit (``prepare_folder``, as
``gunicorn.conf.py`` is first read: ``serving/__init__.py``, ``prepare_folders``),
as it does for the metrics. In a
process no server prepared (a host of one's own, a test), the first instance makes
one of the process's own, so the count is the process's (docs/embedding.md, "Slow
work").

A worker of more than one thread (Granian's: ``REFAPI_THREADS``) also keeps one of
its own threads from slow work: such a server deals each connection to one worker,
whose threads alone answer it, so slow work on all of a worker's threads would
hold up the requests dealt to it however many slots the host has free. So slow
work holds at most ``threads - 1`` of a process's threads too, counted over every
instance the process serves, and finds that share taken as it finds the host's.

A request holds its slot until its answer is closed: ``take`` writes the slot's
number in the environ (``refapi.slow_work``), and the router lets go of it when the
server closes the answer's iterable, or at once when the handler raised. A request
takes one slot at most: the explainer takes one for the request it runs, inside
which the proxy takes no second.
"""

from __future__ import annotations

import fcntl
import functools
import math
import os
import threading
import time
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from . import folders
from .web.environ import SLOW_WORK

if TYPE_CHECKING:
    from .config import Config

# What the server's master names the host's folder by, for its workers.
FOLDER = "REFAPI_SLOTS_DIR"
PREFIX = "refapi-slots-"
UNTIL_BYTES = 24  # a file's "until", seconds since the epoch, left-aligned


def prepare_folder(
    environ: MutableMapping[str, str] = os.environ, memory: str = folders.MEMORY
) -> str:
    """A new, empty folder for a host's slots, named in ``environ`` (in a server's
    master: every worker inherits it); in memory, where it can be, as the metrics'
    folder is (a full disk must not stop the locks; ``folders.py``)."""
    return folders.prepare(FOLDER, PREFIX, environ, memory)


def remove_folder(environ: MutableMapping[str, str] = os.environ) -> None:
    """Remove the folder ``prepare_folder`` made, when the server stops."""
    folders.remove(FOLDER, PREFIX, environ)


def host_folder() -> str:
    """The folder the server prepared, else the process's own."""
    return os.environ.get(FOLDER) or _process_folder()


@functools.cache
def _process_folder() -> str:
    """The folder of a process that no server prepared, made on first use."""
    return folders.prepare(FOLDER, PREFIX, {})


class _Process:
    """The slow work a process is at, over every instance it serves: until when
    each should end, by slot."""

    def __init__(self) -> None:
        self.forked()
        os.register_at_fork(after_in_child=self.forked)

    def forked(self) -> None:
        """A new lock and no work: a child's threads are its own (its parent's
        lock may have been held by a thread the fork left behind)."""
        self.lock = threading.Lock()
        self.until: dict[tuple[int, int], float] = {}  # (instance, slot): until


_PROCESS = _Process()


class Slots:
    """The host's share of slots for slow work, as one instance takes them, and
    the process's share of its threads (``per_process``; None: no bound of its
    own, a worker of one thread)."""

    def __init__(
        self,
        share: int,
        folder: str,
        clock: Callable[[], float] = time.time,
        per_process: int | None = None,
    ) -> None:
        self.share = share
        self.per_process = per_process
        self.paths = [os.path.join(folder, f"slot-{n}") for n in range(share)]
        self.clock = clock
        self.held: dict[int, int] = {}  # a slot's number: the descriptor locking it

    @classmethod
    def configured(
        cls, config: Config, clock: Callable[[], float] = time.time
    ) -> Slots:
        """All but one of the host's slots, in the host's folder; all but one of a
        worker's threads, when it has more than one."""
        per_process = config.threads - 1 if config.threads > 1 else None
        return cls(config.slots - 1, host_folder(), clock, per_process)

    def take(self, environ: MutableMapping[str, Any], seconds: float) -> int:
        """Hold a slot for the request, for work of at most ``seconds``, until its
        answer is closed: 0 once it holds one (or held one already); else none is
        free, and the whole seconds until the soonest should be, at least 1."""
        if SLOW_WORK in environ:
            return 0
        with _PROCESS.lock:
            now = self.clock()
            mine = _PROCESS.until
            if self.per_process is not None and len(mine) >= self.per_process:
                return max(1, math.ceil(min(mine.values()) - now))
            wait = self._take(environ, seconds, now)
            if not wait:
                mine[id(self), environ[SLOW_WORK]] = now + seconds
            return wait

    def _take(
        self, environ: MutableMapping[str, Any], seconds: float, now: float
    ) -> int:
        waits = []
        for number, path in enumerate(self.paths):
            fd = _open(path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                waits.append(_left(os.pread(fd, UNTIL_BYTES, 0), now))
                os.close(fd)
                continue
            until = f"{now + seconds:<{UNTIL_BYTES}.3f}"
            os.pwrite(fd, until.encode(), 0)
            self.held[number] = fd
            environ[SLOW_WORK] = number
            return 0
        return min(waits, default=1)

    def release(self, environ: MutableMapping[str, Any]) -> None:
        """Let go of the slot the request holds, if it holds one."""
        number = environ.pop(SLOW_WORK, None)
        fd = self.held.pop(number, None) if number is not None else None
        if fd is not None:
            with _PROCESS.lock:
                _PROCESS.until.pop((id(self), number), None)
            os.close(fd)  # and with it the lock

    def release_all(self) -> None:
        """Let go of every slot this instance holds (its app is closing)."""
        with _PROCESS.lock:
            for number in self.held:
                _PROCESS.until.pop((id(self), number), None)
        while self.held:
            os.close(self.held.popitem()[1])


def _open(path: str) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except FileNotFoundError:  # the folder went (a cleaner of /tmp): made again
        os.makedirs(os.path.dirname(path), 0o700, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


def _left(written: bytes, now: float) -> int:
    """Whole seconds until the work a file says ends, at least 1 (1 when it says
    nothing yet)."""
    try:
        return max(1, math.ceil(float(written.decode()) - now))
    except (ValueError, OverflowError):
        return 1
