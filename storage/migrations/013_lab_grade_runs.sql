-- The lab's report cards (docs/lab.md, "A report card for clients"): a run, and what
-- each of its checks has seen so far. Runs are short-lived (an hour) and few (at
-- most 100 kept, 5 of them an address's); every worker and every host reads the same rows, so a client's
-- requests may land on any of them. No credential or cookie value is kept: a
-- check's state says what was present, never what it said.
CREATE TABLE lab_grade_runs (
    id      TEXT PRIMARY KEY,  -- 32 hex digits: 128 random bits
    seed    BIGINT NOT NULL,   -- what the run's bodies, tags and cookies are made from
    -- A JSON object: each check that does not apply to the run, with why, settled
    -- when it starts (its skip, the service's second origin), so every host scores
    -- it alike.
    apart   TEXT NOT NULL,
    starter TEXT NOT NULL,     -- a hash of the address that started it
    created DOUBLE PRECISION NOT NULL  -- epoch seconds; kept an hour
);
CREATE INDEX lab_grade_runs_by_age ON lab_grade_runs (created);
CREATE INDEX lab_grade_runs_by_starter ON lab_grade_runs (starter, created);
CREATE TABLE lab_grade_checks (
    run   TEXT NOT NULL REFERENCES lab_grade_runs (id) ON DELETE CASCADE,
    name  TEXT NOT NULL,  -- the check: see-other, resume, ...
    state TEXT NOT NULL,  -- a JSON object, the check's own (lab/grade)
    PRIMARY KEY (run, name)
);
