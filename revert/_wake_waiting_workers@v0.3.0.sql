-- Revert taskpool:_wake_waiting_workers from pg

BEGIN;

DROP FUNCTION _wake_waiting_workers(text, bigint);

COMMIT;
