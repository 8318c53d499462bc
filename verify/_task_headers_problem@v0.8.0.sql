-- Verify taskpool:_task_headers_problem on pg

BEGIN;

SELECT '_task_headers_problem(jsonb)'::regprocedure;

ROLLBACK;
