-- Revert taskpool:register_worker_concurrency from pg

BEGIN;
SET client_min_messages = 'warning';

DROP FUNCTION register_worker(text, text[], text, integer, integer);

COMMIT;
