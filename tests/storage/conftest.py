"""The storage backends the contract suite runs over.

``open_data(name)``, on each backend in turn, opens a store over the test's data
set ``name``: fresh and seeded at its first opening; the same data at the next,
as another worker would see it. A backend joins the suite with its name in
``BACKENDS`` and a branch in ``_url``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from refapi.storage import Store, open_store

BACKENDS = ["sqlite"]

OpenData = Callable[[str], Store]


def _url(backend: str, folder: Path, name: str) -> str:
    if backend == "sqlite":
        return f"sqlite:///{folder / name}.db"
    raise ValueError(f"no test data for the backend {backend!r}")


@pytest.fixture(params=BACKENDS)
def open_data(request, tmp_path) -> Iterator[OpenData]:
    opened: list[Store] = []

    def open_named(name: str) -> Store:
        opened.append(open_store(_url(request.param, tmp_path, name)))
        return opened[-1]

    yield open_named
    for store in opened:
        store.close()
