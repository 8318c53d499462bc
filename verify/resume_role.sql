-- Verify taskpool:resume_role on pg

BEGIN;

SELECT has_function_privilege('resume_role(text)', 'execute');
SELECT 1/(NOT has_function_privilege('taskpool_worker', 'resume_role(text)', 'execute'))::integer;

ROLLBACK;
