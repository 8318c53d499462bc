-- Revert taskpool:_lock_schedule from pg

BEGIN;

DROP FUNCTION _lock_schedule(text);

COMMIT;
