-- Verify taskpool:acquire_platform_request on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'acquire_platform_request(text)', 'execute');

ROLLBACK;
