-- Verify taskpool:tick_schedules on pg

BEGIN;

SELECT has_function_privilege('tick_schedules()', 'execute');

SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'tick_schedules' AND pg_get_functiondef(oid) LIKE '%schedule_ticks%';

ROLLBACK;
