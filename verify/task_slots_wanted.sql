-- Verify taskpool:task_slots_wanted on pg

BEGIN;

SELECT 1 / (has_function_privilege('taskpool_worker', 'task_slots_wanted(text, numeric)', 'EXECUTE'))::integer;
SELECT task_slots_wanted(r.role) FROM task_roles r LIMIT 1;

ROLLBACK;
