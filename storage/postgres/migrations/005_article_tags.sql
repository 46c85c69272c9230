-- An index of the articles' tags, so `GET /v1/articles?tag=x` seeks (tag, id) in id
-- order. A trigger keeps it in step with the `tags` column in the statement that
-- writes the article, as SQLite's triggers do. Tags compare exactly ("C" collation:
-- byte order, "a" is not "A").
CREATE TABLE article_tags (
    tag        text COLLATE "C" NOT NULL,
    article_id bigint NOT NULL,
    PRIMARY KEY (tag, article_id)
);
CREATE INDEX article_tags_by_article ON article_tags (article_id);

CREATE FUNCTION article_tags_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM article_tags WHERE article_id = OLD.id;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO article_tags (tag, article_id)
            SELECT DISTINCT value, NEW.id FROM json_array_elements_text(NEW.tags::json)
            ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER article_tags_insert AFTER INSERT ON articles
    FOR EACH ROW EXECUTE FUNCTION article_tags_sync();
CREATE TRIGGER article_tags_update AFTER UPDATE OF tags ON articles
    FOR EACH ROW WHEN (OLD.tags IS DISTINCT FROM NEW.tags)
    EXECUTE FUNCTION article_tags_sync();
CREATE TRIGGER article_tags_delete AFTER DELETE ON articles
    FOR EACH ROW EXECUTE FUNCTION article_tags_sync();
