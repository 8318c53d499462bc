-- Verify taskpool:update_role on pg

BEGIN;

SELECT 1/has_function_privilege('update_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean)', 'execute')::int;
-- an operator's function: not the workers'
SELECT 1/(NOT has_function_privilege('taskpool_worker', 'update_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean)', 'execute'))::int;

ROLLBACK;
