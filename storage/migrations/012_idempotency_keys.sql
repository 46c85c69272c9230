-- The idempotency keys of the creates whose record takes its id from the database
-- (articles, demo notes); a payment keeps its key in its own row (002), its id being
-- made before it is stored. A key names one request of one caller on one route, so
-- it is unique per (owner, method, route, key): the create's transaction claims it
-- with an insert first, then writes the record and stores the answer here before
-- it commits, so a concurrent request with the key waits on the claim and then
-- replays the answer (docs/api.md, "Idempotent creates").
CREATE TABLE idempotency_keys (
    owner       TEXT NOT NULL,  -- the caller: user:7, client:2, addr:192.0.2.1
    method      TEXT NOT NULL,
    route       TEXT NOT NULL,  -- the route's template: /v1/articles
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL,  -- SHA-256 of the canonical JSON of the request body
    -- The first answer, replayed byte for byte, and the id of what it made: set by
    -- the transaction that claims the key, before it commits (no other sees them
    -- unset).
    status      INTEGER,
    body        TEXT,
    resource_id TEXT,
    -- A demo note's key goes with the note, so keys never outnumber the notes kept.
    note_id     BIGINT REFERENCES notes (id) ON DELETE CASCADE,
    created     DOUBLE PRECISION NOT NULL,  -- epoch seconds; kept 24 hours
    PRIMARY KEY (owner, method, route, key)
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created);
CREATE INDEX idempotency_keys_by_note ON idempotency_keys (note_id)
    WHERE note_id IS NOT NULL;
