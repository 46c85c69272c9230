-- Users and every credential that speaks for one (docs/authentication.md).
-- Secrets are random, so only their SHA-256 is stored and a lookup is one seek of
-- a unique index; passwords, chosen by people, get a salted slow hash instead.
CREATE TABLE users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never reused
    email         TEXT NOT NULL,
    email_key     TEXT NOT NULL UNIQUE,  -- the email folded: unique without case
    password_hash TEXT NOT NULL,
    first_name    TEXT NOT NULL DEFAULT '',
    last_name     TEXT NOT NULL DEFAULT '',
    role          TEXT NOT NULL CHECK (role IN ('user', 'admin')),
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);

-- Bearer tokens and session cookies. A login makes one of each with the same
-- `login`, so logging out (either way) ends both; a client-credentials token has a
-- client instead of a user.
CREATE TABLE tokens (
    hash      TEXT PRIMARY KEY,
    kind      TEXT NOT NULL CHECK (kind IN ('bearer', 'session')),
    login     TEXT NOT NULL,
    user_id   INTEGER REFERENCES users (id) ON DELETE CASCADE,
    client_id INTEGER REFERENCES oauth_clients (id) ON DELETE CASCADE,
    expires   REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX tokens_by_login ON tokens (login);
CREATE INDEX tokens_by_expiry ON tokens (expires);

CREATE TABLE api_keys (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    hash       TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);

CREATE TABLE oauth_clients (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL,
    client_id   TEXT NOT NULL UNIQUE,
    secret_hash TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

-- Failed logins of the last minute, per account and per client address.
CREATE TABLE login_failures (
    key TEXT NOT NULL,
    at  REAL NOT NULL
);
CREATE INDEX login_failures_by_key ON login_failures (key, at);
