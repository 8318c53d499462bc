-- Verify taskpool:generate_resync_plan on pg

BEGIN;

SELECT has_function_privilege('generate_resync_plan(integer, date, text, integer)', 'execute');
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'generate_resync_plan'
  AND pg_get_function_arguments(oid) LIKE '%OUT created integer, OUT already_planned integer, OUT resync_under_way integer';

ROLLBACK;
