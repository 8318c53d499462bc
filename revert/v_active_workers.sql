-- Revert taskpool:v_active_workers from pg

BEGIN;

DROP VIEW v_active_workers;

COMMIT;
