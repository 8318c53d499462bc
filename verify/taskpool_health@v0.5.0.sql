-- Verify taskpool:taskpool_health on pg

BEGIN;

SELECT check_name, status, detail, action FROM taskpool_health() WHERE FALSE;

ROLLBACK;
