-- The core resources. Ids of articles are never reused (AUTOINCREMENT), so a deleted
-- article's URL stays 404 and a cursor never lands on a different record.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE articles (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    title      TEXT NOT NULL,
    tags       TEXT NOT NULL DEFAULT '[]',  -- a JSON array of strings
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE todos (
    id        INTEGER PRIMARY KEY,
    user_id   INTEGER NOT NULL,
    title     TEXT NOT NULL,
    completed INTEGER NOT NULL CHECK (completed IN (0, 1))
);

CREATE TABLE items (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at TEXT NOT NULL
);
