-- Verify taskpool:taskpool_health_unserved_roles on pg

BEGIN;

SELECT 1 / count(*)::integer FROM taskpool_health() WHERE check_name = 'unserved_roles';

ROLLBACK;
