-- Verify taskpool:dispensaries_crawler_columns on pg

BEGIN;

SELECT platform_dispensary_id, menu_url, city, first_seen_at, last_crawled_at
FROM dispensaries
WHERE FALSE;

SELECT 1/COUNT(*) FROM pg_catalog.pg_constraint
WHERE conrelid = 'dispensaries'::regclass AND conname = 'dispensaries_one_per_platform_id' AND contype = 'u';

ROLLBACK;
