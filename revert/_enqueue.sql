-- Revert taskpool:_enqueue from pg

BEGIN;

DROP FUNCTION _enqueue(task_spec[], text, bigint, jsonb);

COMMIT;
