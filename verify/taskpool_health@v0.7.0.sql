-- Verify taskpool:taskpool_health on pg

BEGIN;

SELECT check_name, status, detail, action FROM taskpool_health() WHERE FALSE;
SELECT 1/COUNT(*) FROM pg_catalog.pg_proc
WHERE proname = 'taskpool_health' AND pg_get_functiondef(oid) LIKE '%''paused_roles''%'
  AND pg_get_functiondef(oid) LIKE '%''disabled_platforms''%';

ROLLBACK;
