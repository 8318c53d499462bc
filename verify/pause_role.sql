-- Verify taskpool:pause_role on pg

BEGIN;

SELECT has_function_privilege('pause_role(text, text)', 'execute');
-- an operator's function: not the workers'
SELECT 1/(NOT has_function_privilege('taskpool_worker', 'pause_role(text, text)', 'execute'))::integer;

ROLLBACK;
