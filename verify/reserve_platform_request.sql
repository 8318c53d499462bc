-- Verify taskpool:reserve_platform_request on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'reserve_platform_request(text)', 'EXECUTE');

ROLLBACK;
