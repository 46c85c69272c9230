"""The rate limiter's buckets' contract: each behaviour through ``Buckets`` alone,
run over every backend (SQLite's shared-memory table, PostgreSQL's rows)."""

from __future__ import annotations

import time

import pytest

from refapi.storage.base import Buckets
from tests.storage.race import race

NOW = 1_795_000_000.0


@pytest.fixture
def buckets(open_data) -> Buckets:
    """The buckets beside fresh data, on each backend in turn."""
    return open_data("main").buckets


def test_ping_passes_on_fresh_data(buckets):
    buckets.ping()


def test_a_take_takes_from_every_bucket_or_from_none(buckets):
    small, large = ("small", 1, 0.001), ("large", 5, 0.001)
    allowed, left = buckets.take([small, large], NOW)
    assert allowed and left == pytest.approx([0, 4], abs=0.01)
    allowed, left = buckets.take([small, large], NOW)
    assert not allowed
    allowed, left = buckets.take([large], NOW)
    assert allowed and left == pytest.approx([3], abs=0.01)  # none taken above


def test_a_take_of_one_bucket_is_a_take_of_a_list_of_it(open_data):
    """``take_one``, what most requests pass, keeps the same bucket as ``take``,
    for every worker, and refuses an empty one without taking."""
    one, two = open_data("main").buckets, open_data("main").buckets
    bucket = ("one", 3, 0.001)
    assert one.take_one(*bucket, NOW) == (True, pytest.approx(2, abs=0.01))
    assert two.take([bucket], NOW) == (True, [pytest.approx(1, abs=0.01)])
    assert two.take_one(*bucket, NOW) == (True, pytest.approx(0, abs=0.01))
    allowed, left = one.take_one(*bucket, NOW)
    assert not allowed and left == pytest.approx(0, abs=0.01)
    assert one.take([bucket], NOW)[0] is False


def test_buckets_are_shared_by_every_worker(open_data):
    one, two = open_data("main").buckets, open_data("main").buckets
    bucket = ("shared", 2, 0.001)
    assert one.take([bucket], NOW)[0]
    assert two.take([bucket], NOW)[0]
    assert not one.take([bucket], NOW)[0]


def test_a_refused_take_refunds_one_token_in_the_same_step(buckets):
    full, empty = ("full", 5, 0.001), ("empty", 1, 0.001)
    assert buckets.take([full, empty], NOW)[0]
    allowed, _ = buckets.take([empty], NOW, refund=full)
    assert not allowed
    # The refund gave back the token the first take cost: 5 - 1 + 1, then one taken.
    assert buckets.take([full], NOW)[1] == pytest.approx([4], abs=0.01)


@pytest.mark.parametrize("others", [[], [("wide", 1000, 1e-6)]], ids=["one", "two"])
def test_concurrent_takes_give_exactly_the_capacity(open_data, others):
    workers = [open_data("main"), open_data("main")]
    bucket = ("shared", 10, 1e-6)  # nothing refills during the test

    def takes(store, n):
        # Half the takes name the buckets the other way round: still no deadlock.
        buckets = [bucket, *others][:: -1 if n % 2 else 1]
        return [store.buckets.take(buckets, NOW)[0] for _ in range(3)]

    outcomes = race(workers, 12, takes)
    assert all(isinstance(outcome, list) for outcome in outcomes), outcomes
    assert sum(sum(outcome) for outcome in outcomes) == 10


def test_emptying_fills_every_bucket_again_for_every_worker(open_data):
    one, two = open_data("main").buckets, open_data("main").buckets
    drained, other = ("drained", 2, 0.001), ("other", 3, 0.001)
    for allowed in (True, True, False):
        assert one.take([drained], NOW)[0] is allowed
    assert one.take([other], NOW)[0]
    two.empty()
    assert one.take([drained], NOW) == (True, [pytest.approx(1, abs=0.01)])
    assert one.take([other], NOW) == (True, [pytest.approx(2, abs=0.01)])


# -- the clock -------------------------------------------------------------------


def test_a_bucket_refills_on_the_backends_clock(buckets):
    # SQLite refills by `now`, PostgreSQL by the database's clock (hosts whose
    # clocks differ share one rate): with the real time as `now`, both refill in
    # real time. 5 a second: refused for 200 ms, ample between two calls.
    bucket = ("refill", 1, 5.0)
    assert buckets.take([bucket], time.time())[0]
    assert not buckets.take([bucket], time.time())[0]
    deadline = time.monotonic() + 2
    while not buckets.take([bucket], time.time())[0]:
        assert time.monotonic() < deadline, "the bucket never refilled"
        time.sleep(0.01)
