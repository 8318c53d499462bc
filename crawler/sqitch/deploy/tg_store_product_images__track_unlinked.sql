-- Deploy taskpool_crawler:tg_store_product_images__track_unlinked to pg
-- requires: product_image_urls_unlinked_at

BEGIN;
SET client_min_messages = 'warning';

-- tg_store_product_images__track_unlinked
-- Marks the image URLs a statement on store_product_images left without a product (unlinked_at), and clears the mark of those it linked.
CREATE FUNCTION tg_store_product_images__track_unlinked()
RETURNS trigger
LANGUAGE plpgsql
AS $$
-- Once a statement, with its transition tables: link_product_images changes a menu's links in
-- three statements, and a store's removal cascades into one, so the marks cost a few index
-- lookups a menu, not a write a row. A URL linked again clears its mark only when it has one,
-- which keeps a menu whose images did not change from writing product_image_urls at all.
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE product_image_urls u
        SET unlinked_at = NULL
        FROM (SELECT DISTINCT n.image_url FROM new_links n) n
        WHERE u.image_url = n.image_url AND u.unlinked_at IS NOT NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE product_image_urls u
        SET unlinked_at = taskpool_now()
        FROM (SELECT DISTINCT o.image_url FROM old_links o) o
        WHERE u.image_url = o.image_url AND u.unlinked_at IS NULL
          AND NOT EXISTS (SELECT FROM store_product_images l WHERE l.image_url = u.image_url);
    END IF;
    RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION tg_store_product_images__track_unlinked() FROM PUBLIC;

CREATE TRIGGER _800_track_linked_urls
    AFTER INSERT ON store_product_images
    REFERENCING NEW TABLE AS new_links
    FOR EACH STATEMENT EXECUTE FUNCTION tg_store_product_images__track_unlinked();
CREATE TRIGGER _800_track_relinked_urls
    AFTER UPDATE ON store_product_images
    REFERENCING OLD TABLE AS old_links NEW TABLE AS new_links
    FOR EACH STATEMENT EXECUTE FUNCTION tg_store_product_images__track_unlinked();
CREATE TRIGGER _800_track_unlinked_urls
    AFTER DELETE ON store_product_images
    REFERENCING OLD TABLE AS old_links
    FOR EACH STATEMENT EXECUTE FUNCTION tg_store_product_images__track_unlinked();

COMMIT;
