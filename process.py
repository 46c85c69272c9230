"""This process's id, known without a system call.

``os.getpid()`` is one (0.22 us here; the C library no longer caches it), and the
request path asked it five times a request, to tell a forked worker from the parent
whose connections and maps it must not touch. ``os.register_at_fork`` keeps ``PID``
current in a child of every fork made through Python (gunicorn's workers,
multiprocessing's), whichever server embeds us. Read it as ``process.PID``: a name
imported from here would keep the parent's number.
"""

from __future__ import annotations

import os

PID = os.getpid()


def _forked() -> None:
    global PID
    PID = os.getpid()


os.register_at_fork(after_in_child=_forked)
