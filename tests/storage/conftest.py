"""The storage backends the contract suite runs over.

``open_data(name)``, on each backend in turn, opens a store over the test's data
set ``name``: fresh and seeded at its first opening; the same data at the next,
as another worker would see it. SQLite's data set is a file under the test's
folder; PostgreSQL's a schema of its own on the tests' server (tests/postgres.py),
dropped when the test ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest

from refapi.storage import Store, open_store
from tests.postgres import fresh_schema

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]

OpenData = Callable[[str], Store]


@pytest.fixture(params=BACKENDS)
def open_data(request, tmp_path) -> Iterator[OpenData]:
    opened: list[Store] = []
    urls: dict[str, str] = {}
    with contextlib.ExitStack() as schemas:

        def open_named(name: str) -> Store:
            if name not in urls:
                if request.param == "sqlite":
                    urls[name] = f"sqlite:///{tmp_path / name}.db"
                else:
                    urls[name] = schemas.enter_context(fresh_schema())
            opened.append(open_store(urls[name]))
            return opened[-1]

        try:
            yield open_named
        finally:
            for store in opened:  # before their schemas go
                store.close()
