-- Verify taskpool:_count_prunable_finished_tasks on pg

BEGIN;

SELECT '_count_prunable_finished_tasks(text[], timestamptz)'::regprocedure;

ROLLBACK;
