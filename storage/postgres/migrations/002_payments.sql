-- Payments, each with the idempotency key that created it, in one row: the key is
-- claimed by the INSERT that stores the payment and its answer, committed as one
-- statement, so there is never a claim without its outcome to wait on or abandon
-- (docs/several-hosts.md, "Idempotency keys").
CREATE TABLE payments (
    id              text PRIMARY KEY,
    amount          text NOT NULL,  -- exact decimal text, never a binary float
    currency        text NOT NULL,
    created_at      text NOT NULL,
    scope           text NOT NULL,  -- the caller the payment belongs to
    idempotency_key text,           -- NULL once the key has expired (24 hours)
    fingerprint     text NOT NULL,  -- SHA-256 of the canonical JSON of the request body
    status          integer NOT NULL,
    body            bytea NOT NULL,  -- the first answer, replayed byte for byte
    created         double precision NOT NULL,  -- epoch seconds
    UNIQUE (scope, idempotency_key)
);
