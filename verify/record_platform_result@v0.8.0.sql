-- Verify taskpool:record_platform_result on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'record_platform_result(text, boolean, text)', 'execute');

ROLLBACK;
