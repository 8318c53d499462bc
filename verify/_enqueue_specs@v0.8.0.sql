-- Verify taskpool:_enqueue_specs on pg

BEGIN;

SELECT '_enqueue_specs(jsonb,text,bigint)'::regprocedure;

ROLLBACK;
