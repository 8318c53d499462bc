-- Verify taskpool:enqueue_task on pg

BEGIN;

SELECT has_function_privilege('enqueue_task(text, jsonb, integer, integer, timestamptz, text, integer, text)', 'execute');
-- The lean single-task path: PL/pgSQL (its plans kept), its own INSERT, _enqueue_specs for the rest.
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid = p.prolang
WHERE p.oid = 'enqueue_task(text, jsonb, integer, integer, timestamptz, text, integer, text)'::regprocedure
  AND l.lanname = 'plpgsql'
  AND pg_get_functiondef(p.oid) LIKE '%INSERT INTO worker_tasks%'
  AND pg_get_functiondef(p.oid) LIKE '%_enqueue_specs(%';

ROLLBACK;
