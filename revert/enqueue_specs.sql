-- Revert taskpool:enqueue_specs from pg

BEGIN;

DROP FUNCTION enqueue_specs(task_spec[]);

COMMIT;
