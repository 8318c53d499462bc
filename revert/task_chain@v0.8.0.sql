-- Revert taskpool:task_chain from pg

BEGIN;

DROP FUNCTION task_chain(bigint);

COMMIT;
