"""The folders a server's processes share: the metrics' figures and the slots'
locks (docs/operating.md, "Metrics" and "Slow work shares the host").

Each is made new at a server's start, in memory where it can be (a tmpfs: the
metrics' files are memory-mapped, and a page touched on a full file system kills
the process), named in the environment its workers inherit, and removed when the
server stops. A process no server prepared makes its own on first use and
removes it at exit; only that process does, not a child it forked (a preloaded
gunicorn's workers), whose exit would take the folder from its siblings.

A folder whose maker never removed it (killed with SIGKILL, or out of memory)
would hold its memory until the machine restarts. So its maker holds a shared
lock on it for as long as it lives (the kernel lets go when it dies; forked
workers hold it with it), and making a folder first removes the others of its
kind that nobody holds, once they are older than the few microseconds between
making one and locking it.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import MutableMapping

MEMORY = "/dev/shm"
# Older than this, a folder nobody holds is left over, not being made.
LEFT_OVER_SECONDS = 60
_held: dict[str, int] = {}  # a folder this process made: the descriptor locking it


def prepare(
    name: str, prefix: str, environ: MutableMapping[str, str], memory: str = MEMORY
) -> str:
    """A new, empty folder named ``prefix...``, held by this process and named by
    ``environ[name]``: in ``memory`` when it can be written to, else the system's
    temporary folder. Left-over folders of the same kind there are removed."""
    parent = memory if os.access(memory, os.W_OK | os.X_OK) else tempfile.gettempdir()
    sweep(parent, prefix)
    folder = tempfile.mkdtemp(prefix=prefix, dir=parent)
    fd = _open(folder)
    fcntl.flock(fd, fcntl.LOCK_SH)
    _held[folder] = fd
    environ[name] = folder
    return folder


def remove(name: str, prefix: str, environ: MutableMapping[str, str]) -> None:
    """Remove the folder ``environ[name]`` names, if ``prepare`` made it."""
    folder = environ.get(name, "")
    if os.path.basename(folder).startswith(prefix):
        shutil.rmtree(folder, ignore_errors=True)
    fd = _held.pop(folder, None)
    if fd is not None:
        os.close(fd)


def prepare_for_process(
    name: str, prefix: str, environ: MutableMapping[str, str]
) -> str:
    """``prepare``, removed when this process exits (not a child of it)."""
    folder = prepare(name, prefix, environ)
    atexit.register(_remove_if_maker, os.getpid(), name, prefix, {name: folder})
    return folder


def _remove_if_maker(
    maker: int, name: str, prefix: str, environ: MutableMapping[str, str]
) -> None:
    if os.getpid() == maker:
        remove(name, prefix, environ)


def sweep(parent: str, prefix: str) -> None:
    """Remove the folders ``prefix...`` in ``parent`` that no live process holds."""
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        found = [e.path for e in entries if e.name.startswith(prefix)]
    for folder in found:
        try:
            fd = _open(folder)
        except OSError:  # another user's, a file, or gone already
            continue
        try:
            if time.time() - os.fstat(fd).st_ctime < LEFT_OVER_SECONDS:
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its server is alive
            continue
        else:
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            os.close(fd)


def _open(folder: str) -> int:
    return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
