"""Concurrent calls on several stores, for the contract suites' races."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from refapi.storage import Store


def race(stores: list[Store], count: int, call) -> list:
    """Run ``call(store, n)`` for n in range(count), each in a thread of its own
    released at one barrier, the threads taking the stores in turn; each one's
    result, or the exception it raised. Each store has served a call before, so
    the race is in the data, not in a store's first opening of its connections
    (tests/storage/test_postgres_store.py races those)."""
    for store in stores:
        store.reset_epoch()
    start = threading.Barrier(count)

    def run(n: int):
        start.wait()
        try:
            return call(stores[n % len(stores)], n)
        except Exception as exc:  # a result like another, for the caller to judge
            return exc

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))
