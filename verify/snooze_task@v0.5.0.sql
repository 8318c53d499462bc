-- Verify taskpool:snooze_task on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'snooze_task(bigint, text, integer, timestamptz)', 'execute');
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'snooze_task' AND pg_get_functiondef(oid) LIKE '%isfinite(snooze_task.until)%';

ROLLBACK;
