-- Revert taskpool:v_xmin_horizon from pg

BEGIN;

DROP VIEW v_xmin_horizon;

COMMIT;
