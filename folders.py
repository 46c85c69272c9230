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
workers hold it with it) and marks it so once it does (``MARK``), and making a
folder first removes the others of its kind that are marked and that nobody
holds. One without the mark is never removed: it is being made, or its server
(an earlier release's) holds no lock to tell whether it is alive. A refused
start (a port in use), or a ``gunicorn --check-config``, removes its folders as
its process exits.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import MutableMapping

MEMORY = "/dev/shm"
MARK = ".held"  # in a folder once its maker holds the lock: only such are swept
_held: dict[str, int] = {}  # a folder this process made: the descriptor locking it


def prepare(
    name: str, prefix: str, environ: MutableMapping[str, str], memory: str = MEMORY
) -> str:
    """A new, empty folder named ``prefix...`` but for its mark, held by this
    process, named by ``environ[name]``, and removed when this process exits (not
    a child of it): in ``memory`` when it can be written to, else the system's
    temporary folder. Left-over folders of the same kind there are removed."""
    parent = memory if os.access(memory, os.W_OK | os.X_OK) else tempfile.gettempdir()
    sweep(parent, prefix)
    folder = tempfile.mkdtemp(prefix=prefix, dir=parent)
    fd = _open(folder)
    fcntl.flock(fd, fcntl.LOCK_SH)
    _held[folder] = fd
    mark = os.open(os.path.join(folder, MARK), os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(mark)
    environ[name] = folder
    atexit.register(_remove_if_maker, os.getpid(), name, prefix, {name: folder})
    return folder


def remove(name: str, prefix: str, environ: MutableMapping[str, str]) -> None:
    """Remove the folder ``environ[name]`` names, if ``prepare`` made it."""
    folder = environ.get(name, "")
    if os.path.basename(folder).startswith(prefix):
        shutil.rmtree(folder, ignore_errors=True)
    fd = _held.pop(folder, None)
    if fd is not None:
        os.close(fd)


def _remove_if_maker(
    maker: int, name: str, prefix: str, environ: MutableMapping[str, str]
) -> None:
    if os.getpid() == maker:
        remove(name, prefix, environ)


def sweep(parent: str, prefix: str) -> None:
    """Remove the folders ``prefix...`` in ``parent`` that are marked and that no
    live process holds."""
    found: list[str] = []
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        found = [e.path for e in entries if e.name.startswith(prefix)]
    for folder in found:
        try:
            fd = _open(folder)
        except OSError:  # another user's, a file, or gone already
            continue
        try:
            os.stat(MARK, dir_fd=fd)  # FileNotFoundError: not ours to judge
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # unmarked, or held: its server is alive
            continue
        else:
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            os.close(fd)


def _open(folder: str) -> int:
    return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
