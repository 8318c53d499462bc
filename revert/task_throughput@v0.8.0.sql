-- Revert taskpool:task_throughput from pg

BEGIN;

DROP FUNCTION task_throughput(integer);

COMMIT;
