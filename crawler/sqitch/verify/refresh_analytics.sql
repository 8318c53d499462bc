-- Verify taskpool:refresh_analytics on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'refresh_analytics()', 'execute');

ROLLBACK;
