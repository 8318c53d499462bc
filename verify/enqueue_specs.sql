-- Verify taskpool:enqueue_specs on pg

BEGIN;

SELECT 'enqueue_specs(task_spec[])'::regprocedure;

ROLLBACK;
