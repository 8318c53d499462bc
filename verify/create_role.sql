-- Verify taskpool:create_role on pg

BEGIN;

SELECT 1/has_function_privilege('create_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean)', 'execute')::int;
-- an operator's function: not the workers'
SELECT 1/(NOT has_function_privilege('taskpool_worker', 'create_role(text, text, integer, interval, interval, interval, interval, numeric, text, integer, boolean)', 'execute'))::int;

ROLLBACK;
