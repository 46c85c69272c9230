-- The credential generation (docs/authentication.md, "Remembered credentials"): one
-- row, moved in the transaction of every change to a credential (a logout, a key or
-- client deleted, a user changed or deleted) and read back by every bucket take, so
-- a worker learns whether what it remembers of a credential still holds with no
-- round trip of its own.
-- One row at most (the key can only be true); without it, nothing is remembered.
CREATE TABLE credential_generation (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    value bigint NOT NULL
);
INSERT INTO credential_generation (value) VALUES (0);
