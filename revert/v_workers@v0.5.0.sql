-- Revert taskpool:v_workers from pg

BEGIN;

DROP VIEW v_workers;

COMMIT;
