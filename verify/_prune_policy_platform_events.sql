-- Verify taskpool:_prune_policy_platform_events on pg

BEGIN;

SELECT '_prune_policy_platform_events(retention_policies, integer, boolean)'::regprocedure;
SELECT 1 / count(*) FROM retention_policies WHERE name = 'platform_events';

ROLLBACK;
