"""SQLite's rate-limit buckets: the memory-mapped file beside the database
(storage/sqlite/buckets.py, its table storage/sqlite/bucket_table.py), shared by
every worker of one host. What every backend's buckets must do is in
test_contract.py."""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import subprocess
import sys
import threading

import pytest

from refapi.storage.sqlite.bucket_table import PROBES, SLOTS
from refapi.storage.sqlite.buckets import SharedBuckets
from tests.conftest import skip_or_fail

pytestmark = pytest.mark.sqlite_only  # SQLite's own: not run on PostgreSQL

SECRET = b"test-secret"


def table(path, secret: bytes = SECRET) -> SharedBuckets:
    """The table in the file at ``path``, placing keys under ``secret``."""
    return SharedBuckets(str(path), lambda: secret)


def test_sqlite_buckets_are_shared_through_the_file(tmp_path):
    path = str(tmp_path / "buckets")
    one, two = table(path), table(path)
    assert one.take("k", 2, 1.0, 100.0) == (True, 1.0)
    assert two.take("k", 2, 1.0, 100.0) == (True, 0.0)
    assert one.take("k", 2, 1.0, 100.0) == (False, 0.0)
    assert two.take("k", 2, 1.0, 100.5) == (False, 0.5)
    assert one.take("k", 2, 1.0, 101.0) == (True, 0.0)


def test_sqlite_buckets_slots_of_full_buckets_are_taken_again(tmp_path):
    buckets = table(tmp_path / "buckets")
    # More keys than slots, each full again a second after its take: a newcomer
    # takes a full bucket's slot, forgetting nothing, and starts full.
    for n in range(SLOTS + 100):
        assert buckets.take(f"caller-{n}", 5, 1.0, 1000.0 + n / 1e3)[0]


def test_sqlite_bucket_placement_depends_on_the_secret_key(tmp_path):
    one, two = table(tmp_path / "one", b"one secret"), table(tmp_path / "two")
    keys = [f"addr:2001:db8:cafe:{n:x}::/64" for n in range(64)]
    # _digest: the key's digest and first probe, as the table places it.
    assert [one._digest(key) for key in keys] != [two._digest(key) for key in keys]
    assert one._digest(keys[0])[0] != two._digest(keys[0])[0]


def colliding(buckets: SharedBuckets, key: str, count: int) -> list[str]:
    """``count`` keys whose first probe is ``key``'s, as someone who knows the
    secret key could compute them."""
    start, found = buckets._digest(key)[1] % SLOTS, []
    for n in itertools.count():
        if buckets._digest(f"flood-{n}")[1] % SLOTS == start:
            found.append(f"flood-{n}")
            if len(found) == count:
                return found
    raise AssertionError("unreachable")


def test_sqlite_a_bucket_pushed_out_comes_back_empty_not_full(tmp_path):
    """docs/rate-limits.md, "The bucket table": a drained bucket pushed out by a
    flood of colliding keys comes back empty, even into a slot freed since."""
    buckets = table(tmp_path / "buckets")
    drained = ("register:addr:192.0.2.1", 2, 2 / 3600)  # 2 an hour
    assert buckets.take_all([drained], 1000.0) == (True, [1.0])
    assert buckets.take_all([drained], 1000.0) == (True, [0.0])
    flood = colliding(buckets, drained[0], PROBES)
    # Eight newcomers fill the window; the eighth pushes the drained bucket out
    # and, having found no free slot, starts empty itself.
    left = [buckets.take(key, 100, 10.0, 1001.0)[1] for key in flood]
    assert left == [99.0] * (PROBES - 1) + [0.0]
    # A minute on the flood's buckets are full, their slots free to take: the
    # drained key comes back into one empty, as would any newcomer probing from
    # its slot until the drained bucket would have been full again.
    assert buckets.take_all([drained], 1060.0) == (False, [0.0])
    assert buckets.take("elsewhere", 5, 1.0, 1060.0) == (True, 4.0)
    [*_, newcomer] = colliding(buckets, drained[0], PROBES + 1)
    assert buckets.take(newcomer, 5, 1.0, 1060.0) == (False, 0.0)
    assert buckets.take(newcomer, 5, 1.0, 1000.0 + 3600) == (True, 4.0)


def test_sqlite_emptying_forgets_what_was_pushed_out_too(tmp_path):
    buckets, other = table(tmp_path / "buckets"), table(tmp_path / "buckets")
    drained = ("register:addr:192.0.2.1", 1, 1 / 3600)
    assert buckets.take_all([drained], 1000.0) == (True, [0.0])
    *flood, newcomer = colliding(buckets, drained[0], PROBES + 1)
    for key in flood:  # the last one pushes the drained bucket out
        buckets.take(key, 100, 10.0, 1001.0)
    assert buckets.take(newcomer, 5, 1.0, 1060.0) == (False, 0.0)
    generation = buckets.generation()
    other.empty()
    # Every newcomer starts full again, even one probing from where the drained
    # bucket was pushed out; the credential generation stays as it was.
    assert buckets.take(newcomer, 5, 1.0, 1060.0) == (True, 4.0)
    assert buckets.take_all([drained], 1060.0) == (True, [0.0])
    assert buckets.generation() == generation


