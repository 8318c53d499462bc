-- Verify taskpool:delete_schedule on pg

BEGIN;

SELECT has_function_privilege('delete_schedule(text)', 'execute');

ROLLBACK;
