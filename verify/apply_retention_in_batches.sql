-- Verify taskpool:apply_retention_in_batches on pg

BEGIN;

SELECT 'apply_retention_in_batches(integer,numeric,numeric,jsonb)'::regprocedure;

ROLLBACK;
