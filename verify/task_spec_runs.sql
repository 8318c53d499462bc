-- Verify taskpool:task_spec_runs on pg

BEGIN;

SELECT 'task_spec_runs(text, integer, jsonb, integer)'::regprocedure;

ROLLBACK;
