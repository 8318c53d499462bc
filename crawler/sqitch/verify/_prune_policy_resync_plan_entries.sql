-- Verify taskpool_crawler:_prune_policy_resync_plan_entries on pg

BEGIN;

SELECT '_prune_policy_resync_plan_entries(retention_policies, integer, boolean)'::regprocedure;
SELECT 1 / count(*) FROM retention_policies WHERE name = 'resync_plan_entries';

ROLLBACK;
