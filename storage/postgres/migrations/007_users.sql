-- Users and every credential that speaks for one (docs/authentication.md), as
-- SQLite's 007: secrets stored as their SHA-256, passwords as a salted slow hash.
CREATE TABLE users (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email         text NOT NULL,
    email_key     text NOT NULL UNIQUE,  -- the email folded: unique without case
    password_hash text NOT NULL,
    first_name    text NOT NULL DEFAULT '',
    last_name     text NOT NULL DEFAULT '',
    role          text NOT NULL CHECK (role IN ('user', 'admin')),
    created_at    text NOT NULL,
    updated_at    text NOT NULL
);

CREATE TABLE oauth_clients (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL,
    client_id   text NOT NULL UNIQUE,
    secret_hash text NOT NULL,
    created_at  text NOT NULL
);

CREATE TABLE tokens (
    hash      text PRIMARY KEY,
    kind      text NOT NULL CHECK (kind IN ('bearer', 'session')),
    login     text NOT NULL,
    user_id   bigint REFERENCES users (id) ON DELETE CASCADE,
    client_id bigint REFERENCES oauth_clients (id) ON DELETE CASCADE,
    expires   double precision NOT NULL
);
CREATE INDEX tokens_by_login ON tokens (login);
CREATE INDEX tokens_by_expiry ON tokens (expires);
CREATE INDEX tokens_by_user ON tokens (user_id);  -- the cascade from a user
CREATE INDEX tokens_by_client ON tokens (client_id);  -- and from a client

CREATE TABLE api_keys (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL,
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    hash       text NOT NULL UNIQUE,
    created_at text NOT NULL
);
CREATE INDEX api_keys_by_user ON api_keys (user_id);

CREATE TABLE login_failures (
    key text NOT NULL,
    at  double precision NOT NULL
);
CREATE INDEX login_failures_by_key ON login_failures (key, at);
