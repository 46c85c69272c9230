-- PostgreSQL's 011 makes the credential generation's table; SQLite keeps the number
-- in the bucket file's shared memory (storage/sqlite/buckets.py), so here the number
-- is taken and nothing changes: both dialects count the same migrations.
SELECT 1;
