-- Revert taskpool:task_wait_channel from pg

BEGIN;

DROP FUNCTION task_wait_channel(integer);

COMMIT;