def test_sqlite_buckets_threads_of_one_process_never_overspend(tmp_path):
    # flock is per open file, so threads sharing it need their own lock.
    buckets = table(tmp_path / "buckets")
    granted = []

    def spend():
        for _ in range(2000):
            granted.append(buckets.take("shared", 16000, 1e-9, 5000.0)[0])

    threads = [threading.Thread(target=spend) for _ in range(8)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, to open any race window
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
    finally:
        sys.setswitchinterval(interval)
    # Every take was granted; a lost update would have left tokens behind.
    assert granted == [True] * 16000
    assert buckets.take("shared", 16000, 1e-9, 5000.0) == (False, 0.0)


# -- a damaged or unusable bucket file ----------------------------------------------


def garbage(path, size: int) -> None:
    """Overwrite the file in place with bytes that decode as NaN everywhere."""
    with open(path, "r+b" if os.path.exists(path) else "wb") as file:
        file.write(b"\xff" * size)


def spend(buckets: SharedBuckets, count: int) -> list[bool]:
    return [buckets.take("k", 2, 1e-6, 100.0)[0] for _ in range(count)]


def test_sqlite_garbage_bucket_file_is_rebuilt_at_open_and_limits(tmp_path, caplog):
    path = tmp_path / "refapi.db.buckets"
    garbage(path, 600_000)  # left so by a crash or a stray write, before a start
    with caplog.at_level(logging.WARNING, logger="refapi"):
        assert spend(table(path), 3) == [True, True, False]
    [record] = caplog.records
    assert str(path) in record.getMessage() and "rebuilt" in record.getMessage()


def test_sqlite_bucket_file_overwritten_while_in_use_is_rebuilt_once(tmp_path, caplog):
    path = str(tmp_path / "refapi.db.buckets")
    one, two = table(path), table(path)  # two workers
    assert spend(one, 3) == [True, True, False]
    garbage(path, os.path.getsize(path))
    with caplog.at_level(logging.WARNING, logger="refapi"):
        assert spend(one, 1) + spend(two, 2) == [True, True, False]
    assert len(caplog.records) == 1  # logged once, by the worker that rebuilt it


def test_sqlite_bucket_file_truncated_while_in_use_never_kills_the_process(tmp_path):
    # Touching a mapped page past the end of a truncated file is SIGBUS, which no
    # Python code can catch: so the check runs in a child, and its fate is the test.
    script = f"""
import os
from refapi.storage.sqlite.buckets import SharedBuckets
buckets = SharedBuckets({str(tmp_path / "b")!r}, lambda: b"k")
print(buckets.take("k", 2, 1e-6, 100.0))
os.truncate({str(tmp_path / "b")!r}, 0)
print(buckets.take("k", 2, 1e-6, 100.0))
"""
    child = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.splitlines() == ["(True, 1.0)", "(True, 1.0)"]


def test_the_credential_generation_is_never_read_half_written(tmp_path):
    """A worker reads the number without the file's lock while another bumps it:
    every read is a number some bump left, so it never goes back (it went back
    to 0 thousands of times a second when the bump wrote it byte by byte)."""
    path = str(tmp_path / "refapi.db.buckets")
    reader = table(path)
    start = reader.generation()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the bumping worker: 50,000 changes to credentials
        try:
            bumper = table(path)
            os.write(write, b"go")
            for _ in range(50_000):
                bumper.bump()
        finally:
            os._exit(0)
    os.close(write)
    assert os.read(read, 2) == b"go"
    seen, backwards = start, 0
    while os.waitpid(child, os.WNOHANG) == (0, 0):
        now = reader.generation()
        backwards += now < seen
        seen = now
    os.close(read)
    assert backwards == 0
    assert reader.generation() == start + 50_000


def test_the_generation_reads_a_renamed_folders_file_by_its_new_name(tmp_path):
    """The data folder renamed and a symbolic link left at its old name (a
    "current" link to a release): the path still reaches the file, whose new name
    is read from then on, so a read stays one readlink, not a readlink and a stat
    (storage/sqlite/buckets.py, ``generation``)."""
    folder = tmp_path / "data"
    folder.mkdir()
    buckets = table(folder / "refapi.db.buckets")
    number = buckets.generation()
    os.rename(folder, tmp_path / "data.v2")
    os.symlink(tmp_path / "data.v2", folder)
    assert buckets.generation() == number
    assert buckets._named is not None
    assert buckets._named[1] == str(tmp_path / "data.v2" / "refapi.db.buckets")


MOUNTED_OVER = """
import subprocess, sys, time
from refapi.storage.sqlite.buckets import RECHECK_S, SharedBuckets
folder = sys.argv[1]
path = folder + "/refapi.db.buckets"
worker = SharedBuckets(path, lambda: b"k")
number = worker.generation()
seen = (worker.opened, number)  # the file opened, and its number
SharedBuckets(folder + "/other.buckets", lambda: b"k").generation()
subprocess.run(["mount", "--bind", folder + "/other.buckets", path], check=True)
SharedBuckets(path, lambda: b"k").bump()  # another worker's revocation
time.sleep(RECHECK_S)
number = worker.generation()
print((worker.opened, number) != seen)
"""


def test_a_file_mounted_over_the_bucket_file_is_read_within_a_second(tmp_path):
    """A mount renames nothing, so the open file's name says nothing of it: the
    path's file is compared by a stat at least once a second, and a worker then
    reads the number another moved in the file now at the path."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        skip_or_fail("root and unshare (util-linux) are needed to mount a file")
    done = subprocess.run(
        ["unshare", "-m", sys.executable, "-c", MOUNTED_OVER, str(tmp_path)],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"]
