-- Revert taskpool:worker_capacity from pg

BEGIN;

DROP FUNCTION worker_capacity(text);

COMMIT;
