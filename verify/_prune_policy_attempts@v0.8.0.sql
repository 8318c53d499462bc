-- Verify taskpool:_prune_policy_attempts on pg

BEGIN;

SELECT '_prune_policy_attempts(retention_policies,integer,boolean)'::regprocedure;

ROLLBACK;
