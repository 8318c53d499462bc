-- Revert taskpool:v_stores from pg

BEGIN;

DROP VIEW v_stores;

COMMIT;
