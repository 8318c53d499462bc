-- Revert taskpool:_lock_platform from pg

BEGIN;

DROP FUNCTION _lock_platform(text);

COMMIT;
