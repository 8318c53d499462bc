-- Verify taskpool:update_schedule on pg

BEGIN;

SELECT has_function_privilege('update_schedule(text, boolean, integer, integer, jsonb, text, text, text, interval, text, text, integer, timestamptz)', 'execute');

SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'update_schedule' AND pg_get_functiondef(oid) LIKE '%_schedule_next_run_at(%';

SELECT 1 / count(*) FROM pg_proc WHERE proname = 'update_schedule' AND prosrc LIKE '%day_plan%';

ROLLBACK;
