-- Revert taskpool:_check_task_filter from pg

-- Nothing to undo: deploy/_check_task_filter.sql redefined _check_task_filter as tasks_matching had left it.

BEGIN;
COMMIT;
