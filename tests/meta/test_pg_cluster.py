"""The throwaway cluster the fault tests take down (``tests/pg_cluster.py``): it
starts, stops, dies and comes back, and keeps what was committed through all three."""

from __future__ import annotations

import psycopg
import pytest

from tests.pg_cluster import process_alive, throwaway_cluster

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def refused(cluster) -> bool:
    try:
        cluster.connect().close()
    except psycopg.OperationalError:
        return True
    return False


def test_a_throwaway_cluster_stops_dies_and_restarts_keeping_its_commits():
    with throwaway_cluster(max_connections="7") as cluster:
        with cluster.connect() as conn:
            assert conn.execute("SHOW max_connections").fetchone() == ("7",)
            conn.execute("CREATE TABLE kept (n int)")
            conn.execute("INSERT INTO kept VALUES (1)")
        cluster.stop("fast")
        assert not cluster.running() and refused(cluster)
        cluster.start()
        with cluster.connect() as conn:
            conn.execute("INSERT INTO kept VALUES (2)")
            session = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            cluster.kill()  # the session's process goes with the postmaster
            with pytest.raises(psycopg.OperationalError):
                conn.execute("SELECT 1")
        assert not process_alive(session)
        assert not cluster.running() and refused(cluster)
        cluster.start()  # crash recovery replays the WAL
        with cluster.connect() as conn:
            assert conn.execute("SELECT n FROM kept ORDER BY n").fetchall() == [
                (1,),
                (2,),
            ]
        root = cluster.root
    assert not root.exists()
