-- Revert taskpool:worker_registration from pg

BEGIN;

DROP TYPE worker_registration;

COMMIT;
