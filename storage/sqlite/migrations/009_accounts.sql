-- Login attempts counted atomically (docs/authentication.md, "Login failures"): one
-- counter a key (an account's email, or a client address), incremented and read in
-- one statement before a password is checked, and decremented when it was right. A
-- counter starts with the first attempt and lasts a minute; rows older than that
-- are purged whatever their key, through the index on their age.
DROP TABLE login_failures;
CREATE TABLE login_attempts (
    key     TEXT PRIMARY KEY,
    started REAL NOT NULL,  -- the first attempt of this counter's minute
    count   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX login_attempts_by_age ON login_attempts (started);
