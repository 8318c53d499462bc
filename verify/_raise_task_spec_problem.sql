-- Verify taskpool:_raise_task_spec_problem on pg

BEGIN;

SELECT '_raise_task_spec_problem(text,jsonb,text,bigint,integer)'::regprocedure;

ROLLBACK;
