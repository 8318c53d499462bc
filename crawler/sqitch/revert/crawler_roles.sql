-- Revert taskpool_crawler:crawler_roles from pg
-- A role with tasks cannot go (worker_tasks references it): revert the crawler's tasks first.

BEGIN;

DELETE FROM task_role_chains
WHERE (from_role, to_role) IN (('store_discovery', 'product_discovery'),
                               ('product_discovery', 'product_refresh'),
                               ('product_resync', 'product_refresh'));
DELETE FROM task_roles
WHERE role IN ('store_discovery', 'entry_point_discovery', 'product_discovery',
               'product_resync', 'product_refresh', 'analytics_refresh');

COMMIT;
