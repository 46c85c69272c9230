-- Payments, each with the idempotency key that created it. One row holds both, so
-- the key record and the payment are written by one INSERT, atomically, and a
-- concurrent request with the same key meets the UNIQUE index and replays.
--
-- Ids are time-ordered ("pay_" + 14 hex digits of microseconds + 20 random hex), so
-- new rows append to the primary key's B-tree instead of splitting pages at random,
-- and "keys older than 24 hours" is a range of the primary key.
CREATE TABLE payments (
    id              TEXT PRIMARY KEY,
    amount          TEXT NOT NULL,  -- exact decimal text, never a binary float
    currency        TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    scope           TEXT NOT NULL,  -- the caller: a credential, else the client address
    idempotency_key TEXT,           -- NULL once the key has expired (24 hours)
    fingerprint     TEXT NOT NULL,  -- SHA-256 of the canonical JSON of the request body
    status          INTEGER NOT NULL,
    body            BLOB NOT NULL,  -- the first answer, replayed byte for byte
    created         REAL NOT NULL,  -- epoch seconds
    UNIQUE (scope, idempotency_key)
) WITHOUT ROWID;
