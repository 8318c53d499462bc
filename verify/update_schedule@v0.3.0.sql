-- Verify taskpool:update_schedule on pg

BEGIN;

SELECT has_function_privilege('update_schedule(text, boolean, integer, integer)', 'execute');

ROLLBACK;
