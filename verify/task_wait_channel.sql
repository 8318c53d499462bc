-- Verify taskpool:task_wait_channel on pg

BEGIN;

SELECT 1/(task_wait_channel(42) = 'taskpool_task_done_42')::int;

ROLLBACK;
