-- Verify taskpool:worker_capacity on pg

BEGIN;

SELECT 1 / (pg_get_functiondef('worker_capacity(text)'::regprocedure) LIKE '%slots_needed%')::integer;

ROLLBACK;
