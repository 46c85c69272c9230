-- PostgreSQL's 010 makes the rate limiter's table; SQLite keeps its buckets in a
-- memory-mapped file beside the database (storage/sqlite/buckets.py), so here the
-- number is taken and nothing changes: both dialects count the same migrations.
SELECT 1;
