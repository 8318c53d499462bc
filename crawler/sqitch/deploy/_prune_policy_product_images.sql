-- Deploy taskpool_crawler:_prune_policy_product_images to pg
-- requires: tg_store_product_images__track_unlinked
-- requires: payload_file_removals_image_files
-- requires: crawler_retention

BEGIN;
SET client_min_messages = 'warning';

-- _prune_policy_product_images
-- The product_images policy's pruner: image URLs no product has shown for longer than the policy's keep, and the stored images only they named (their files queued for removal).
CREATE FUNCTION _prune_policy_product_images(policy retention_policies, max_rows integer, dry_run boolean)
RETURNS bigint
LANGUAGE plpgsql
AS $$
-- Counts URLs, the rows a batch is made of. A URL shown again before its keep is over is
-- linked again (its mark cleared) and stays; one shown again after is a new URL, downloaded
-- once more. An image another URL still names stays: two URLs serving the same bytes share it.
-- The image's file goes the way a payload's does, through payload_file_removals and a
-- payload_file_removal task, after its row: a crash in between leaves a row that the next task
-- finishes, never a row without its file.
DECLARE
    v_cutoff timestamptz := taskpool_now() - policy.keep;
    v_count  bigint;
    v_images text[];
    v_files  bigint;
BEGIN
    IF dry_run THEN
        RETURN (SELECT count(*) FROM product_image_urls u
                WHERE u.unlinked_at < v_cutoff
                  AND NOT EXISTS (SELECT FROM store_product_images l WHERE l.image_url = u.image_url));
    END IF;
    WITH doomed AS (
        SELECT u.image_url
        FROM product_image_urls u
        WHERE u.unlinked_at < v_cutoff
          AND NOT EXISTS (SELECT FROM store_product_images l WHERE l.image_url = u.image_url)
        ORDER BY u.unlinked_at
        LIMIT max_rows
        FOR UPDATE SKIP LOCKED
    ),
    gone AS (
        DELETE FROM product_image_urls u USING doomed d WHERE u.image_url = d.image_url
        RETURNING u.image_sha256
    )
    SELECT count(*), array_agg(DISTINCT g.image_sha256) FILTER (WHERE g.image_sha256 IS NOT NULL)
    INTO v_count, v_images
    FROM gone g;

    IF v_images IS NOT NULL THEN
        WITH orphaned AS (
            DELETE FROM product_images i
            WHERE i.sha256 = ANY (v_images)
              AND NOT EXISTS (SELECT FROM product_image_urls o WHERE o.image_sha256 = i.sha256)
            RETURNING i.storage_key
        )
        INSERT INTO payload_file_removals (storage_path, payload_id)
        SELECT o.storage_key, NULL FROM orphaned o
        ON CONFLICT (storage_path) DO NOTHING;
        GET DIAGNOSTICS v_files = ROW_COUNT;
        IF v_files > 0 THEN
            PERFORM enqueue_task('payload_file_removal', dedupe_key := 'payload_file_removal');
        END IF;
    END IF;
    RETURN v_count;
END;
$$;

REVOKE ALL ON FUNCTION _prune_policy_product_images(retention_policies, integer, boolean) FROM PUBLIC;

-- Three months: a product away from every menu for a season is gone for good, and its image
-- with it; one back sooner keeps its image.
INSERT INTO retention_policies (name, pruner, keep, batch_size, description) VALUES
    ('product_images', '_prune_policy_product_images', interval '90 days', 1000,
     'image URLs no product has shown for the keep (by unlinked_at), and the stored images only they named '
     '(their files removed by a payload_file_removal task)')
ON CONFLICT (name) DO NOTHING;

COMMIT;
