-- Revert taskpool:v_platforms from pg

BEGIN;

DROP VIEW v_platforms;

COMMIT;
