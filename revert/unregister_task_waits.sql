-- Revert taskpool:unregister_task_waits from pg

-- Nothing to undo: deploy/unregister_task_waits.sql redefined unregister_task_waits as register_task_waits had left it.

BEGIN;
COMMIT;
