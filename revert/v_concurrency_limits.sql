-- Revert taskpool:v_concurrency_limits from pg

BEGIN;

DROP VIEW v_concurrency_limits;

COMMIT;
