-- Verify taskpool:v_worker_capacity on pg

BEGIN;

SELECT * FROM v_worker_capacity WHERE FALSE;

ROLLBACK;
