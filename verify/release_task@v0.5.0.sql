-- Verify taskpool:release_task on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'release_task(bigint, text, integer)', 'execute');

ROLLBACK;
