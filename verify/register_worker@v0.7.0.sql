-- Verify taskpool:register_worker on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'register_worker(text, text, text, integer)', 'execute');
SELECT has_function_privilege('taskpool_worker', 'register_worker(text, text[], text, integer)', 'execute');

ROLLBACK;
