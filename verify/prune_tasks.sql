-- Verify taskpool:prune_tasks on pg

BEGIN;

SELECT has_function_privilege('prune_tasks(interval, integer)', 'execute');
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'prune_tasks' AND pg_get_functiondef(oid) LIKE '%_prune_cutoff(prune_tasks.older_than)%';

SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'prune_tasks' AND pg_get_functiondef(oid) LIKE '%_prune_finished_tasks(%';

ROLLBACK;
