"""The lab's report card runs in SQL, written once for every dialect (migration
013; the contract is ``grade_runs.py``'s).

A run's checks are stepped one request at a time, each step in one transaction
that holds the run's row (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: ``FOR
UPDATE``), so two workers answering one client at once see each other's steps in
turn and neither loses the other's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from .dialect import Queries, Tx
from .grade_runs import GradeRun, GradeRunsFull, State, T

RUN = "SELECT id, seed, apart, starter, created FROM lab_grade_runs WHERE id = ?"


class GradeRuns(Queries):
    def start_grade_run(
        self, run: GradeRun, *, lifetime: float, most: int, most_each: int
    ) -> None:
        with self.dialect.transaction() as tx:
            # Starts one at a time, so two cannot both take the last room.
            self.dialect.lock_table(tx, "lab_grade_runs")
            tx.run(
                "DELETE FROM lab_grade_runs WHERE created < ?",
                (run.created - lifetime,),
            )
            for mine, where, args in (
                (True, " WHERE starter = ?", (run.starter,)),
                (False, "", ()),
            ):
                kept, oldest = tx.one(
                    "SELECT count(*), min(created) FROM lab_grade_runs" + where, args
                )
                if kept >= (most_each if mine else most):
                    # The oldest goes once it is over ``lifetime`` old, not at it.
                    left = oldest + lifetime - run.created
                    raise GradeRunsFull(max(1, math.floor(left) + 1), mine)
            tx.run(
                "INSERT INTO lab_grade_runs (id, seed, apart, starter, created)"
                " VALUES (?, ?, ?, ?, ?)",
                (run.id, run.seed, json.dumps(run.apart), run.starter, run.created),
            )

    def grade_run(self, run_id: str, now: float, lifetime: float) -> GradeRun | None:
        with self.dialect.transaction() as tx:
            return self._run(tx, run_id, now, lifetime, "")

    def grade_step(
        self,
        run_id: str,
        check: str,
        now: float,
        lifetime: float,
        step: Callable[[GradeRun, State | None], tuple[State, T]],
    ) -> T | None:
        with self.dialect.transaction() as tx:
            run = self._run(tx, run_id, now, lifetime, self.dialect.for_update)
            if run is None:
                return None
            state, answer = step(run, run.states.get(check))
            tx.run(
                "INSERT INTO lab_grade_checks (run, name, state) VALUES (?, ?, ?)"
                " ON CONFLICT (run, name) DO UPDATE SET state = excluded.state",
                (run_id, check, json.dumps(state)),
            )
            return answer

    def _run(
        self, tx: Tx, run_id: str, now: float, lifetime: float, lock: str
    ) -> GradeRun | None:
        row: Any = tx.one(RUN + lock, (run_id,))
        if row is None or row[4] < now - lifetime:
            return None
        states = tx.all(
            "SELECT name, state FROM lab_grade_checks WHERE run = ?", (run_id,)
        )
        return GradeRun(
            id=row[0],
            seed=row[1],
            apart=json.loads(row[2]),
            starter=row[3],
            created=row[4],
            states={name: json.loads(state) for name, state in states},
        )
