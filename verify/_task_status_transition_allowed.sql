-- Verify taskpool:_task_status_transition_allowed on pg

BEGIN;

SELECT '_task_status_transition_allowed(text,text)'::regprocedure;

ROLLBACK;
