-- Verify taskpool:tick_schedules on pg

BEGIN;

SELECT has_function_privilege('tick_schedules()', 'execute');

SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'tick_schedules' AND pg_get_functiondef(oid) LIKE '%schedule_ticks%';
SELECT 1 / count(*) FROM pg_proc WHERE proname = 'tick_schedules' AND prosrc LIKE '%v_retry_at%';

SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'tick_schedules' AND pg_get_functiondef(oid) LIKE '%_fold_task_metric_totals()%';

SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'tick_schedules' AND pg_get_functiondef(oid) LIKE '%apply_retention(1)%';

ROLLBACK;
