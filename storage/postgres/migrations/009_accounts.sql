-- Login attempts counted atomically (docs/authentication.md, "Login failures"): a
-- counter a key, incremented and read by one INSERT ... ON CONFLICT DO UPDATE ...
-- RETURNING, shared by every worker of every host.
DROP TABLE login_failures;
CREATE TABLE login_attempts (
    key     text PRIMARY KEY,
    started double precision NOT NULL,  -- the first attempt of this counter's minute
    count   integer NOT NULL
);
CREATE INDEX login_attempts_by_age ON login_attempts (started);
