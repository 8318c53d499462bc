-- Verify taskpool:generate_resync_tasks on pg

BEGIN;

SELECT has_function_privilege('generate_resync_tasks(integer, date, text, integer)', 'execute');

ROLLBACK;
