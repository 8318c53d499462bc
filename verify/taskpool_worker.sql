-- Verify taskpool:taskpool_worker on pg

BEGIN;

SELECT 1/COUNT(*) FROM pg_catalog.pg_roles WHERE rolname = 'taskpool_worker' AND NOT rolcanlogin;

ROLLBACK;
