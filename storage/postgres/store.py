"""PostgreSQL backend (being written: issue 16, part 2)."""

from __future__ import annotations


class PostgresStore:
    def __init__(
        self,
        url: str,
        *,
        pool_max: int = 2,
        pool_timeout: float = 5.0,
        statement_timeout: float = 5.0,
    ) -> None:
        raise NotImplementedError("the PostgreSQL store is being written")
