-- Who created an article: the principal of the request that posted it, a user or
-- an OAuth client (ids of both are never reused, so an author cannot be inherited
-- by a later account). Both columns are null for the articles stored before this
-- migration, which only an admin may change.
ALTER TABLE articles ADD COLUMN author_type TEXT CHECK (author_type IN ('user', 'client'));
ALTER TABLE articles ADD COLUMN author_id INTEGER
    CHECK ((author_id IS NULL) = (author_type IS NULL));
