-- Verify taskpool:trigger_schedule on pg

BEGIN;

SELECT has_function_privilege('trigger_schedule(text)', 'execute');

ROLLBACK;
