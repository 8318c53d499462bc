-- Verify taskpool:tick_schedules on pg

BEGIN;

SELECT has_function_privilege('tick_schedules()', 'execute');

ROLLBACK;
