"""What the lab's report card asks of storage (docs/lab.md, "A report card for
clients"): runs that every worker and every host sees, each with a small state
per check. The SQL is ``grades.py``'s; this holds only the contract, so that
``base.py`` can name it without importing the SQL."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
State = dict[str, Any]  # a check's own JSON object


@dataclass(frozen=True)
class GradeRun:
    id: str
    seed: int
    apart: dict[str, str]  # each check that does not apply to the run: why
    starter: str  # a hash of the address that started it
    created: float  # epoch seconds
    states: dict[str, State]  # each check's state, by its name: those begun


class GradeRunsFull(Exception):
    """As many runs as may be kept are live, the host's or (``mine``) those of the
    run's starter: the next one may start when the oldest of them expires,
    ``retry_after`` seconds from now."""

    def __init__(self, retry_after: int, mine: bool = False) -> None:
        super().__init__(f"no room for another run for {retry_after} s")
        self.retry_after, self.mine = retry_after, mine


class GradeStore(Protocol):
    def start_grade_run(
        self, run: GradeRun, *, lifetime: float, most: int, most_each: int
    ) -> None:
        """Keep ``run`` (its ``created`` is now) after dropping the runs older than
        ``lifetime`` seconds; ``GradeRunsFull`` when ``most`` live runs are kept,
        or ``most_each`` of its starter's."""

    def grade_run(self, run_id: str, now: float, lifetime: float) -> GradeRun | None:
        """The run and its checks' states; None if unknown or expired."""

    def grade_step(
        self,
        run_id: str,
        check: str,
        now: float,
        lifetime: float,
        step: Callable[[GradeRun, State | None], tuple[State, T]],
    ) -> T | None:
        """One request of a check, atomic across workers and hosts: ``step`` reads
        the run and the check's state so far (None at first) and gives the new
        state and what to answer, which is returned; None if the run is unknown or
        expired (``step`` is not called)."""
