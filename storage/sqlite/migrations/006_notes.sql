-- The demo endpoint's notes (`/api/demo.php`). Ids are never reused (AUTOINCREMENT),
-- so a deleted note stays 404 and a cursor never lands on another note.
-- (Numbered 006: a database already at 005 must still get it.)
CREATE TABLE notes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    text       TEXT NOT NULL,
    created_at TEXT NOT NULL
);
