-- Verify taskpool:snooze_task on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'snooze_task(bigint, text, integer, timestamptz)', 'execute');

ROLLBACK;
