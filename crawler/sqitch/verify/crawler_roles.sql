-- Verify taskpool_crawler:crawler_roles on pg

BEGIN;

SELECT 1 / (count(*) = 6)::int FROM task_roles
WHERE role IN ('store_discovery', 'entry_point_discovery', 'product_discovery',
               'product_resync', 'product_refresh', 'analytics_refresh');
SELECT 1 / (count(*) = 3)::int FROM task_role_chains
WHERE (from_role, to_role) IN (('store_discovery', 'product_discovery'),
                               ('product_discovery', 'product_refresh'),
                               ('product_resync', 'product_refresh'));

ROLLBACK;
