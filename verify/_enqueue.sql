-- Verify taskpool:_enqueue on pg

BEGIN;

SELECT '_enqueue(task_spec[],text,bigint,jsonb)'::regprocedure;

ROLLBACK;
