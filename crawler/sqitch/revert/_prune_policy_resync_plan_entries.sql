-- Revert taskpool_crawler:_prune_policy_resync_plan_entries from pg

BEGIN;

DELETE FROM retention_policies WHERE name = 'resync_plan_entries';
DROP FUNCTION _prune_policy_resync_plan_entries(retention_policies, integer, boolean);

COMMIT;
