-- An index of the articles' tags, so `GET /v1/articles?tag=x` seeks (tag, id) in
-- id order instead of reading every article's JSON. Triggers keep it in step with
-- the `tags` column inside the statement that writes the article, so whichever
-- code writes an article, the index changes in the same transaction or not at all.
-- (Numbered 005 on its own: it depends on 001 only.)
CREATE TABLE article_tags (
    tag        TEXT NOT NULL,     -- compared exactly (BINARY): "a" is not "A"
    article_id INTEGER NOT NULL,
    PRIMARY KEY (tag, article_id)
) WITHOUT ROWID;
-- The triggers find an article's entries by id when it changes or goes.
CREATE INDEX article_tags_by_article ON article_tags (article_id);

CREATE TRIGGER article_tags_insert AFTER INSERT ON articles BEGIN
    INSERT OR IGNORE INTO article_tags (tag, article_id)
        SELECT value, NEW.id FROM json_each(NEW.tags);
END;

CREATE TRIGGER article_tags_update AFTER UPDATE OF tags ON articles
    WHEN OLD.tags IS NOT NEW.tags
BEGIN
    DELETE FROM article_tags WHERE article_id = OLD.id;
    INSERT OR IGNORE INTO article_tags (tag, article_id)
        SELECT value, NEW.id FROM json_each(NEW.tags);
END;

CREATE TRIGGER article_tags_delete AFTER DELETE ON articles BEGIN
    DELETE FROM article_tags WHERE article_id = OLD.id;
END;

-- The articles stored before this migration.
INSERT OR IGNORE INTO article_tags (tag, article_id)
    SELECT tags.value, articles.id FROM articles, json_each(articles.tags) AS tags;
