-- Revert taskpool:heartbeat_worker from pg

BEGIN;

DROP FUNCTION heartbeat_worker(text);

COMMIT;
