-- Revert taskpool:dispensaries_crawler_columns from pg

BEGIN;

ALTER TABLE dispensaries
    DROP CONSTRAINT dispensaries_platform_id_needs_platform,
    DROP CONSTRAINT dispensaries_one_per_menu_url,
    DROP CONSTRAINT dispensaries_one_per_platform_id,
    DROP COLUMN last_crawled_at,
    DROP COLUMN first_seen_at,
    DROP COLUMN city,
    DROP COLUMN menu_url,
    DROP COLUMN platform_dispensary_id;

COMMIT;
