-- Revert taskpool:_task_status_transition_allowed from pg

-- Nothing to undo: deploy/_task_status_transition_allowed.sql redefined _task_status_transition_allowed as task_status_transition_allowed had left it.

BEGIN;
COMMIT;
