-- Verify taskpool:fail_task on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'fail_task(bigint, text, integer, text, boolean, timestamptz)', 'execute');

ROLLBACK;
