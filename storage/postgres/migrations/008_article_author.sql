-- Who created an article (a user or an OAuth client); null for the articles stored
-- before this migration, which only an admin may change.
ALTER TABLE articles
    ADD COLUMN author_type text CHECK (author_type IN ('user', 'client')),
    ADD COLUMN author_id bigint,
    ADD CHECK ((author_id IS NULL) = (author_type IS NULL));
