-- Verify taskpool:_task_history_cutoff on pg

BEGIN;

SELECT '_task_history_cutoff(timestamptz)'::regprocedure;

ROLLBACK;
