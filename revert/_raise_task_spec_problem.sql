-- Revert taskpool:_raise_task_spec_problem from pg

BEGIN;

DROP FUNCTION _raise_task_spec_problem(text, jsonb, text, bigint, integer);

COMMIT;
