-- The core resources, as SQLite's 001 (storage/sqlite/migrations/): the same tables,
-- columns and meaning. Times are RFC 3339 text, written by the service, so both
-- backends answer byte for byte alike. Ids of articles are never reused (an identity
-- column's sequence only grows), so a deleted article's URL stays 404.
CREATE TABLE meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

CREATE TABLE articles (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    title      text NOT NULL,
    tags       text NOT NULL DEFAULT '[]',  -- a JSON array of strings, as written
    created_at text NOT NULL,
    updated_at text NOT NULL
);

CREATE TABLE todos (
    id        bigint PRIMARY KEY,
    user_id   bigint NOT NULL,
    title     text NOT NULL,
    completed smallint NOT NULL CHECK (completed IN (0, 1))
);

CREATE TABLE items (
    id         bigint PRIMARY KEY,
    name       text NOT NULL,
    created_at text NOT NULL
);
