-- Verify taskpool:set_taskpool_clock_offset on pg

BEGIN;

SELECT has_function_privilege('set_taskpool_clock_offset(interval)', 'execute');
SELECT 1/(NOT has_function_privilege('taskpool_worker', 'set_taskpool_clock_offset(interval)', 'execute'))::integer;

ROLLBACK;
