-- Deploy taskpool_crawler:crawler_roles to pg
-- requires: taskpool:task_roles
-- requires: taskpool:task_role_chains
-- requires: taskpool:task_roles_stale_threshold_at_most_a_year

BEGIN;
SET client_min_messages = 'warning';

-- The crawler's roles and its chains: rows in the core's tables, which the core's task_roles and
-- task_role_chains changes seeded before the crawler had a project of its own (its default
-- schedules are crawler_schedules'). A database deployed with the combined plan has them already
-- and keeps them as they are (an operator may have changed a role's settings since): ON CONFLICT
-- DO NOTHING, so a fresh deploy and an upgraded one end with the same rows.
INSERT INTO task_roles (role, description, requires_store, stale_threshold, backoff_base, backoff_cap) VALUES
    ('store_discovery',       'Find stores on a platform and upsert dispensaries',     false, '30 minutes', '1 minute',   '1 hour'),
    ('entry_point_discovery', 'Resolve the platform id of a store known by its URL',    true,  '10 minutes', '30 seconds', '1 hour'),
    ('product_discovery',     'First crawl of a newly found store',                     true,  '10 minutes', '30 seconds', '1 hour'),
    ('product_resync',        'Fetch a store''s menu and save the raw payload',         true,  '10 minutes', '30 seconds', '1 hour'),
    ('product_refresh',       'Load a saved payload and upsert the store''s products',  true,  '10 minutes', '30 seconds', '30 minutes'),
    ('analytics_refresh',     'Refresh the analytics materialized views',               false, '30 minutes', '1 minute',   '1 hour')
ON CONFLICT (role) DO NOTHING;

INSERT INTO task_role_chains (from_role, to_role, result_key, per_store_ids) VALUES
    ('store_discovery',   'product_discovery', 'newStoreIds', true),
    ('product_discovery', 'product_refresh',   'payload_id',  false),
    ('product_resync',    'product_refresh',   'payload_id',  false)
ON CONFLICT (from_role, to_role) DO NOTHING;

COMMIT;
