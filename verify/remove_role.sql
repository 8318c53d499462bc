-- Verify taskpool:remove_role on pg

BEGIN;

SELECT 1/has_function_privilege('remove_role(text, boolean)', 'execute')::int;
-- an operator's function: not the workers'
SELECT 1/(NOT has_function_privilege('taskpool_worker', 'remove_role(text, boolean)', 'execute'))::int;

ROLLBACK;
