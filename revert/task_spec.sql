-- Revert taskpool:task_spec from pg

BEGIN;

DROP TYPE task_spec;

COMMIT;
