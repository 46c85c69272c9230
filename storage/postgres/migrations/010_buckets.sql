-- The rate limiter's token buckets (docs/several-hosts.md, "Rate limits"), one row a
-- caller and policy, shared by every host. UNLOGGED: no WAL, so a take costs no
-- disk write; a crash of PostgreSQL or a failover to a standby empties the table,
-- and every caller starts again with a full bucket. Times are the database's clock,
-- never a host's. No index but the key's, so an update is HOT.
CREATE UNLOGGED TABLE buckets (
    key     text PRIMARY KEY,
    tokens  double precision NOT NULL,
    stamp   double precision NOT NULL,  -- epoch seconds of the last take
    full_at double precision NOT NULL,  -- when it will be full again: then purged
    taken   boolean NOT NULL            -- whether the last take got a token
);
