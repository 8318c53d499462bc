-- Verify taskpool:_retention_pruner on pg

BEGIN;

SELECT '_retention_pruner(retention_policies)'::regprocedure;

ROLLBACK;
