-- Payments and the idempotency keys that guard their creation. A key record and its
-- payment are written in one transaction; the stored status and body are replayed
-- byte for byte for a repeated request.
CREATE TABLE payments (
    id         TEXT PRIMARY KEY,
    amount     TEXT NOT NULL,  -- exact decimal text, never a binary float
    currency   TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE idempotency_keys (
    scope       TEXT NOT NULL,  -- the caller: a credential, else the client address
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL,  -- SHA-256 of the canonical JSON of the request body
    status      INTEGER NOT NULL,
    body        BLOB NOT NULL,
    payment_id  TEXT NOT NULL REFERENCES payments (id),
    created     REAL NOT NULL,  -- epoch seconds; kept for 24 hours
    PRIMARY KEY (scope, key)
);

CREATE INDEX idempotency_keys_created ON idempotency_keys (created);
