-- Revert taskpool:v_worker_capacity from pg

BEGIN;

DROP VIEW v_worker_capacity;

COMMIT;
