-- Revert taskpool:_prune_policy_platform_events from pg

BEGIN;

DELETE FROM retention_policies WHERE name = 'platform_events';
DROP INDEX platform_events_at_idx;
DROP FUNCTION _prune_policy_platform_events(retention_policies, integer, boolean);

COMMIT;
