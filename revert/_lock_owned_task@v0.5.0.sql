-- Revert taskpool:_lock_owned_task from pg

BEGIN;

DROP FUNCTION _lock_owned_task(bigint, text, integer);

COMMIT;
