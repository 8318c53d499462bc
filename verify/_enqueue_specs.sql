-- Verify taskpool:_enqueue_specs on pg

BEGIN;

SELECT 1 / count(*) FROM pg_catalog.pg_proc
WHERE oid = '_enqueue_specs(jsonb,text,bigint)'::regprocedure AND prosrc LIKE '%RETURN QUERY SELECT * FROM unnest(_enqueue(%';

ROLLBACK;
