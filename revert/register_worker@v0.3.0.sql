-- Revert taskpool:register_worker from pg

BEGIN;

DROP FUNCTION register_worker(text, text, text, integer);

COMMIT;
