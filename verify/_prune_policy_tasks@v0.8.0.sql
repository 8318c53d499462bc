-- Verify taskpool:_prune_policy_tasks on pg

BEGIN;

SELECT '_prune_policy_tasks(retention_policies,integer,boolean)'::regprocedure;

ROLLBACK;
