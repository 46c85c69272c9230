"""``refapi backup`` while gunicorn serves writes (docs/operating.md, "Backups and
restore"): the copy is the database as it stood when the backup began, every write
acknowledged before then in it, and it serves once put in place; what a restore
loses is what was written after the copy, whose ids are given out again."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from tests.e2e.harness import ROOT, wait_until
from tests.faults import restore

pytestmark = pytest.mark.e2e


def test_a_backup_while_writing_holds_every_write_acknowledged_before_it(
    gunicorn, pool, tmp_path
):
    server = gunicorn(workers=2)
    acknowledged: list[tuple[float, int]] = []  # (when the 201 came, the id)
    refused: list[int] = []
    stop = threading.Event()

    def writer(name: str) -> None:
        for n in range(100_000):
            if stop.is_set():
                return
            response = pool.request(
                "POST", server.url("/v1/articles"), json={"title": f"{name}-{n}"}
            )
            if response.status != 201:
                refused.append(response.status)
                return
            acknowledged.append((time.monotonic(), response.json()["id"]))

    threads = [threading.Thread(target=writer, args=(f"w{i}",)) for i in range(3)]
    for thread in threads:
        thread.start()
    copy = tmp_path / "backup.db"
    try:
        wait_until(lambda: len(acknowledged) >= 50 or refused, 30, "50 writes")
        began = time.monotonic()
        env = {k: v for k, v in os.environ.items() if not k.startswith("REFAPI_")}
        done = subprocess.run(
            [sys.executable, "-m", "refapi", "backup", str(copy)], cwd=ROOT,
            env={**env, "DATABASE_URL": f"sqlite:///{server.db_path}"},
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        count = len(acknowledged)
        wait_until(lambda: len(acknowledged) >= count + 50 or refused, 30, "more")
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    assert refused == []

    before = {article for at, article in acknowledged if at < began}
    with contextlib.closing(sqlite3.connect(copy)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        held = [row[0] for row in conn.execute("SELECT id FROM articles ORDER BY id")]
    # One moment of the database: every write before it, none after, so the ids
    # are one run from the first (none deleted here), and every one acknowledged
    # before the backup began is in it.
    assert held == list(range(1, len(held) + 1))
    assert before <= set(held)
    after = sorted(article for _, article in acknowledged if article not in held)
    assert after, "writes went on after the copy"

    # Put in place while serving: the copy is served, the later writes are gone,
    # and the next article takes the id the first lost one had.
    restore(copy, server.db_path)

    def restored() -> bool:
        return pool.request("GET", server.url(f"/v1/articles/{after[0]}")).status == 404

    wait_until(restored, 10, "the restored copy to be served")
    assert pool.request("GET", server.url(f"/v1/articles/{held[-1]}")).status == 200
    made = pool.request("POST", server.url("/v1/articles"), json={"title": "again"})
    assert made.status == 201 and made.json()["id"] == after[0] == held[-1] + 1
    assert server.log_failures() == []
