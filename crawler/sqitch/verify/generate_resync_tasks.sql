-- Verify taskpool:generate_resync_tasks on pg

BEGIN;

SELECT has_function_privilege('generate_resync_tasks(integer, date, text, integer)', 'execute');

SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'generate_resync_tasks' AND pg_get_functiondef(oid) LIKE '%FROM generate_resync_plan(%';

ROLLBACK;
