-- Revert taskpool:mark_worker_waiting from pg

BEGIN;

DROP FUNCTION mark_worker_waiting(text);

COMMIT;
