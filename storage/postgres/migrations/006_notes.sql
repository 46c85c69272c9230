-- The demo endpoint's notes; ids are never reused.
CREATE TABLE notes (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    text       text NOT NULL,
    created_at text NOT NULL
);
