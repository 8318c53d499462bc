-- Verify taskpool:_prune_policy_workers on pg

BEGIN;

SELECT '_prune_policy_workers(retention_policies,integer,boolean)'::regprocedure;

ROLLBACK;
