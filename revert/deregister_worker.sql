-- Revert taskpool:deregister_worker from pg

BEGIN;

DROP FUNCTION deregister_worker(text);

COMMIT;
