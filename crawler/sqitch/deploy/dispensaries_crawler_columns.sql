-- Deploy taskpool:dispensaries_crawler_columns to pg
-- requires: dispensaries
-- requires: taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- dispensaries_crawler_columns
-- What the crawler knows of a store: its id on the platform (the upsert key), its menu, and when it was seen and crawled.
ALTER TABLE dispensaries
    ADD COLUMN platform_dispensary_id text,
    ADD COLUMN menu_url               text,
    ADD COLUMN city                   text,
    ADD COLUMN first_seen_at          timestamptz NOT NULL DEFAULT taskpool_now(),
    ADD COLUMN last_crawled_at        timestamptz,
    ADD CONSTRAINT dispensaries_one_per_platform_id UNIQUE (platform, platform_dispensary_id),
    ADD CONSTRAINT dispensaries_one_per_menu_url UNIQUE (menu_url),
    -- Without a platform, (platform, platform_dispensary_id) holds a NULL and is unique no more.
    ADD CONSTRAINT dispensaries_platform_id_needs_platform
        CHECK (platform_dispensary_id IS NULL OR platform IS NOT NULL);

-- The stores there before the crawler were first seen when they were created.
UPDATE dispensaries d SET first_seen_at = d.created_at;

COMMENT ON COLUMN dispensaries.platform_dispensary_id IS
    'The store''s id on its platform; NULL for a store added by hand. Unique per platform.';
COMMENT ON COLUMN dispensaries.menu_url IS 'Where the platform serves the store''s menu; one store per URL.';
COMMENT ON COLUMN dispensaries.first_seen_at IS 'When store discovery (or a person) first added the store.';
COMMENT ON COLUMN dispensaries.last_crawled_at IS
    'fetched_at of the newest menu payload recorded for the store (record_crawl_payload); NULL: never crawled.';
COMMENT ON CONSTRAINT dispensaries_one_per_platform_id ON dispensaries IS
    'Rule: one store per platform id; the ON CONFLICT key of upsert_discovered_stores.';
COMMENT ON CONSTRAINT dispensaries_one_per_menu_url ON dispensaries IS
    'Rule: two stores never share a menu: the second is the first under another id.';

COMMIT;
